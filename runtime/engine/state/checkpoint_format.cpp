#include "engine/state/checkpoint_format.h"

#include <cstdio>

namespace ppu {

namespace {

torch::Tensor read_scalar(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  if (!archive.try_read(key, t) || !t.defined() || t.numel() != 1)
    throw CheckpointError("checkpoint field '" + key + "' is missing or not a scalar");
  return t;
}

}  // namespace

void require_checkpoint_format(int format, const std::string& where) {
  if (format == kCheckpointFormat) return;
  throw CheckpointFormatError(where + " is in checkpoint format " + std::to_string(format) +
                              ", this ppu-train reads format " + std::to_string(kCheckpointFormat) +
                              " only: resume it with the ppu-train that wrote it, or move it away to start afresh");
}

void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value) {
  archive.write(key, torch::tensor({value}, torch::kInt64));
}

void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, double value) {
  archive.write(key, torch::tensor({value}, torch::kFloat64));
}

int64_t read_int64(torch::serialize::InputArchive& archive, const std::string& key) {
  return read_scalar(archive, key).item<int64_t>();
}

double read_double(torch::serialize::InputArchive& archive, const std::string& key) {
  return read_scalar(archive, key).item<double>();
}

std::string checkpoint_file::rank_part(int job_rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, kRankPartFormat, job_rank);
  return buf;
}

std::string checkpoint_file::round_dir(int64_t round) {
  char buf[32];
  std::snprintf(buf, sizeof buf, kRoundDirFormat, static_cast<long long>(round));
  return buf;
}

}  // namespace ppu
