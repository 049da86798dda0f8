#include "engine/train/quorum_sync.h"

#include <algorithm>

#include "common/seconds_since.h"
#include "engine/obs/step_phases.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

// One member's row in the meeting's all-gather.
enum Column : int64_t { kWait = 0, kTrained = 1, kEveryone = 2, kTrainSeconds = 3, kStepSeconds = 4, kWeights = 5 };

// A rank asks whether its sync point closed once the interval lasted this fraction of the
// fastest member's time for it at its pace in the last interval: a member 25 % faster than it
// was is still caught in time.
constexpr double kAskAfter = 0.8;

// A rank whose steps take longer than this waits for the store's answer before a step.
constexpr double kSlowStepS = 0.05;

// A rank that skipped ahead in this many intervals in a row trains the next as the close allows:
// its pace is measured again.
constexpr int kProbeEvery = 16;

// How many of its last trained steps a rank's pace is the median of.
constexpr size_t kRecentSteps = 5;

}  // namespace

QuorumSync::QuorumSync(const Config& config, const StreamingSchedule& schedule, Collectives& collectives, RunParts run,
                       LiveRecovery* live_recovery)
    : config_(config),
      schedule_(schedule),
      collectives_(collectives),
      run_(run),
      live_recovery_(live_recovery),
      gate_(config, collectives),
      close_watch_(config, collectives),
      grace_(config.outer.quorum_grace_min_s, config.outer.quorum_grace_max_s),
      windows_(static_cast<int>(schedule.fragments().size())),
      slices_(config.effective_slices()) {
  summary_.mode = choice_name(SyncMode::Quorum);
  summary_.grace_seconds = grace_.seconds();
  std::vector<SlicePlan> plans;
  plans.reserve(static_cast<size_t>(collectives.job_size()));
  for (int r = 0; r < collectives.job_size(); ++r)
    plans.push_back(SlicePlan::from_config(config, collectives.job_size(), r));
  run_.outer.set_job_plans(std::move(plans));
}

int64_t QuorumSync::next_sync_point(int64_t step) const {
  for (int64_t s = step + 1; s < config_.train.steps; ++s)
    if (!schedule_.due(s).empty()) return s;
  return config_.train.steps;
}

void QuorumSync::start(int64_t step, bool replacement) {
  const auto fragments = static_cast<int>(schedule_.fragments().size());
  for (int f = 0; f < fragments; ++f) {
    int64_t last = 0;  // the fragment's last outer step at or before `step` (0: none yet)
    for (int64_t s = step; s > 0 && last == 0; --s) {
      const auto due = schedule_.due(s);
      if (std::find(due.begin(), due.end(), f) != due.end()) last = s;
    }
    windows_.start(f, step - last, replacement ? 0 : step - last);
  }
}

bool QuorumSync::skips(int64_t step) {
  const bool skip = decide_skip(step);
  step_started_ = Clock::now();
  return skip;
}

bool QuorumSync::decide_skip(int64_t step) {
  const double step_s = seconds_since(last_step_at_);  // the step before this one, and what came with it
  last_step_at_ = Clock::now();
  if (step >= heading_for_) {  // passed the last one: head for the next
    ahead_streak_ = skipping_ahead_ ? ahead_streak_ + 1 : 0;
    heading_for_ = next_sync_point(step);
    heading_from_ = step;
    heading_since_ = Clock::now();
    skipping_ = skipping_ahead_ = false;
  }
  if (skipping_ || collectives_.world_size() == 1) return skipping_;
  const double elapsed_s = seconds_since(heading_since_);
  if (ahead_streak_ < kProbeEvery &&
      ahead_.finishes_late(elapsed_s, own_step_s(), heading_for_ - heading_from_, grace_.seconds()))
    return skipping_ = skipping_ahead_ = true;
  skipping_ = close_watch_.closed(heading_for_);
  const double soonest_close_s = kAskAfter * fastest_step_s_ * static_cast<double>(heading_for_ - heading_from_);
  if (skipping_ || elapsed_s < soonest_close_s) return skipping_;
  // A fast rank reads the answer at its next step; a slow one waits for it, as one more of its
  // steps would cost the group more than a round trip to the store.
  const bool slow = step_s > kSlowStepS;
  close_watch_.ask(heading_for_, slow);
  if (slow) skipping_ = close_watch_.closed(heading_for_);
  return skipping_;
}

void QuorumSync::stepped(bool trained) {
  windows_.step(trained);
  if (trained) {
    ++steps_trained_;
    recent_steps_s_.push_back(seconds_since(step_started_));
    if (recent_steps_s_.size() > kRecentSteps) recent_steps_s_.erase(recent_steps_s_.begin());
    return;
  }
  ++summary_.steps_skipped;
  if (skipping_ahead_) ++summary_.steps_skipped_ahead;
  run_.metrics.add_skipped_step();
}

// The median of the last trained steps: one step descheduled by the machine does not make a
// rank a straggler.
double QuorumSync::own_step_s() const { return median_after(recent_steps_s_, 0); }

void QuorumSync::meet(int64_t step) {
  const double trained_s = seconds_since(heading_since_);
  const auto fragments = static_cast<int64_t>(schedule_.fragments().size());
  const QuorumGate::Arrival arrival =
      collectives_.world_size() > 1 ? gate_.arrive(step, grace_.seconds()) : QuorumGate::Arrival{};
  auto mine = torch::zeros({kWeights + fragments}, torch::kFloat64);
  mine[kWait] = arrival.wait_s;
  mine[kTrained] = static_cast<double>(steps_trained_);
  mine[kEveryone] = arrival.everyone ? 1.0 : 0.0;
  mine[kTrainSeconds] = trained_s;
  mine[kStepSeconds] = own_step_s();
  for (int64_t f = 0; f < fragments; ++f) mine[kWeights + f] = windows_.weight(static_cast<int>(f));
  const auto rows = until_one_generation_completes(live_recovery_, [&] { return collectives_.allgather(mine); });

  // Every member computes the same from the same rows: the weights, the grace window.
  const int job_size = collectives_.job_size();
  weights_.assign(static_cast<size_t>(fragments * job_size), 1.0);
  std::vector<double> waits, train_s, step_s;
  bool everyone = true;
  const double tokens_per_step = static_cast<double>(config_.inner.batch_size) * config_.model.seq_len;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int r = collectives_.members().at(i);
    const auto row = rows[i].accessor<double, 1>();
    waits.push_back(row[kWait]);
    train_s.push_back(row[kTrainSeconds]);
    step_s.push_back(row[kStepSeconds]);
    everyone = everyone && row[kEveryone] != 0;
    tokens_[r] = row[kTrained] * tokens_per_step;
    for (int64_t f = 0; f < fragments; ++f) weights_[static_cast<size_t>(f * job_size + r)] = row[kWeights + f];
  }
  const int quorum = quorum_size(config_.outer.quorum_fraction, collectives_.world_size());
  grace_.observe(quorum_spread(waits, quorum));
  fastest_step_s_ = fastest_step_seconds(train_s, step - heading_from_);
  ahead_ = AheadRule::from_meeting(step_s, collectives_.members(), quorum, slices_, collectives_.job_rank());

  ++summary_.sync_points;
  if (!everyone) ++summary_.closed_by_grace;
  summary_.wait_seconds += arrival.wait_s;
  summary_.max_wait_seconds = std::max(summary_.max_wait_seconds, arrival.wait_s);
  summary_.grace_seconds = grace_.seconds();
  run_.metrics.add_sync_point(everyone ? "all" : "grace", arrival.wait_s, grace_.seconds());
}

void QuorumSync::weigh(int fragment) {
  const int job_size = collectives_.job_size();
  std::vector<double> by_rank(weights_.begin() + static_cast<int64_t>(fragment) * job_size,
                              weights_.begin() + static_cast<int64_t>(fragment + 1) * job_size);
  std::map<int, double> slice_weights;
  for (int r : collectives_.members()) {
    weight_sum_[r] += by_rank[r];
    slice_weights[r % slices_] += by_rank[r];
  }
  for (const auto& [slice, w] : slice_weights) {
    slice_weight_sum_[slice] += w;
    if (w == 0) ++summary_.uncovered;
  }
  if (by_rank.at(collectives_.job_rank()) < 1.0) {
    ++summary_.short_contributions;
    run_.metrics.add_short_contribution();
  }
  run_.outer.set_weights(std::move(by_rank));
  windows_.synced(fragment);
}

OuterSyncSummary QuorumSync::summary() const {
  OuterSyncSummary s = summary_;
  s.ranks.clear();
  for (const auto& [rank, tokens] : tokens_) {
    const auto w = weight_sum_.find(rank);
    const auto slice = slice_weight_sum_.find(rank % slices_);
    const bool weighed = w != weight_sum_.end() && slice != slice_weight_sum_.end() && slice->second > 0;
    s.ranks.push_back({rank, tokens, weighed ? w->second / slice->second : 0.0});
  }
  return s;
}

}  // namespace ppu
