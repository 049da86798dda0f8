// CheckpointStore: crash-safe checkpoints at outer-round boundaries in a directory or an S3
// prefix shared by all ranks (checkpoint_location.h):
// DIR/round-000012/{rank-00000.pt, ..., global.pt, manifest.json}.
//  - every file is written atomically (a directory: temp file, fsync, rename, directory fsync;
//    S3: one PUT whose body the service checks);
//  - files are named by job rank; a live group missing ranks (network.recovery live) still
//    writes one file per job rank: a member stands in for each missing rank and writes its part
//    (the manifest lists them under "stand_ins": job rank -> the member that wrote it);
//  - the group's rank 0 writes global.pt and, once an all-gather has proved every part on disk,
//    manifest.json with each file's size and FNV-1a 64 checksum: no manifest, no checkpoint;
//  - the newest `keep` checkpoints are kept (round_manifest.h's prune_rounds);
//  - with checkpoint.upload background a thread of each rank writes its parts while training
//    goes on, and the group's rank 0 commits each round from the members' receipts
//    (checkpoint_uploader.h);
//  - loading walks checkpoints newest first; a rank accepts one only if the manifest parses,
//    the world size matches and its own file and global.pt match their checksums; ranks agree
//    through an all-reduce, so all of them resume from the same one. Each rejected checkpoint
//    is skipped with a warning that names it and says why; a round without a manifest is a save
//    that never finished and is ignored. When checkpoints exist and every one is rejected, the
//    run stops (CheckpointError naming each and why: exit 4) unless the caller asked to start
//    over; it never silently trains from step 0 over them. An intact checkpoint of another
//    format (engine/state/checkpoint_format.h) throws CheckpointFormatError.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/comm/collectives.h"
#include "engine/state/checkpoint_format.h"
#include "engine/state/checkpoint_location.h"
#include "engine/state/checkpoint_uploader.h"

namespace ppu {

struct LoadedCheckpoint {
  // Move-only, declared so: InputArchive's copy constructor takes a non-const reference, which
  // std::optional's defaulted copy cannot match under clang.
  LoadedCheckpoint() = default;
  LoadedCheckpoint(const LoadedCheckpoint&) = delete;
  LoadedCheckpoint& operator=(const LoadedCheckpoint&) = delete;
  LoadedCheckpoint(LoadedCheckpoint&&) = default;
  LoadedCheckpoint& operator=(LoadedCheckpoint&&) = default;
  ~LoadedCheckpoint() = default;

  int64_t round = 0;
  std::string path;
  torch::serialize::InputArchive rank_part;
  torch::serialize::InputArchive global_part;
};

// Offline reading, no collectives (ppu-export): the newest checkpoint under `dir` (or round
// `round` when >= 0) whose manifest parses and whose file `name` (e.g. "global.pt",
// "rank-00000.pt") matches the manifest's size and checksum. Throws NoValidCheckpoint naming
// the directory and every rejected round with its reason when there is none (NoValidCheckpoint).
struct NoValidCheckpoint : CheckpointError {
  using CheckpointError::CheckpointError;
};
struct VerifiedCheckpointFile {
  int64_t round = 0;
  std::string path;         // the round directory
  std::string config_yaml;  // the run's config, from the manifest
  int world_size = 0;
  std::string bytes;  // the file's content
};
VerifiedCheckpointFile read_verified_checkpoint_file(const std::string& dir, const std::string& name,
                                                     int64_t round = -1, const S3Service& service = {});

// The notes beside the rounds (core/checkpoint_names.h): what happened to the job, for the run
// that resumes.
using checkpoint_file::kFallbackNote;
using checkpoint_file::kNoticeNote;
using checkpoint_file::kReachedNote;

class CheckpointStore {
 public:
  // `where`: a directory or an s3:// location (engine/state/checkpoint_location.h), checked
  // before the run by check_runnable (CheckpointLocation::checked); opening an s3:// one reads
  // its credentials (ConfigError when they are missing). `config`: keep, upload, max_in_flight,
  // write_timeout_s, notice_s and the s3_* keys.
  CheckpointStore(const std::string& where, const CheckpointConfig& config, Collectives& collectives);
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  // A part: its writer, holding its tensors as `copy` says. save() asks for Shared and runs it at
  // once; save_in_background() asks for Cloned on the calling thread and runs it on the upload
  // thread, which builds the archive and serialises it.
  using Writer = std::function<ArchiveWriter(TensorCopy copy)>;
  // The part of a job rank missing from the group, written by the member standing in for it.
  struct StandIn {
    int job_rank;
    Writer part;
  };
  // Collective: every member of the group calls it at the same round, with its own part and
  // those it stands in for; between them the members must cover every job rank exactly once
  // (std::logic_error on the group's rank 0 otherwise, before the manifest: no checkpoint).
  // Whether the round was written: a write that fails on any member (a full disk, a read-only
  // or vanished mount: std::runtime_error) leaves no manifest, the round's directory is removed,
  // every member returns false (and logs its own error), and the older checkpoints stay.
  bool save(int64_t round, const Writer& rank_part, const std::vector<StandIn>& stand_ins, const Writer& global_part,
            const std::string& config_yaml);
  bool save(int64_t round, const Writer& rank_part, const Writer& global_part, const std::string& config_yaml) {
    return save(round, rank_part, {}, global_part, config_yaml);
  }
  // checkpoint.upload background (auto: for s3://): the rounds are written by the uploader's
  // thread (engine/state/checkpoint_uploader.h). Collective, like save(): each member's parts (on
  // the group's rank 0 global.pt too) are copied now (a snapshot, TensorCopy::Cloned) and handed
  // over, to be built, serialised and written by the upload thread; the round is a
  // checkpoint once the group's rank 0 commits it (uploader()->committed()). When any member still
  // has checkpoint.max_in_flight rounds being written, no member hands this one over (one
  // all-reduce decides, or `room`: the members' answer agreed before, with no round handed over
  // since): false; unless `wait_for_room` (the last round, a notice's): then each member first
  // waits until it has room (at most `room_bound_s`) and the all-reduce decides.
  bool background() const { return uploader_ != nullptr; }
  bool save_in_background(int64_t round, const Writer& rank_part, const std::vector<StandIn>& stand_ins,
                          const Writer& global_part, const std::string& config_yaml, bool wait_for_room = false,
                          double room_bound_s = 0, std::optional<bool> room = std::nullopt);
  // A const view of the uploader (null inline).
  const CheckpointUploader* uploader() const { return uploader_.get(); }
  CheckpointUploader* uploader() { return uploader_.get(); }
  // What this rank wrote: inline, by save(); background, by the uploader's thread.
  CheckpointUploader::Stats written() const { return uploader_ ? uploader_->stats() : written_; }

  // Collective: the newest checkpoint valid on every rank; nullopt when there is none (or every
  // one is unusable and `start_over_if_unusable`); throws CheckpointError when every one is
  // unusable and the caller did not ask to start over.
  std::optional<LoadedCheckpoint> load_latest(bool start_over_if_unusable = false);

  const std::string& dir() const { return dir_; }

  // A note beside the rounds (kFallbackNote, kNoticeNote): what happened to the job, for the run
  // that resumes. write_note: the group's rank 0 writes `text`, atomically; a failure is logged,
  // never thrown. rewrite_note: the same for a note rewritten every round, without the fsyncs
  // (Durability::Readers) and without the log, its text made only on rank 0: the reason it
  // failed, for the caller to log once; nullopt when written or not rank 0 (background: handed to
  // the upload thread, which logs its failures itself). read_note: its text, or nullopt when there
  // is none or it cannot be read (logged).
  void write_note(const char* name, const std::string& text) const;
  std::optional<std::string> rewrite_note(const char* name, const std::function<std::string()>& text) const;
  std::optional<std::string> read_note(const char* name) const;

 private:
  // The global part and the manifest; the bytes written.
  double publish(int64_t round, const std::vector<torch::Tensor>& all, const Writer& global_part,
                 const std::string& config_yaml);
  std::string round_dir(int64_t round) const;
  std::string rank_file() const;  // this process's job rank's

  std::unique_ptr<CheckpointLocation> location_;
  std::string dir_;  // location_'s text, for messages
  int keep_;
  Collectives& collectives_;
  std::unique_ptr<CheckpointUploader> uploader_;  // checkpoint.upload background
  CheckpointUploader::Stats written_;             // inline
};

}  // namespace ppu
