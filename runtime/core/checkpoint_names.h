// The names of a checkpoint on disk: DIR/round-NNNNNN/{rank-NNNNN.pt..., global.pt, manifest.json}
// (and receipt-NNNNN.json of a background save),
// and the notes beside the rounds in DIR.
// CheckpointStore writes them, ppu-export reads them, the CRD's rule on spec.export.path keeps a
// model out of the round directories, and Python reads them from the contract that ppu-contract
// renders from them (python/ppu/files.py).
#pragma once

#include <cstdint>
#include <string>

namespace ppu::checkpoint_file {
inline constexpr const char* kManifest = "manifest.json";
inline constexpr const char* kGlobal = "global.pt";
inline constexpr const char* kRoundPrefix = "round-";
inline constexpr const char* kRoundDirFormat = "round-%06lld";  // printf, of the round
inline constexpr const char* kRankPartFormat = "rank-%05d.pt";  // printf, of the job rank
// What a member of a background save wrote, or why it could not (engine/state/round_manifest.h).
inline constexpr const char* kReceiptFormat = "receipt-%05d.json";  // printf, of the member's job rank
// Why live recovery last fell back to a gang restart (JSON {reason, round, step}).
inline constexpr const char* kFallbackNote = "live-fallback.json";
// The round whose checkpoint the job saved when it stopped on a notice (JSON {round, step, ranks}).
inline constexpr const char* kNoticeNote = "notice.json";
// The job's history (core/interruptions.h's JobHistory): the last round boundary a run of it
// passed, its rounds lost so far and its last stops; rewritten at every round boundary.
inline constexpr const char* kReachedNote = "reached.json";
std::string rank_part(int job_rank);   // "rank-00003.pt"
std::string receipt(int job_rank);     // "receipt-00003.json"
std::string round_dir(int64_t round);  // "round-000012"
}  // namespace ppu::checkpoint_file
