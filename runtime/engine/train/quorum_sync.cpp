#include "engine/train/quorum_sync.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "common/notice.h"
#include "common/seconds_since.h"
#include "core/exit_status.h"
#include "engine/obs/step_phases.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

// One member's row in the meeting's all-gather.
enum Column : int64_t {
  kWait = 0,
  kTrained = 1,
  kEveryone = 2,
  kTrainSeconds = 3,
  kStepSeconds = 4,
  kSlowBefore = 5,
  kWeights = 6
};

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

constexpr const char* kStoppedWithoutThisRank =
    "the others stopped the job on a notice and saved its state, this rank's part from a co-owner";

}  // namespace

QuorumSync::QuorumSync(const Config& config, const StreamingSchedule& schedule, Collectives& collectives, RunParts run,
                       LiveRecovery* live_recovery, std::function<bool(int64_t)> whole_group_at)
    : config_(config),
      schedule_(schedule),
      collectives_(collectives),
      run_(run),
      live_recovery_(live_recovery),
      gate_(config, collectives),
      close_watch_(config, collectives),
      grace_(config.outer.quorum_grace_min_s, config.outer.quorum_grace_max_s),
      windows_(static_cast<int>(schedule.fragments().size())),
      slices_(config.effective_slices()),
      whole_group_at_(std::move(whole_group_at)),
      members_(collectives.members()) {
  summary_.mode = choice_name(SyncMode::Quorum);
  summary_.grace_seconds = grace_.seconds();
  if (live_recovery_) gate_.ask_missing_with([this] { return live_recovery_->member_addresses(); });
  std::vector<SlicePlan> plans;
  plans.reserve(static_cast<size_t>(collectives.job_size()));
  for (int r = 0; r < collectives.job_size(); ++r)
    plans.push_back(SlicePlan::from_config(config, collectives.job_size(), r));
  run_.outer.set_job_plans(std::move(plans));
}

bool QuorumSync::is_sync_point(int64_t step) const {
  return step == config_.train.steps || !schedule_.due(step).empty();
}

int64_t QuorumSync::previous_sync_point(int64_t step) const {
  for (int64_t s = step - 1; s > 0; --s)
    if (is_sync_point(s)) return s;
  return 0;
}

int64_t QuorumSync::next_sync_point(int64_t step) const {
  int64_t s = step + 1;
  while (s < config_.train.steps && !is_sync_point(s)) ++s;
  return std::min(s, config_.train.steps);
}

int64_t QuorumSync::next_meeting(int64_t step) const {
  for (int64_t s = step + 1; s < config_.train.steps; ++s)
    if (is_sync_point(s) && !out_at(collectives_.job_rank(), s)) return s;
  return config_.train.steps;
}

bool QuorumSync::out_at(int rank, int64_t step) const {
  const auto it = plan_.find(rank);
  return it != plan_.end() && it->second.from <= step && step < it->second.until;
}

std::vector<int> QuorumSync::in_at(int64_t step) const {
  std::vector<int> in;
  for (int r : members_)
    if (!out_at(r, step)) in.push_back(r);
  return in;
}

int64_t QuorumSync::last_outer_step(int fragment, int64_t step) const {
  for (int64_t s = step; s > 0; --s) {
    const auto due = schedule_.due(s);
    if (std::find(due.begin(), due.end(), fragment) != due.end()) return s;
  }
  return 0;
}

std::map<int, int64_t> QuorumSync::synced_between(int64_t from, int64_t until) const {
  std::map<int, int64_t> synced;
  for (int64_t s = from; s < until; ++s)
    for (int f : schedule_.due(s)) ++synced[f];
  return synced;
}

void QuorumSync::start(int64_t step, bool replacement) {
  const auto fragments = static_cast<int>(schedule_.fragments().size());
  for (int f = 0; f < fragments; ++f) {
    const int64_t last = last_outer_step(f, step);
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
    heading_for_ = next_meeting(step);
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
  if (config_.effective_sit_out() > 0) {
    const int me = collectives_.job_rank();
    const bool was_out = sitting_out_;
    // First, before anything that needs the members: they may have stopped on the notice.
    if (was_out && notice_received()) away_on_notice(step);
    const bool rejoins = was_out && !out_at(me, step);
    if (rejoins) read_plan(previous_sync_point(step));  // who else is out: planned while this rank was
    sitting_out_ = out_at(me, step);
    last_sync_point_ = step;
    if (sitting_out_ && !was_out && notice_received()) away_on_notice(step);
    if (sitting_out_) {
      ++summary_.sat_out;
      run_.metrics.add_sync_point("sat_out", 0, grace_.seconds());
      return;
    }
    if (rejoins) rejoin_windows(step);
    collectives_.narrow(in_at(step));
  }
  const double trained_s = seconds_since(heading_since_);
  const auto fragments = static_cast<int64_t>(schedule_.fragments().size());
  const QuorumGate::Arrival arrival =
      collectives_.world_size() > 1 ? gate_.arrive(step, grace_.seconds()) : QuorumGate::Arrival{};
  if (!arrival.unanswering.empty()) {  // ask_missing_with: live recovery
    summary_.fenced_at_gate += static_cast<int64_t>(arrival.unanswering.size());
    live_recovery_->fence_at_gate(arrival.unanswering, step);
  }
  auto mine = torch::zeros({kWeights + fragments}, torch::kFloat64);
  mine[kWait] = arrival.wait_s;
  mine[kTrained] = static_cast<double>(steps_trained_);
  mine[kEveryone] = arrival.everyone ? 1.0 : 0.0;
  mine[kTrainSeconds] = trained_s;
  mine[kStepSeconds] = own_step_s();
  mine[kSlowBefore] = static_cast<double>(slow_meetings_);
  for (int64_t f = 0; f < fragments; ++f) mine[kWeights + f] = windows_.weight(static_cast<int>(f));
  const auto rows = until_one_generation_completes(live_recovery_, [&] { return collectives_.allgather(mine); });

  // Every member computes the same from the same rows: the weights, the grace window.
  const int job_size = collectives_.job_size();
  weights_.assign(static_cast<size_t>(fragments * job_size), 1.0);
  std::vector<double> waits, train_s, step_s;
  std::vector<int> slow_before;
  bool everyone = true;
  const double tokens_per_step = static_cast<double>(config_.inner.batch_size) * config_.model.seq_len;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int r = collectives_.members().at(i);
    const auto row = rows[i].accessor<double, 1>();
    waits.push_back(row[kWait]);
    train_s.push_back(row[kTrainSeconds]);
    step_s.push_back(row[kStepSeconds]);
    slow_before.push_back(static_cast<int>(row[kSlowBefore]));
    everyone = everyone && row[kEveryone] != 0;
    tokens_[r] = row[kTrained] * tokens_per_step;
    for (int64_t f = 0; f < fragments; ++f) weights_[static_cast<size_t>(f * job_size + r)] = row[kWeights + f];
  }
  for (int r : members_)  // a member sitting out contributes nothing to these outer steps
    if (out_at(r, step))
      for (int64_t f = 0; f < fragments; ++f) weights_[static_cast<size_t>(f * job_size + r)] = 0;
  const int quorum = quorum_size(config_.outer.quorum_fraction, collectives_.world_size());
  grace_.observe(quorum_spread(waits, quorum));
  fastest_step_s_ = fastest_step_seconds(train_s, step - heading_from_);
  ahead_ = AheadRule::from_meeting(step_s, collectives_.members(), quorum, slices_, collectives_.job_rank());
  if (config_.effective_sit_out() > 0) {
    catch_up(step);
    plan_sit_outs(step, step_s, slow_before);
  }

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

void QuorumSync::plan_sit_outs(int64_t step, const std::vector<double>& step_s, const std::vector<int>& slow_before) {
  for (auto it = plan_.begin(); it != plan_.end();) it = it->second.until <= step ? plan_.erase(it) : std::next(it);
  const auto& in = collectives_.members();
  const int quorum = quorum_size(config_.outer.quorum_fraction, static_cast<int>(in.size()));
  const auto slow = slow_members(step_s, in, quorum, slices_);
  const bool me_slow = std::find(slow.begin(), slow.end(), collectives_.job_rank()) != slow.end();
  slow_meetings_ = me_slow ? slow_meetings_ + 1 : 0;
  for (int r : ppu::sitting_out(step_s, in, quorum, slices_, slow_before)) {
    // Out from the next sync point for up to M of them; back at the first the whole group needs.
    SitOut out{next_sync_point(step), 0};
    int64_t s = out.from, sat = 0;
    for (; s < config_.train.steps && sat < config_.effective_sit_out() && !(whole_group_at_ && whole_group_at_(s));
         s = next_sync_point(s))
      ++sat;
    out.until = s;
    if (out.until <= out.from) continue;
    plan_[r] = out;
    if (r == collectives_.job_rank())
      spdlog::info("rank {} is slower than the quorum: it sits out the sync points after steps {} to {}", r, out.from,
                   previous_sync_point(out.until));
  }
  if (collectives_.rank() == 0) publish_plan(step);
}

void QuorumSync::publish_plan(int64_t step) {
  std::string text;
  for (const auto& [r, out] : plan_)
    text += (text.empty() ? "" : ";") + std::to_string(r) + ":" + std::to_string(out.from) + ":" +
            std::to_string(out.until);
  gate_.publish_plan(step, text);
}

void QuorumSync::read_plan(int64_t step) {
  std::optional<std::string> plan;
  try {
    plan = gate_.plan(step);
  } catch (const StoreLost& e) {
    if (notice_received()) leave_on_notice(step, std::string("the store stopped answering (") + e.what() + ")");
    throw;
  }
  if (!plan) {
    if (notice_received()) leave_on_notice(step, kStoppedWithoutThisRank);
    throw PeerFailure("the job stopped on a notice while rank " + std::to_string(collectives_.job_rank()) +
                      " sat out, before the sync point after step " + std::to_string(step) + ": gang restart");
  }
  plan_.clear();
  std::istringstream in(*plan);
  std::string entry;
  while (std::getline(in, entry, ';')) {
    int rank = 0;
    SitOut out;
    char colon = 0;
    std::istringstream e(entry);
    if (!(e >> rank >> colon >> out.from >> colon >> out.until))
      throw std::runtime_error("quorum sync: unreadable sit-out plan entry '" + entry + "' at step " +
                               std::to_string(step));
    plan_[rank] = out;
  }
}

void QuorumSync::rejoin_windows(int64_t step) {
  const auto it = plan_.find(collectives_.job_rank());
  if (it == plan_.end()) return;
  const bool merge = config_.outer.quorum_late_work == LateWork::Merge;
  const auto missed_fragments = synced_between(it->second.from, step);
  spdlog::info("rank {} rejoins at the sync point after step {}: its work on {} fragment(s) synchronised meanwhile {}",
               collectives_.job_rank(), step, missed_fragments.size(), merge ? "merged" : "dropped");
  for (const auto& [f, missed] : missed_fragments) {
    const int64_t last = last_outer_step(f, step - 1);  // which this rank sat out
    windows_.start(f, step - last, 0, merge ? late_work_weight(windows_.trained(f), missed) : 0.0);
    ++(merge ? summary_.late_merged : summary_.late_dropped);
    run_.metrics.add_late_work(choice_name(config_.outer.quorum_late_work));
  }
}

void QuorumSync::catch_up(int64_t step) {
  const int me = collectives_.job_rank();
  const int64_t previous = previous_sync_point(step);
  std::map<int, bool> stale;  // fragment -> whether this rank missed its outer steps
  int root = -1;              // the first member (group rank) that was in at the previous sync point
  const auto& in = collectives_.members();
  for (size_t i = 0; i < in.size(); ++i) {
    const int r = in[i];
    if (previous == 0 || !out_at(r, previous)) {
      if (root < 0) root = static_cast<int>(i);
      continue;
    }
    for (const auto& [f, missed] : synced_between(plan_.at(r).from, step)) stale[f] = stale[f] || r == me;
  }
  for (const auto& [f, mine] : stale)
    run_.outer.catch_up(f, root, mine, config_.outer.quorum_late_work == LateWork::Merge);
}

void QuorumSync::away_on_notice(int64_t step) {
  bool stopped = false;
  try {
    if (!notice_said_) {
      gate_.say_notice();
      notice_said_ = true;
      spdlog::warn("rank {} had a notice while it sits out: the others stop the job at their next round boundary",
                   collectives_.job_rank());
    }
    stopped = gate_.job_stopped();
  } catch (const StoreLost& e) {
    // Under gang recovery the store is rank 0's: gone once the members left on the notice (or
    // rank 0 was lost, which restarts the gang anyway). This rank's notice stands either way.
    leave_on_notice(step, std::string("the store stopped answering (") + e.what() + ")");
  }
  if (stopped) leave_on_notice(step, kStoppedWithoutThisRank);
}

void QuorumSync::leave_on_notice(int64_t step, const std::string& why) {
  throw LeftOnNotice(notice_signal(), fmt::format("rank {} sat out up to its step {} and had a notice {:.1f} s ago; {}",
                                                  collectives_.job_rank(), step, seconds_since_notice(), why));
}

std::vector<int> QuorumSync::away_with_notice() {
  std::vector<int> away;
  for (int r : members_)
    if (out_at(r, last_sync_point_)) away.push_back(r);
  return away.empty() ? away : gate_.noticed(away);
}

void QuorumSync::job_stops() {
  if (collectives_.rank() == 0 && config_.effective_sit_out() > 0) gate_.say_job_stopped();
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
