#include "executor.h"

#include <spdlog/spdlog.h>

#include "rfc3339.h"

namespace ppu::op {

std::optional<CreationRefusal> as_refusal(const std::string& resource, const std::string& name, const Response& r) {
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
  return CreationRefusal{resource, name, r.status, reason, msg};
}

bool Executor::record_event(const json& job, const Action& a) {
  const json& md = job["metadata"];
  const std::string ns = md.value("namespace", std::string("default"));
  const std::string now = format_rfc3339(now_seconds());
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"generateName", md["name"].get<std::string>() + "."}, {"namespace", ns}}},
             {"involvedObject",
              {{"apiVersion", job.value("apiVersion", std::string("ppu.dev/v1alpha1"))},
               {"kind", job.value("kind", std::string("PPUJob"))},
               {"name", md["name"]},
               {"namespace", ns},
               {"uid", md.value("uid", std::string())},
               {"resourceVersion", md.value("resourceVersion", std::string())}}},
             {"reason", a.reason},
             {"message", a.message.substr(0, 1024)},
             {"type", a.event_type},
             {"count", 1},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"source", {{"component", component_}}},
             {"reportingComponent", component_}};
  Response r = client_.create(resources::events, ns, ev);
  if (!r.ok()) spdlog::warn("event {} for {}/{}: {}", a.reason, ns, md["name"].get<std::string>(), r.describe());
  return r.ok();  // events are best effort: never fail a reconcile over one
}

ExecResult Executor::execute(const json& job, const Decision& d) {
  ExecResult res;
  const std::string ns = job["metadata"].value("namespace", std::string("default"));
  for (const Action& a : d.actions) {
    Response r;
    switch (a.kind) {
      case ActionKind::UpdateStatus:
        // PUT carries metadata.resourceVersion: the server refuses it if the job moved on.
        r = client_.replace(resources::ppujobs, ns, a.name, a.body, "status");
        if (r.status == 409) {
          res.ok = false;
          res.conflict = true;
          res.error = "status update conflict: " + r.describe();
          return res;
        }
        if (r.status == 404) return res;  // job deleted meanwhile: nothing left to do
        break;
      case ActionKind::Create:
        r = client_.create(resources::by_plural(a.resource), ns, a.body);
        if (r.status == 409) r.status = 200;  // AlreadyExists: a previous pass (or operator) made it
        else if (r.ok()) res.created++;
        else res.refusal = as_refusal(a.resource, a.name, r);
        break;
      case ActionKind::Patch: r = client_.merge_patch(resources::by_plural(a.resource), ns, a.name, a.body); break;
      case ActionKind::Delete:
        r = client_.remove(resources::by_plural(a.resource), ns, a.name, "Background",
                           a.body.is_object() ? a.body.value("uid", std::string()) : std::string());
        if (r.status == 404 || r.status == 409) r.status = 200;
        else if (r.ok()) res.deleted++;
        break;
      case ActionKind::DeleteJob:
        r = client_.remove(resources::ppujobs, ns, a.name, "Background");
        if (r.status == 404) r.status = 200;
        break;
      case ActionKind::Event: record_event(job, a); continue;
    }
    if (!r.ok()) {
      res.ok = false;
      res.error = std::string(to_string(a.kind)) + " " + a.resource + "/" + a.name + ": " + r.describe();
      return res;
    }
  }
  return res;
}

}  // namespace ppu::op
