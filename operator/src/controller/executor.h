// Executor: carries out a reconcile Decision against the API server, in order, visiting each
// action (reconcile/actions.h). Creation is idempotent (409 AlreadyExists = done) and deletion
// too (404 = done). A 409 Conflict on the status update means our view of the job was stale:
// the remaining actions are skipped and the result says so, so the caller re-reads (from the
// informer) and retries. A creation the server refuses for a reason retrying soon will not fix
// (admission, quota, validation) is returned as `refusal`, which the controller feeds to the
// next reconcile (PodCreationFailed).
#pragma once

#include <optional>
#include <string>

#include "kube/kube_api.h"
#include "reconcile/actions.h"
#include "reconcile/reconciler.h"

namespace ppu::op {

struct ExecResult {
  bool ok = true;
  bool conflict = false;
  std::string error;
  int created = 0, deleted = 0;
  std::optional<CreationRefusal> refusal;
};

// A failed create as a refusal: 4xx other than 409/429, and 500 from a failing admission
// webhook; nullopt for transient failures (no response, 409, 429, other 5xx). The reason names
// the cause: QuotaExceeded, PodSecurity, AdmissionWebhook, Forbidden, Invalid, or the Status reason.
std::optional<CreationRefusal> as_refusal(ResourceKind kind, const std::string& name, const Response& r);

class Executor {
 public:
  explicit Executor(KubeApi& client, std::string component = "ppu-operator")
      : client_(client), component_(std::move(component)) {}
  ExecResult execute(const json& job, const Decision& d);

 private:
  bool record_event(const json& job, const RecordEvent& e);
  KubeApi& client_;
  std::string component_;
};

}  // namespace ppu::op
