#include "controller/executor.h"

#include <spdlog/spdlog.h>

#include "kube/rfc3339.h"

namespace ppu::op {

std::optional<CreationRefusal> as_refusal(ResourceKind kind, const std::string& name, const Response& r) {
  const std::string msg = r.body.is_object() ? r.body.value("message", r.error) : r.error;
  const bool webhook =
      msg.find("admission webhook") != std::string::npos || msg.find("calling webhook") != std::string::npos;
  const bool refused =
      (r.status >= 400 && r.status < 500 && r.status != 409 && r.status != 429) || (r.status == 500 && webhook);
  if (!refused) return std::nullopt;
  std::string reason;
  if (r.status == 403 && msg.find("exceeded quota") != std::string::npos) reason = "QuotaExceeded";
  else if (r.status == 403 && msg.find("violates PodSecurity") != std::string::npos) reason = "PodSecurity";
  else if (webhook) reason = "AdmissionWebhook";
  else if (r.body.is_object() && !r.body.value("reason", std::string()).empty()) reason = r.body["reason"];
  else reason = "HTTP" + std::to_string(r.status);
  return CreationRefusal{kind, name, r.status, reason, msg};
}

bool Executor::record_event(const json& job, const RecordEvent& e) {
  const json& md = job["metadata"];
  const std::string ns = md.value("namespace", std::string("default"));
  const std::string now = format_rfc3339(now_seconds());
  const ResourceInfo& ppujob = resource(ResourceKind::PPUJob);
  const ResourceInfo& event = resource(ResourceKind::Event);
  json ev = {{"apiVersion", event.api_version()},
             {"kind", event.kind},
             {"metadata", {{"generateName", md["name"].get<std::string>() + "."}, {"namespace", ns}}},
             {"involvedObject",
              {{"apiVersion", job.value("apiVersion", ppujob.api_version())},
               {"kind", job.value("kind", std::string(ppujob.kind))},
               {"name", md["name"]},
               {"namespace", ns},
               {"uid", md.value("uid", std::string())},
               {"resourceVersion", md.value("resourceVersion", std::string())}}},
             {"reason", e.reason},
             {"message", e.message.substr(0, 1024)},
             {"type", e.type},
             {"count", 1},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"source", {{"component", component_}}},
             {"reportingComponent", component_}};
  Response r = client_.create(ResourceKind::Event, ns, ev);
  if (!r.ok()) spdlog::warn("event {} for {}/{}: {}", e.reason, ns, md["name"].get<std::string>(), r.describe());
  return r.ok();  // events are best effort: never fail a reconcile over one
}

ExecResult Executor::execute(const json& job, const Decision& d) {
  ExecResult res;
  const std::string ns = job["metadata"].value("namespace", std::string("default"));
  for (const Action& a : d.actions) {
    bool end_pass = false;  // set when the rest of the pass must be skipped, `res` as it is
    // The server's answer, or none for what cannot fail the pass (events).
    const std::optional<Response> answer =
        std::visit(Overloaded{
                       [&](const UpdateStatus& u) -> std::optional<Response> {
                         // PUT carries metadata.resourceVersion: the server refuses it if the job moved on.
                         json body = job;
                         body["status"] = u.status;
                         Response r = client_.replace(ResourceKind::PPUJob, ns, u.name, body, "status");
                         if (r.status == 409) {
                           res.ok = false;
                           res.conflict = true;
                           res.error = "status update conflict: " + r.describe();
                           end_pass = true;
                         } else if (r.status == 404) {
                           end_pass = true;  // job deleted meanwhile: nothing left to do
                         }
                         return r;
                       },
                       [&](const CreateObject& c) -> std::optional<Response> {
                         Response r = client_.create(c.kind, ns, c.object);
                         if (r.status == 409) r.status = 200;  // AlreadyExists: a previous pass (or operator) made it
                         else if (r.ok()) res.created++;
                         else res.refusal = as_refusal(c.kind, c.name, r);
                         return r;
                       },
                       [&](const PatchObject& p) -> std::optional<Response> {
                         return client_.merge_patch(p.kind, ns, p.name, p.patch);
                       },
                       [&](const PatchStatusOf& p) -> std::optional<Response> {
                         // A 409 (Kueue changed the Workload meanwhile) fails the pass: the next
                         // one reads the new state.
                         return client_.merge_patch(p.kind, ns, p.name, p.patch, "status");
                       },
                       [&](const DeleteObject& del) -> std::optional<Response> {
                         const int64_t grace = del.grace_period_seconds;  // 0: a force deletion
                         Response r = client_.remove(del.kind, ns, del.name, "Background", del.uid, grace);
                         if (r.status == 404 || r.status == 409) r.status = 200;
                         else if (r.ok()) res.deleted++;
                         return r;
                       },
                       [&](const DeletePPUJob& j) -> std::optional<Response> {
                         Response r = client_.remove(ResourceKind::PPUJob, ns, j.name, "Background");
                         if (r.status == 404) r.status = 200;
                         return r;
                       },
                       [&](const RecordEvent& e) -> std::optional<Response> {
                         record_event(job, e);
                         return std::nullopt;
                       },
                   },
                   a);
    if (end_pass) return res;
    if (answer && !answer->ok()) {
      res.ok = false;
      res.error = describe(a) + ": " + answer->describe();
      return res;
    }
  }
  return res;
}

}  // namespace ppu::op
