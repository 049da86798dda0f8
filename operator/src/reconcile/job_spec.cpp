#include "reconcile/job_spec.h"

#include "core/job_contract.h"

namespace ppu::op {

namespace {
template <typename T>
T value_or(const json& obj, const char* key, T fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  return it->get<T>();
}
}  // namespace

JobSpec parse_job(const json& job) {
  JobSpec j;
  const json& md = job.at("metadata");
  j.ns = value_or<std::string>(md, "namespace", "default");
  j.name = md.at("name").get<std::string>();
  j.uid = value_or<std::string>(md, "uid", "");
  j.generation = value_or<int64_t>(md, "generation", 0);
  if (const auto labels = md.value("labels", json::object()); labels.is_object()) {
    j.queue_name = value_or<std::string>(labels, kQueueNameLabel, "");
    j.priority_class = value_or<std::string>(labels, kPriorityClassLabel, "");
  }
  j.spec = job.value("spec", json::object());
  j.replicas = value_or<int>(j.spec, "replicas", 1);
  j.image = value_or<std::string>(j.spec, "image", "");
  j.master_port = value_or<int>(j.spec, "masterPort", contract::kRendezvousPort);
  j.metrics_port = value_or<int>(j.spec, "metricsPort", 9100);
  const json rp = j.spec.value("runPolicy", json::object());
  j.run_policy.backoff_limit = value_or<int>(rp, "backoffLimit", 3);
  j.run_policy.max_recoveries = value_or<int>(rp, "maxRecoveries", j.run_policy.max_recoveries);
  j.run_policy.recovery_window_seconds =
      value_or<int64_t>(rp, "recoveryWindowSeconds", j.run_policy.recovery_window_seconds);
  j.run_policy.recovery_backoff_seconds =
      value_or<int64_t>(rp, "recoveryBackoffSeconds", j.run_policy.recovery_backoff_seconds);
  j.run_policy.recovery_backoff_max_seconds =
      value_or<int64_t>(rp, "recoveryBackoffMaxSeconds", j.run_policy.recovery_backoff_max_seconds);
  // The one source of the policy is the training config the ranks read (network.recovery).
  const json training = j.spec.value("training", json::object());
  const json network = training.is_object() ? training.value("network", json::object()) : json::object();
  j.recovery = value_or<std::string>(network, "recovery", "gang") == "live" ? Recovery::Live : Recovery::Gang;
  if (rp.contains("activeDeadlineSeconds") && !rp["activeDeadlineSeconds"].is_null())
    j.run_policy.active_deadline_seconds = rp["activeDeadlineSeconds"].get<int64_t>();
  if (rp.contains("ttlSecondsAfterFinished") && !rp["ttlSecondsAfterFinished"].is_null())
    j.run_policy.ttl_seconds_after_finished = rp["ttlSecondsAfterFinished"].get<int64_t>();
  j.run_policy.clean_pod_policy = value_or<std::string>(rp, "cleanPodPolicy", "Running");
  j.run_policy.suspend = value_or<bool>(rp, "suspend", false);
  if (j.spec.contains("export") && j.spec["export"].is_object()) {
    const json& x = j.spec["export"];
    ExportSpec e;
    e.format = value_or<std::string>(x, "format", e.format);
    e.dtype = value_or<std::string>(x, "dtype", e.dtype);
    e.path = value_or<std::string>(x, "path", e.path);
    e.active_deadline_seconds = value_or<int64_t>(x, "activeDeadlineSeconds", e.active_deadline_seconds);
    if (x.contains("resources") && x["resources"].is_object()) e.resources = x["resources"];
    j.model_export = e;
  }
  return j;
}

std::string service_name(const JobSpec& j) { return j.name; }
std::string config_map_name(const JobSpec& j) { return j.name + "-config"; }
std::string network_policy_name(const JobSpec& j) { return j.name; }
std::string export_job_name(const JobSpec& j) { return j.name + "-export"; }
std::string export_network_policy_name(const JobSpec& j) { return j.name + ".export"; }
std::string pod_name(const JobSpec& j, int rank) { return j.name + "-rank-" + std::to_string(rank); }
std::string run_id(const JobSpec& j) { return j.ns + "-" + j.name + "-" + j.uid.substr(0, 8); }
std::string rendezvous_name(const JobSpec& j) { return j.name + "-rendezvous"; }

std::string master_addr(const JobSpec& j) {
  if (j.recovery == Recovery::Live) return rendezvous_name(j) + "." + j.ns + ".svc";
  return pod_name(j, 0) + "." + service_name(j) + "." + j.ns + ".svc";
}

int master_port(const JobSpec& j) { return j.recovery == Recovery::Live ? contract::kRendezvousPort : j.master_port; }

std::optional<int> pod_rank(const json& pod) {
  const json* labels = nullptr;
  if (pod.contains("metadata") && pod["metadata"].contains("labels")) labels = &pod["metadata"]["labels"];
  if (!labels || !labels->contains(kRankLabel)) return std::nullopt;
  const std::string s = (*labels)[kRankLabel].get<std::string>();
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(s);
}

}  // namespace ppu::op
