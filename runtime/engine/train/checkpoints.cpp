#include "engine/train/checkpoints.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "common/fnv1a.h"
#include "core/coowners.h"
#include "engine/comm/live_group.h"
#include "engine/model/stand_in_part.h"
#include "engine/state/checkpoint_format.h"
#include "engine/train/live_recovery.h"

namespace ppu {

RunCheckpoints::RunCheckpoints(const Config& c, const std::string& dir, Collectives& collectives, const SlicePlan& plan,
                               const StreamingSchedule& schedule, Transformer& model, RunParts run)
    : config_(c),
      collectives_(collectives),
      plan_(plan),
      schedule_(schedule),
      model_(model),
      run_(run),
      store_(dir, c.checkpoint, collectives),
      config_yaml_(to_yaml(c)) {}

// Every member writes its own part; for each job rank missing from the group, one member
// stands in (core/coowners.h: the lowest live co-owner of its slice, else the lowest member)
// and writes that rank's part (stand_in_part).
bool RunCheckpoints::upload_full() const { return store_.background() && store_.uploader()->full(); }

void RunCheckpoints::save(bool must, std::optional<bool> room) {
  const auto start = std::chrono::steady_clock::now();
  // I/O, not a hung thread, for checkpoint.write_timeout_s: an inline write that outlasts it (a
  // hung NFS or FUSE mount) stops this rank's heartbeat like a hung thread, the others fence it
  // and write the round without it, and its supervisor replaces it.
  const ProgressClock::Bounded writing(collectives_.progress(), config_.checkpoint.write_timeout_s);
  if (before_write_ && !store_.background()) before_write_();
  write_round(must, room);
  // A checkpoint that must be written ends this run's training (the last round's, the job's
  // notice): its wait is the end's, not a round's stall.
  (must ? summary_.end_wait_seconds : summary_.training_wait_seconds) +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RunCheckpoints::write_round(bool must, std::optional<bool> room) {
  std::vector<CheckpointStore::StandIn> stand_ins;
  std::vector<int> missing = missing_ranks(collectives_), mine;
  for (int r : missing)
    if (stand_in(r, collectives_.members(), plan_.slices()) == collectives_.job_rank()) {
      mine.push_back(r);
      stand_ins.push_back({r, [this, r](TensorCopy copy) { return stand_in_part(r, copy); }});
    }
  const auto write = [&](auto&&... args) {
    return store_.background() ? store_.save_in_background(args..., must, config_.checkpoint.write_timeout_s, room)
                               : store_.save(args...);
  };
  const bool written = write(
      run_.progress.rounds,
      [&](TensorCopy copy) {
        return rank_part(model_.writer(copy), run_.inner.writer(copy), run_.outer.feedback_writer(copy),
                         progress_writer(static_cast<int64_t>(run_.loader.position())));
      },
      stand_ins, [&](TensorCopy copy) { return run_.outer.writer(copy); }, config_yaml_);
  if (store_.background()) {
    if (written) {
      spdlog::info("checkpoint round {} handed to the background upload to {}{}", run_.progress.rounds, store_.dir(),
                   mine.empty() ? "" : fmt::format(" (with the part of rank(s) [{}])", ranks_text(mine)));
    } else {
      ++summary_.skipped;
      spdlog::warn(
          "checkpoint round {} skipped: a rank still has checkpoint.max_in_flight = {} round(s) being written "
          "to {}; {}",
          run_.progress.rounds, config_.checkpoint.max_in_flight, store_.dir(),
          run_.progress.last_checkpoint_round >= 0
              ? fmt::format("the checkpoint of round {} stays the resume point", run_.progress.last_checkpoint_round)
              : std::string("no round is committed yet"));
    }
    return;
  }
  if (!written) {  // a full disk, a read-only mount: training goes on, the older checkpoints stay
    ++run_.recovery.checkpoints_failed;
    run_.metrics.add_checkpoint_failure();
    spdlog::error(
        "checkpoint round {} could not be written to {} (see the warnings above): training goes on, and {}",
        run_.progress.rounds, store_.dir(),
        run_.progress.last_checkpoint_round >= 0
            ? fmt::format("the checkpoint of round {} stays the resume point", run_.progress.last_checkpoint_round)
            : std::string("there is no checkpoint to resume from yet"));
    return;
  }
  run_.metrics.set_checkpoint_round(run_.progress.rounds);
  run_.progress.last_checkpoint_round = run_.progress.rounds;
  spdlog::info("checkpoint round {} written to {}{} (digests: outer {}, inner {}{})", run_.progress.rounds,
               store_.dir(), missing.empty() ? "" : fmt::format(" with rank(s) [{}] missing", ranks_text(missing)),
               hex64(outer_digest()), hex64(run_.inner.state_digest()),
               mine.empty() ? "" : fmt::format("; this rank wrote the part of rank(s) [{}]", ranks_text(mine)));
}

// The part of job rank `missing`, written by this member standing in for it (docs/RECOVERY.md,
// "Checkpoints of a degraded job"): weights θ (the missing rank's own progress is lost with
// it); this member's inner state if it trains the same slice, else none (fresh); the job's step
// as its data position (a rank's batches are a function of (seed, rank, step)); no
// error-feedback residuals (live recovery runs without them); this member's counters.
ArchiveWriter RunCheckpoints::stand_in_part(int missing, TensorCopy copy) {
  return rank_part(
      model_as_theta(model_.layout(), run_.outer.global(),
                     SlicePlan::from_config(config_, collectives_.job_size(), missing), model_.dtype(), copy),
      same_slice(missing, collectives_.job_rank(), plan_.slices()) ? run_.inner.writer(copy)
                                                                   : run_.inner.fresh_writer(),
      run_.outer.feedback_writer(copy),
      progress_writer(run_.progress.step));  // one batch per inner step
}

void RunCheckpoints::resume() {
  const ProgressClock::Bounded reading(collectives_.progress(), config_.checkpoint.write_timeout_s);  // storage I/O
  const auto start = std::chrono::steady_clock::now();
  auto ckpt = store_.load_latest(config_.checkpoint.start_over_if_unusable);
  if (!ckpt) {
    note_stop(0);  // a job that had got somewhere and left no checkpoint starts again from round 0
    return;
  }
  try {
    load_from(*ckpt);
  } catch (const std::exception& e) {  // a field missing or of another shape, a malformed archive (c10::Error)
    throw CheckpointError("checkpoint " + ckpt->path + " cannot be loaded: " + e.what());
  }
  run_.metrics.set_checkpoint_round(ckpt->round);
  run_.progress.last_checkpoint_round = ckpt->round;
  spdlog::info("resumed from {} at step {} (round {}; digests: outer {}, inner {}; {:.3f} s to find, read and load it)",
               ckpt->path, run_.progress.step, run_.progress.rounds, hex64(outer_digest()),
               hex64(run_.inner.state_digest()),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  note_fallback(ckpt->round);
  note_notice(ckpt->round);
  note_stop(ckpt->round);
}

// What the stop before this run cost: the rounds between the round the job had reached and
// `resumed_round`, as the kind of stop the notes name.
void RunCheckpoints::note_stop(int64_t resumed_round) {
  const auto before = read_history();
  const char* kind = run_.recovery.resumed_after_notice == resumed_round ? interruption_kind::kNotice
                     : !run_.recovery.fallback.empty()                   ? interruption_kind::kFallback
                                                                         : interruption_kind::kRestart;
  history_ = after_stop(before, resumed_round, kind);
  run_.recovery.interruptions = history_->stops;
  run_.recovery.rounds_lost = history_->rounds_lost;
  run_.recovery.stops = history_->stop_count;
  publish_history();
  if (before)
    spdlog::warn(
        "the job had reached round {} when it stopped ({}) and resumes from round {}: {} round(s) lost, {} "
        "over its {} stop(s)",
        before->reached_round, kind, resumed_round, history_->stops.back().rounds_lost, history_->rounds_lost,
        history_->stop_count);
}

std::optional<JobHistory> RunCheckpoints::read_history() const {
  const auto text = store_.read_note(kReachedNote);
  if (!text) return std::nullopt;
  try {
    return from_note(nlohmann::json::parse(*text));
  } catch (const std::exception& e) {  // a torn or foreign note: the job's history starts again
    spdlog::warn("{} in {} is unreadable ({}): the rounds lost before this run are not known", kReachedNote,
                 store_.dir(), e.what());
    return std::nullopt;
  }
}

void RunCheckpoints::publish_history() const {
  const auto& stops = history_->stops;
  run_.metrics.set_job_stops(static_cast<double>(history_->stop_count), static_cast<double>(history_->rounds_lost),
                             stops.empty() ? -1.0 : static_cast<double>(stops.back().round),
                             stops.empty() ? -1.0 : static_cast<double>(stops.back().resumed_round));
}

void RunCheckpoints::note_reached() {
  // Storage I/O (an S3 request may take seconds), bounded like a checkpoint write.
  const ProgressClock::Bounded writing(collectives_.progress(), config_.checkpoint.write_timeout_s);
  if (!history_) {  // a replacement: the job's history so far
    history_ = read_history().value_or(JobHistory{});
    publish_history();
  }
  history_->reached_round = run_.progress.rounds;
  const auto failed = store_.rewrite_note(kReachedNote, [this] { return to_note(*history_).dump(); });
  if (failed && !reached_note_failing_)
    spdlog::warn(
        "could not write {} in {} ({}): what a stop from here on costs is undercounted "
        "(said once until it can be written again)",
        kReachedNote, store_.dir(), *failed);
  reached_note_failing_ = failed.has_value();
}

void RunCheckpoints::note_notice(int64_t resumed_round) {
  try {
    const auto text = store_.read_note(kNoticeNote);
    if (!text) return;
    const auto note = nlohmann::json::parse(*text);
    if (note.at("round").get<int64_t>() != resumed_round) return;  // a later checkpoint: that stop is behind
    run_.recovery.resumed_after_notice = resumed_round;
    spdlog::info("round {} is the checkpoint the job saved when rank(s) [{}] had a notice: no round was lost to it",
                 resumed_round, note.value("ranks", std::string()));
  } catch (const std::exception& e) {
    spdlog::warn("{} in {} is unreadable: {}", kNoticeNote, store_.dir(), e.what());
  }
}

void RunCheckpoints::note_stopped_on_notice(const std::vector<int>& ranks) const {
  const nlohmann::json note = {
      {"round", run_.progress.rounds}, {"step", run_.progress.step}, {"ranks", ranks_text(ranks)}};
  const ProgressClock::Bounded writing(collectives_.progress(), config_.checkpoint.write_timeout_s);
  store_.write_note(kNoticeNote, note.dump(2));
}

// The run before this one fell back from live recovery to a gang restart (LiveRecovery gave
// up): say so, and name it in the summary (recovery.fallback). A note older than the checkpoint
// resumed from belongs to an earlier restart.
void RunCheckpoints::note_fallback(int64_t resumed_round) {
  try {
    const auto text = store_.read_note(kFallbackNote);
    if (!text) return;
    const auto note = nlohmann::json::parse(*text);
    if (note.at("round").get<int64_t>() < resumed_round) return;
    run_.recovery.fallback = note.at("reason").get<std::string>();
    spdlog::warn("this run is the gang restart that live recovery fell back to at step {}: {}",
                 note.value("step", int64_t{-1}), run_.recovery.fallback);
  } catch (const std::exception& e) {
    spdlog::warn("{} in {} is unreadable: {}", kFallbackNote, store_.dir(), e.what());
  }
}

// Every field of the checkpoint into this rank's state; throws naming the field that is
// missing or does not fit the model (resume() adds the checkpoint's path).
void RunCheckpoints::load_from(LoadedCheckpoint& ckpt) {
  model_.load(ckpt.rank_part);
  torch::serialize::InputArchive inner;
  ckpt.rank_part.read(checkpoint_key::kInner, inner);
  run_.inner.load(inner);
  if (torch::serialize::InputArchive feedback; ckpt.rank_part.try_read(checkpoint_key::kFeedback, feedback))
    run_.outer.load_feedback(feedback);
  load_progress(ckpt.rank_part);
  run_.outer.load(ckpt.global_part);
}

ArchiveWriter RunCheckpoints::rank_part(ArchiveWriter model, ArchiveWriter inner, ArchiveWriter feedback,
                                        ArchiveWriter progress) {
  return [model = std::move(model), inner = std::move(inner), feedback = std::move(feedback),
          progress = std::move(progress)](torch::serialize::OutputArchive& a) {
    model(a);
    write_nested(a, checkpoint_key::kInner, inner);
    write_nested(a, checkpoint_key::kFeedback, feedback);
    progress(a);
  };
}

// The trainer's own section: where the run is (step, round, data position) and its totals.
ArchiveWriter RunCheckpoints::progress_writer(int64_t loader_position) {
  std::vector<std::pair<std::string, double>> totals_now;
  for (const auto& [name, value] : totals()) totals_now.emplace_back(checkpoint_key::total(name), *value);
  return [step = run_.progress.step, rounds = run_.progress.rounds, loader_position,
          totals_now = std::move(totals_now)](torch::serialize::OutputArchive& a) {
    write_scalar(a, checkpoint_key::kStep, step);
    write_scalar(a, checkpoint_key::kRounds, rounds);
    write_scalar(a, checkpoint_key::kLoaderPosition, loader_position);
    for (const auto& [key, value] : totals_now) write_scalar(a, key, value);
  };
}

void RunCheckpoints::load_progress(torch::serialize::InputArchive& a) {
  run_.progress.step = read_int64(a, checkpoint_key::kStep);
  run_.progress.rounds = read_int64(a, checkpoint_key::kRounds);
  run_.loader.seek(read_int64(a, checkpoint_key::kLoaderPosition));
  for (const auto& [name, value] : totals()) *value = read_double(a, checkpoint_key::total(name));
}

// The running totals a checkpoint carries, by name (checkpoint_key::total).
std::vector<std::pair<std::string, double*>> RunCheckpoints::totals() {
  return {{"tokens", &run_.progress.tokens},
          {"flops", &run_.progress.flops},
          {"flops_full", &run_.progress.flops_full},
          {"bytes_sent", &run_.progress.bytes_sent},
          {"sync_seconds", &run_.progress.sync_seconds},
          {"bytes_received", &run_.progress.bytes_received},
          {"network_wait_seconds", &run_.progress.network_wait_seconds}};
}

// θ and the outer momentum of every fragment, as one digest (the same on every rank).
uint64_t RunCheckpoints::outer_digest() const {
  uint64_t h = kFnv1a64Offset;
  for (int f = 0; f < static_cast<int>(schedule_.fragments().size()); ++f) {
    const uint64_t d = run_.outer.fragment_digest(f);
    h = fnv1a64(&d, sizeof d, h);
  }
  return h;
}

// Background: what the upload thread finished since the last look. A committed round is the
// resume point from now on; a round given up is counted as a failed checkpoint.
void RunCheckpoints::collect_uploads() {
  auto* uploader = store_.uploader();
  if (!uploader) return;
  for (const int64_t round : uploader->take_failed()) {
    (void)round;  // the thread logged it
    ++run_.recovery.checkpoints_failed;
    run_.metrics.add_checkpoint_failure();
  }
  const int64_t committed = uploader->committed();
  if (committed > run_.progress.last_checkpoint_round) {
    run_.progress.last_checkpoint_round = committed;
    run_.metrics.set_checkpoint_round(static_cast<double>(committed));
  }
}

void RunCheckpoints::finish() {
  if (auto* uploader = store_.uploader()) {
    const auto start = std::chrono::steady_clock::now();
    const ProgressClock::Waiting waiting(collectives_.progress());
    if (!uploader->drain(config_.checkpoint.write_timeout_s))
      spdlog::error("checkpoint upload to {}: rounds still unfinished after checkpoint.write_timeout_s = {} s",
                    store_.dir(), config_.checkpoint.write_timeout_s);
    summary_.end_wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  collect_uploads();
}

CheckpointWriteSummary RunCheckpoints::summary() const {
  CheckpointWriteSummary s = summary_;
  s.upload = store_.background() ? "background" : "inline";
  const auto written = store_.written();
  s.rounds = written.rounds_written;
  s.bytes = written.bytes;
  s.write_seconds = written.seconds;
  return s;
}

}  // namespace ppu
