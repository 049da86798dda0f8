// Action: one change the reconciler asks for, one struct per kind in a std::variant. Reconcile is
// pure (state in, actions out) and the executor carries actions out in order (std::visit);
// UpdateStatus always comes first, guarded by the job's resourceVersion, so a stale view of the
// job aborts the pass (409) instead of acting twice.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/resource_kind.h"
#include "reconcile/ppujob_status.h"

namespace ppu::op {

// PUT the job's status subresource: the job as observed (so its metadata.resourceVersion) with
// `status` in place of its own.
struct UpdateStatus {
  std::string name;  // the PPUJob's
  PPUJobStatus status;
};

// POST `object`; AlreadyExists is success (creation is idempotent by name).
struct CreateObject {
  ResourceKind kind;
  std::string name;  // object's metadata.name
  json object;
};

// JSON merge patch `patch` onto kind/name.
struct PatchObject {
  ResourceKind kind;
  std::string name;
  json patch;
};

// JSON merge patch `patch` onto kind/name's status subresource (a Kueue Workload's conditions).
struct PatchStatusOf {
  ResourceKind kind;
  std::string name;
  json patch;
};
// DELETE kind/name, only the incarnation with `uid` when it is not empty (NotFound and a uid
// mismatch are success: the object we saw is gone). grace_period_seconds >= 0 overrides the
// object's own (0: a force deletion, reconcile/node_health.h); < 0 keeps it.
struct DeleteObject {
  ResourceKind kind;
  std::string name;
  std::string uid;
  int64_t grace_period_seconds = -1;
};

// DELETE the PPUJob itself (ttlSecondsAfterFinished).
struct DeletePPUJob {
  std::string name;
};

// Record a core/v1 Event on the job.
struct RecordEvent {
  std::string type;  // event_type::kNormal | kWarning
  std::string reason;
  std::string message;
};

using Action =
    std::variant<UpdateStatus, CreateObject, PatchObject, PatchStatusOf, DeleteObject, DeletePPUJob, RecordEvent>;

struct Decision {
  std::vector<Action> actions;
  double requeue_after_s = -1;  // < 0: no timed requeue (watch events will trigger the next pass)
  bool gang_restart = false;    // this pass tears the gang down for a restart (restartCount + 1)
  // recovery live, each counted in the pass that records it in status (so once, like gang_restart):
  int force_deletions = 0;    // lost rank pods force-deleted from a lost node
  int recovery_backoffs = 0;  // replacements made to wait for their back-off
};

// The lambdas of a std::visit as one callable: std::visit(Overloaded{[](const A&) {...}, ...}, v).
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// "UpdateStatus", "Create", "Patch", "PatchStatus", "Delete", "ForceDelete" (grace period 0),
// "DeleteJob" or "Event" (logs, errors).
const char* action_name(const Action& a);
// "<name> <plural>/<object>", e.g. "Patch configmaps/demo-config"; an event: "Event <reason>".
std::string describe(const Action& a);

}  // namespace ppu::op
