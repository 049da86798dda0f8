// Action: one change the reconciler asks for. Reconcile is pure (state in, actions out) and the
// executor carries actions out in order; UpdateStatus always comes first, guarded by the job's
// resourceVersion, so a stale view of the job aborts the pass (409) instead of acting twice.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ppu::op {

enum class ActionKind {
  UpdateStatus,  // PUT the job's status subresource (body = the whole job with the new status)
  Create,        // POST body to `resource` (AlreadyExists is success: creation is idempotent by name)
  Patch,         // JSON merge patch `body` onto resource/name
  Delete,        // DELETE resource/name, only the incarnation with uid body["uid"] if given
                 // (NotFound and a uid mismatch are success: the object we saw is gone)
  DeleteJob,     // DELETE the PPUJob itself (TTL after finish)
  Event,         // record a core/v1 Event on the job
};

struct Action {
  ActionKind kind;
  std::string resource;  // "pods", "services", "configmaps", "ppujobs"
  std::string name;
  nlohmann::json body;
  std::string event_type;  // Normal | Warning
  std::string reason;
  std::string message;
};

struct Decision {
  std::vector<Action> actions;
  double requeue_after_s = -1;  // < 0: no timed requeue (watch events will trigger the next pass)
  bool gang_restart = false;    // this pass tears the gang down for a restart (restartCount + 1)
};

const char* to_string(ActionKind k);

}  // namespace ppu::op
