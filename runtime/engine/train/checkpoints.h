// RunCheckpoints: a run's checkpoints, written at round boundaries and resumed from at start
// (state/checkpoint_format.h names every key; docs/RECOVERY.md the degraded case). Contracts:
//  - save() writes round progress.rounds, collectively (every member at the same round), inline
//    or handed to the background upload (checkpoint.upload: engine/state/checkpoint_uploader.h,
//    which commits it later and says so through collect_uploads): each
//    member its own part (weights, inner state, error-feedback residuals, the run's position
//    and totals) and, for each job rank missing from the group, the member standing in for it
//    (core/coowners.h) that rank's part; θ and the outer momentum once. It then is
//    progress.last_checkpoint_round. A round that cannot be written (a full disk) is logged and
//    counted (summary recovery.checkpoints_failed) and training goes on; a write that outlasts
//    checkpoint.write_timeout_s is a fault like a hung thread (the rank is fenced and replaced).
//  - resume() loads the newest checkpoint valid on every rank, if any, into the parts and the
//    progress (CheckpointError when it cannot be loaded), names in summary.fallback a live
//    recovery fallback noted (kFallbackNote) at or after its round, and records what the stop
//    before this run cost (summary recovery.interruptions and rounds_lost, from kReachedNote).
//  - The digests both log (outer, inner) let a test compare what a restart resumes with what
//    the live job held.
// It reads and changes the run's parts, given by reference: they outlive it. It owns the
// checkpoint directory's CheckpointStore.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/interruptions.h"
#include "core/run_summary.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "data/data_loader.h"
#include "engine/comm/collectives.h"
#include "engine/model/transformer.h"
#include "engine/obs/rank_metrics.h"
#include "engine/optim/inner_optimizer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/state/checkpoint_store.h"
#include "engine/train/progress.h"
#include "engine/train/run_parts.h"

namespace ppu {

class RunCheckpoints {
 public:
  // Checkpoints in `dir`, keeping checkpoint.keep of them.
  RunCheckpoints(const Config& c, const std::string& dir, Collectives& collectives, const SlicePlan& plan,
                 const StreamingSchedule& schedule, Transformer& model, RunParts run);
  RunCheckpoints(const RunCheckpoints&) = delete;
  RunCheckpoints& operator=(const RunCheckpoints&) = delete;

  // `must`: the last round, or the job stops on a notice: a background save waits for room
  // rather than skip the round. `room`: whether every member has room for a background upload,
  // as the members agreed at this boundary (BoundaryVote; nullopt: they agree now, one
  // all-reduce). A member's room only grows between that vote and the save.
  void save(bool must = false, std::optional<bool> room = std::nullopt);
  bool upload_full() const;  // this rank's background upload has checkpoint.max_in_flight rounds
  void resume();
  // checkpoint.upload background (store().background()): collect_uploads() at every round
  // boundary takes in what the upload thread finished (a committed round becomes
  // progress.last_checkpoint_round; one given up counts in recovery.checkpoints_failed);
  // finish() waits for the rounds still being written (checkpoint.write_timeout_s at most) and
  // collects them: at the end of training and before the job stops on a notice. Inline: no-ops.
  void collect_uploads();
  void finish();
  CheckpointWriteSummary summary() const;  // the summary's checkpoint_writes
  // The job stops on a notice of `ranks` after this round's checkpoint: the group's rank 0 notes
  // it (kNoticeNote) for the run that resumes from it (summary recovery.resumed_after_notice).
  void note_stopped_on_notice(const std::vector<int>& ranks) const;
  // At every round boundary: the job has reached progress.rounds (the reached note, kReachedNote,
  // from which the run that resumes after a stop learns what the stop cost; core/interruptions.h).
  void note_reached();
  // Runs at the start of each save's writes (test faults: a write that stalls).
  void set_before_write(std::function<void()> hook) { before_write_ = std::move(hook); }

  const CheckpointStore& store() const { return store_; }

 private:
  void write_round(bool must, std::optional<bool> room);
  ArchiveWriter stand_in_part(int missing, TensorCopy copy);
  void note_fallback(int64_t resumed_round);
  void note_notice(int64_t resumed_round);
  void note_stop(int64_t resumed_round);
  std::optional<JobHistory> read_history() const;
  void publish_history() const;
  void load_from(LoadedCheckpoint& ckpt);
  // A rank's part: its model, then its inner and feedback sections nested, then its progress.
  static ArchiveWriter rank_part(ArchiveWriter model, ArchiveWriter inner, ArchiveWriter feedback,
                                 ArchiveWriter progress);
  // Step, rounds, `loader_position` and the totals as they are now.
  ArchiveWriter progress_writer(int64_t loader_position);
  void load_progress(torch::serialize::InputArchive& a);
  std::vector<std::pair<std::string, double*>> totals();
  uint64_t outer_digest() const;

  const Config& config_;
  Collectives& collectives_;
  const SlicePlan& plan_;
  const StreamingSchedule& schedule_;
  Transformer& model_;
  RunParts run_;
  CheckpointStore store_;
  const std::string config_yaml_;  // written into each manifest: made once (0.6 ms a round at tiny)
  std::function<void()> before_write_;
  std::optional<JobHistory> history_;  // read at resume, or at the first note_reached of a replacement
  bool reached_note_failing_ = false;  // the last note_reached could not write the note (said once)
  CheckpointWriteSummary summary_;     // skipped rounds and the training thread's seconds
};

}  // namespace ppu
