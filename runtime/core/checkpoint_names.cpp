#include "core/checkpoint_names.h"

#include <cstdio>

namespace ppu::checkpoint_file {

std::string rank_part(int job_rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, kRankPartFormat, job_rank);
  return buf;
}

std::string receipt(int job_rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, kReceiptFormat, job_rank);
  return buf;
}

std::string round_dir(int64_t round) {
  char buf[32];
  std::snprintf(buf, sizeof buf, kRoundDirFormat, static_cast<long long>(round));
  return buf;
}

}  // namespace ppu::checkpoint_file
