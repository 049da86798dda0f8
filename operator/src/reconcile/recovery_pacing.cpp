#include "reconcile/recovery_pacing.h"

#include <algorithm>
#include <optional>

#include "kube/rfc3339.h"

namespace ppu::op {

std::vector<RecoveryRecord> in_window(const std::vector<RecoveryRecord>& history, int64_t now, int64_t window_s) {
  std::vector<RecoveryRecord> out;
  for (const auto& r : history) {
    const auto t = parse_rfc3339(r.time);
    if (!t) continue;
    if (window_s > 0 && *t <= now - window_s) continue;
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const RecoveryRecord& a, const RecoveryRecord& b) {
    return *parse_rfc3339(a.time) < *parse_rfc3339(b.time);
  });
  if (out.size() > kRecoveryHistoryMax) out.erase(out.begin(), out.end() - kRecoveryHistoryMax);
  return out;
}

int64_t loss_events(const std::vector<RecoveryRecord>& window_records) {
  int64_t events = 0;
  std::optional<int64_t> first;  // the current event's first loss
  for (const auto& r : window_records) {
    const auto t = parse_rfc3339(r.time);
    if (!t) continue;
    if (!first || *t - *first > kLossEventSeconds) {
      ++events;
      first = *t;
    }
  }
  return events;
}

int64_t loss_attempt(const std::vector<RecoveryRecord>& window_records, int64_t rank) {
  return 1 + std::count_if(window_records.begin(), window_records.end(),
                           [&](const RecoveryRecord& r) { return r.rank == rank; });
}

int64_t recovery_backoff(int64_t attempt, const RunPolicy& rp) {
  if (attempt <= 1 || rp.recovery_backoff_seconds <= 0) return 0;
  const int64_t cap = std::max<int64_t>(rp.recovery_backoff_max_seconds, 0);
  int64_t wait = rp.recovery_backoff_seconds;
  for (int64_t n = 2; n < attempt && wait < cap; ++n) wait *= 2;  // stops at the cap: no overflow
  return std::min(wait, cap);
}

}  // namespace ppu::op
