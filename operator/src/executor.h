// Executor: carries out a reconcile Decision against the API server, in order. Creation is
// idempotent (409 AlreadyExists = done) and deletion too (404 = done). A 409 Conflict on the
// status update means our view of the job was stale: the remaining actions are skipped and
// the result says so, so the caller re-reads (from the informer) and retries.
#pragma once

#include <string>

#include "actions.h"
#include "kube_client.h"

namespace ppu::op {

struct ExecResult {
  bool ok = true;
  bool conflict = false;
  std::string error;
  int created = 0, deleted = 0;
};

class Executor {
 public:
  explicit Executor(KubeClient& client, std::string component = "ppu-operator")
      : client_(client), component_(std::move(component)) {}
  ExecResult execute(const json& job, const Decision& d);

 private:
  bool record_event(const json& job, const Action& a);
  KubeClient& client_;
  std::string component_;
};

}  // namespace ppu::op
