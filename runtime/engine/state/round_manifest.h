// A checkpoint round's commit record and its bookkeeping, shared by the inline save
// (CheckpointStore::save) and the background one (CheckpointUploader):
//  - round_manifest(): manifest.json's text, written last: no manifest, no checkpoint. It lists
//    global.pt and every job rank's part with its size and FNV-1a 64 checksum, and under
//    "stand_ins" each part a member wrote for a missing rank (job rank -> that member). Throws
//    std::logic_error unless the parts cover every job rank exactly once.
//  - Receipt: what one member of a background save wrote (its parts' sizes and checksums) or why
//    it could not, as JSON beside the round's parts (checkpoint_file::receipt); the
//    group's rank 0 commits the round from the receipts.
//  - prune_rounds(): retention after a commit: keeps the newest `keep` committed rounds at or
//    below `committed`, removes every other round at or below it (older checkpoints and saves
//    that never finished); rounds above it may still be being written and stay.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/state/checkpoint_location.h"

namespace ppu {

struct PartRecord {
  int64_t bytes = 0;
  uint64_t checksum = 0;  // FNV-1a 64
  int writer = 0;         // the job rank of the member that wrote it

  static PartRecord of(const std::string& content, int writer);
};

std::string round_manifest(int64_t round, int world_size, const std::string& config_yaml, const PartRecord& global,
                           const std::map<int, PartRecord>& parts_by_job_rank);

struct Receipt {
  int writer = 0;
  std::map<int, PartRecord> parts;  // by job rank
  std::string failed;               // empty when every part was written

  std::string text() const;
  static Receipt parse(const std::string& text);  // throws std::runtime_error on a malformed one
};

void prune_rounds(CheckpointLocation& at, int keep, int64_t committed);

}  // namespace ppu
