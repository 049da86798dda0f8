// Deadline: spec.runPolicy.activeDeadlineSeconds bounds the active time since status.startTime
// (reset on resume); past it the job fails, before it a requeue is asked for at the deadline.
#include "kube/rfc3339.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

bool deadline(Pass& p) {
  const auto& limit = p.spec.run_policy.active_deadline_seconds;
  if (!limit) return false;
  int64_t start = parse_rfc3339(p.status.start_time.value_or("")).value_or(p.in.now);
  int64_t at = start + *limit;
  if (p.in.now >= at) {
    finish(p, false, reason::kDeadlineExceeded,
           "job was active longer than spec.runPolicy.activeDeadlineSeconds=" + std::to_string(*limit));
    return true;
  }
  p.requeue_in(static_cast<double>(at - p.in.now));
  return false;
}

}  // namespace ppu::op::detail::policy
