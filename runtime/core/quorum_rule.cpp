#include "core/quorum_rule.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace ppu {

int quorum_size(double fraction, int members) {
  const auto wanted = static_cast<int>(std::ceil(fraction * members - 1e-9));
  return std::clamp(wanted, 1, std::max(members, 1));
}

double quorum_spread(std::vector<double> waits, int quorum) {
  if (waits.empty()) return 0;
  std::sort(waits.begin(), waits.end(), std::greater<>());
  const auto q = static_cast<std::size_t>(std::clamp(quorum, 1, static_cast<int>(waits.size())));
  return std::max(0.0, waits.front() - waits[q - 1]);
}

double fastest_step_seconds(const std::vector<double>& train_s, int64_t steps) {
  if (steps <= 0 || train_s.empty()) return 0;
  return std::max(0.0, *std::min_element(train_s.begin(), train_s.end())) / static_cast<double>(steps);
}

AheadRule AheadRule::from_meeting(const std::vector<double>& step_s, const std::vector<int>& ranks, int quorum,
                                  int slices, int job_rank, double slower) {
  AheadRule rule;
  std::vector<double> known;
  double own = 0;
  for (size_t i = 0; i < step_s.size(); ++i) {
    if (step_s[i] > 0) known.push_back(step_s[i]);
    if (ranks.at(i) == job_rank) own = step_s[i];
  }
  if (quorum <= 0 || known.size() < static_cast<size_t>(quorum)) return rule;  // the quorum's pace is not known
  std::nth_element(known.begin(), known.begin() + (quorum - 1), known.end());
  rule.quorum_step_s = known[static_cast<size_t>(quorum - 1)];
  if (own <= slower * rule.quorum_step_s) return rule;
  for (size_t i = 0; i < step_s.size(); ++i)
    if (ranks[i] != job_rank && ranks[i] % slices == job_rank % slices && step_s[i] > 0 &&
        step_s[i] <= rule.quorum_step_s)
      rule.allowed = true;
  return rule;
}

bool AheadRule::finishes_late(double elapsed_s, double own_step_s, int64_t steps, double grace_s) const {
  return allowed && elapsed_s + own_step_s > static_cast<double>(steps) * quorum_step_s + grace_s;
}

std::vector<int> slow_members(const std::vector<double>& step_s, const std::vector<int>& ranks, int quorum,
                              int slices) {
  std::vector<int> slow;
  for (int r : ranks)
    if (AheadRule::from_meeting(step_s, ranks, quorum, slices, r, AheadRule::kSitsOutSlowerThanQuorum).allowed)
      slow.push_back(r);
  return slow;
}

std::vector<int> sitting_out(const std::vector<double>& step_s, const std::vector<int>& ranks, int quorum, int slices,
                             const std::vector<int>& slow_before) {
  const auto now = slow_members(step_s, ranks, quorum, slices);
  std::vector<std::pair<double, int>> slow;  // (seconds a step, job rank)
  for (size_t i = 0; i < ranks.size(); ++i)
    if (slow_before.at(i) >= kSitOutAfter - 1 && std::find(now.begin(), now.end(), ranks[i]) != now.end())
      slow.emplace_back(step_s[i], ranks[i]);
  std::sort(slow.begin(), slow.end(), std::greater<>());
  const auto room = static_cast<size_t>(std::max(0, static_cast<int>(ranks.size()) - quorum));
  if (slow.size() > room) slow.resize(room);
  std::vector<int> out;
  out.reserve(slow.size());
  for (const auto& s : slow) out.push_back(s.second);
  std::sort(out.begin(), out.end());
  return out;
}

double late_work_weight(int64_t trained, int64_t missed_outer_steps) {
  return static_cast<double>(trained) / static_cast<double>(1 + std::max<int64_t>(0, missed_outer_steps));
}

double GraceWindow::seconds() const {
  if (spreads_.empty()) return max_s_;
  std::vector<double> sorted(spreads_.begin(), spreads_.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return std::clamp(2 * median, min_s_, max_s_);
}

void GraceWindow::observe(double spread_s) {
  spreads_.push_back(spread_s);
  if (spreads_.size() > kHistory) spreads_.pop_front();
}

void FragmentWindows::start(int fragment, int64_t elapsed, int64_t trained, double late) {
  window_.at(fragment) = elapsed;
  trained_.at(fragment) = trained;
  late_.at(fragment) = late;
}

void FragmentWindows::step(bool trained) {
  for (auto& w : window_) ++w;
  if (trained)
    for (auto& t : trained_) ++t;
}

void FragmentWindows::synced(int fragment) {
  window_.at(fragment) = 0;
  trained_.at(fragment) = 0;
  late_.at(fragment) = 0;
}

double FragmentWindows::weight(int fragment) const {
  const int64_t w = window_.at(fragment);
  const double done = static_cast<double>(trained_.at(fragment)) + late_.at(fragment);
  return w == 0 ? 1.0 : done / static_cast<double>(w);
}

}  // namespace ppu
