#include "engine/state/checkpoint_uploader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/seconds_since.h"
#include "common/thread_priority.h"
#include "core/checkpoint_names.h"

namespace ppu {

namespace {

namespace file = checkpoint_file;

// How often the thread, while idle, looks for receipts (rank 0) or a manifest (the others).
constexpr auto kPoll = std::chrono::milliseconds(100);
// Nice levels this thread runs below the training thread that made it: where both want a core
// (more ranks than cores) the training thread gets about 3x its share, so serialising and
// sending a checkpoint delays the uploads (skipped rounds, max_in_flight), not the steps. Where a
// core is free it changes nothing.
constexpr int kUploadNice = 5;

}  // namespace

CheckpointUploader::Bytes CheckpointUploader::Bytes::later(std::function<std::string()> make) {
  Bytes b;
  b.make_ = std::move(make);
  return b;
}

const std::string& CheckpointUploader::Bytes::get() {
  if (make_) {
    bytes_ = make_();
    make_ = nullptr;  // and with it the snapshot it held
  }
  return bytes_;
}

CheckpointUploader::CheckpointUploader(std::unique_ptr<CheckpointLocation> location, Settings settings)
    : at_(std::move(location)), settings_(settings), thread_([this] { run(); }) {}

CheckpointUploader::~CheckpointUploader() {
  bool written = false;
  {
    std::unique_lock lock(mutex_);
    written = changed_.wait_for(lock, std::chrono::duration<double>(settings_.exit_drain_s),
                                [&] { return queue_.empty() && !writing_ && committing_ == 0; });
  }
  if (!written)
    spdlog::warn("checkpoint upload: rounds still being written to {} after {:.0f} s are abandoned", at_->text(),
                 settings_.exit_drain_s);
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

bool CheckpointUploader::full_locked() const {
  return static_cast<int>(queue_.size()) + (writing_ ? 1 : 0) >= settings_.max_in_flight;
}

bool CheckpointUploader::full() const {
  const std::lock_guard lock(mutex_);
  return full_locked();
}

bool CheckpointUploader::wait_for_room(double bound_s) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(bound_s), [&] { return !full_locked(); });
}

void CheckpointUploader::enqueue(Round round) {
  {
    const std::lock_guard lock(mutex_);
    round.handed_over = Clock::now();
    queue_.push_back(std::move(round));
    ++unfinished_;
  }
  changed_.notify_all();
}

void CheckpointUploader::set_note(const std::string& name, std::string text) {
  {
    const std::lock_guard lock(mutex_);
    note_ = {name, std::move(text)};
  }
  changed_.notify_all();
}

bool CheckpointUploader::drain(double bound_s) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(bound_s), [&] { return unfinished_ == 0; });
}

int64_t CheckpointUploader::committed() const {
  const std::lock_guard lock(mutex_);
  return committed_;
}

std::vector<int64_t> CheckpointUploader::take_failed() {
  const std::lock_guard lock(mutex_);
  return std::exchange(failed_, {});
}

CheckpointUploader::Stats CheckpointUploader::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void CheckpointUploader::run() {
  // Below training, and never preempting it when a round is handed over (the hand-over wakes
  // this thread in the middle of the training thread's round boundary).
  if (!lower_thread_priority(kUploadNice) || !run_as_batch_thread())
    spdlog::warn(
        "checkpoint upload: could not lower the upload thread's priority ({}); it competes with training "
        "for the CPU",
        std::strerror(errno));
  for (;;) {
    std::optional<Round> round;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [&] { return stop_ || !queue_.empty() || note_; };
      if (pending_.empty() && !unseen_) changed_.wait(lock, ready);
      else changed_.wait_for(lock, kPoll, ready);
      if (stop_) return;
      if (!queue_.empty()) {
        round = std::move(queue_.front());
        queue_.pop_front();
        writing_ = true;
      }
    }
    if (round) {
      write(*round);
      round.reset();  // its bytes are written: the memory goes before the next round is taken
      {
        const std::lock_guard lock(mutex_);
        writing_ = false;
      }
      changed_.notify_all();
    }
    for (Pending& p : pending_)
      if (!p.resolved) try_commit(p);
    const auto kept = std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.resolved; });
    const auto done = std::distance(kept, pending_.end());
    pending_.erase(kept, pending_.end());
    if (done > 0) {
      {
        const std::lock_guard lock(mutex_);
        committing_ -= static_cast<int>(done);
      }
      changed_.notify_all();
    }
    if (unseen_ && look_for_manifest(unseen_->first, unseen_->second)) unseen_.reset();
    write_note();
  }
}

void CheckpointUploader::write_note() {
  std::optional<std::pair<std::string, std::string>> note;
  {
    const std::lock_guard lock(mutex_);
    note.swap(note_);
  }
  if (!note) return;
  try {
    at_->write(note->first, note->second, Durability::Readers);
    if (note_failing_) spdlog::info("{} is written again", at_->path(note->first));
    note_failing_ = false;
  } catch (const std::exception& e) {
    if (!note_failing_)
      spdlog::warn("could not write {} ({}): what a stop from here on costs is undercounted until it can be",
                   at_->path(note->first), e.what());
    note_failing_ = true;
  }
}

// This member's parts, then its receipt; on the group's rank 0, global.pt, and the round waits
// for the receipts (try_commit).
void CheckpointUploader::write(Round& round) {
  const auto start = Clock::now();
  const auto deadline = round.handed_over + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(settings_.round_timeout_s));
  const std::string dir = file::round_dir(round.round);
  Receipt receipt;
  receipt.writer = settings_.job_rank;
  double bytes = 0;
  const auto put = [&](const std::string& name, const std::string& content) {
    at_->write(dir + "/" + name, content);
    bytes += static_cast<double>(content.size());
  };
  try {
    for (Part& part : round.parts) {
      put(file::rank_part(part.job_rank), part.bytes.get());
      receipt.parts[part.job_rank] = PartRecord::of(part.bytes.get(), settings_.job_rank);
    }
    if (round.commit) put(file::kGlobal, round.commit->global.get());
    else put(file::receipt(settings_.job_rank), receipt.text());
  } catch (const std::exception& e) {
    receipt.failed = e.what();
    if (!round.commit) {
      try {  // so that rank 0 gives the round up now rather than at its deadline
        at_->write(dir + "/" + file::receipt(settings_.job_rank), receipt.text());
      } catch (const std::exception&) {
      }
    }
  }
  {
    const std::lock_guard lock(mutex_);
    if (receipt.failed.empty()) ++stats_.rounds_written;
    stats_.bytes += bytes;
    stats_.seconds += seconds_since(start);
  }
  if (!receipt.failed.empty()) {
    give_up(round.round, "this rank could not write its part: " + receipt.failed);
    return;
  }
  if (round.commit) {
    Commit& c = *round.commit;
    Pending p{round.round,
              PartRecord::of(c.global.get(), settings_.job_rank),
              std::move(c.members),
              c.world_size,
              std::move(c.config_yaml),
              receipt.parts,
              {},
              deadline};
    for (int m : p.members)
      if (m != settings_.job_rank) p.receipts_missing.push_back(m);
    pending_.push_back(std::move(p));
    const std::lock_guard lock(mutex_);
    ++committing_;
    return;
  }
  if (unseen_) resolved();  // an older round whose manifest was not seen: this one supersedes it
  unseen_ = {round.round, deadline};
}

// Rank 0: reads the receipts that have come; commits the round once every member's is there.
void CheckpointUploader::try_commit(Pending& p) {
  const auto start = Clock::now();
  const std::string dir = file::round_dir(p.round);
  try {
    if (!p.receipts_missing.empty()) {
      const auto names = at_->names(dir);
      for (auto it = p.receipts_missing.begin(); it != p.receipts_missing.end();) {
        if (std::find(names.begin(), names.end(), file::receipt(*it)) == names.end()) {
          ++it;
          continue;
        }
        const auto text = at_->read(dir + "/" + file::receipt(*it));
        const Receipt r = Receipt::parse(text.value_or(""));
        if (!r.failed.empty()) {
          p.resolved = true;
          give_up(p.round, "rank " + std::to_string(*it) + " could not write its part: " + r.failed);
          return;
        }
        for (const auto& [rank, part] : r.parts)
          if (!p.parts.emplace(rank, part).second) throw std::logic_error("two members wrote " + file::rank_part(rank));
        it = p.receipts_missing.erase(it);
      }
    }
    if (p.receipts_missing.empty()) commit(p);
  } catch (const std::logic_error& e) {  // the parts do not cover the job: never a checkpoint
    p.resolved = true;
    give_up(p.round, e.what());
    return;
  } catch (const std::exception& e) {  // a store that does not answer: tried again until the deadline
    if (Clock::now() >= p.deadline) {
      p.resolved = true;
      give_up(p.round, e.what());
      return;
    }
    spdlog::warn("checkpoint round {}: committing it failed for now: {}", p.round, e.what());
  }
  if (!p.resolved && Clock::now() >= p.deadline) {
    p.resolved = true;
    std::string missing;
    for (int m : p.receipts_missing) missing += (missing.empty() ? "" : ", ") + std::to_string(m);
    give_up(p.round, "no receipt from rank(s) [" + missing + "] within checkpoint.write_timeout_s (" +
                         fmt::format("{:.0f}", settings_.round_timeout_s) + " s)");
  }
  const std::lock_guard lock(mutex_);
  stats_.seconds += seconds_since(start);
}

// The manifest makes the round a checkpoint; older rounds waiting for receipts are superseded.
void CheckpointUploader::commit(Pending& p) {
  const std::string manifest = round_manifest(p.round, p.world_size, p.config_yaml, p.global, p.parts);
  at_->write(file::round_dir(p.round) + "/" + file::kManifest, manifest);
  p.resolved = true;
  for (Pending& older : pending_)
    if (!older.resolved && older.round < p.round) {
      older.resolved = true;
      spdlog::info("checkpoint round {}: superseded by round {}, committed first", older.round, p.round);
      resolved();
    }
  {
    const std::lock_guard lock(mutex_);
    stats_.bytes += static_cast<double>(manifest.size());
  }
  spdlog::info("checkpoint round {} committed to {}", p.round, at_->text());
  try {
    prune_rounds(*at_, settings_.keep, p.round);
  } catch (const std::exception& e) {
    spdlog::warn("checkpoint retention in {}: {}", at_->text(), e.what());
  }
  resolved(p.round);  // after the retention: a drained uploader has pruned too
}

// The others: whether the manifest of the round this rank wrote last is there (or its deadline
// passed: given up).
bool CheckpointUploader::look_for_manifest(int64_t round, Clock::time_point deadline) {
  try {
    if (at_->read(file::round_dir(round) + "/" + file::kManifest)) {
      resolved(round);
      return true;
    }
  } catch (const std::exception& e) {
    spdlog::debug("checkpoint round {}: looking for its manifest: {}", round, e.what());
  }
  if (Clock::now() < deadline) return false;
  give_up(round, "its manifest did not appear within checkpoint.write_timeout_s (" +
                     fmt::format("{:.0f}", settings_.round_timeout_s) + " s)");
  return true;
}

void CheckpointUploader::give_up(int64_t round, const std::string& why) {
  spdlog::error(
      "checkpoint round {} is given up ({}): training goes on, and the last committed checkpoint "
      "stays the resume point",
      round, why);
  {
    const std::lock_guard lock(mutex_);
    failed_.push_back(round);
  }
  resolved();
}

void CheckpointUploader::resolved(int64_t committed_round) {
  {
    const std::lock_guard lock(mutex_);
    --unfinished_;
    committed_ = std::max(committed_, committed_round);
  }
  changed_.notify_all();
}

}  // namespace ppu
