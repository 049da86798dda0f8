#include "reconcile/job_spec.h"

#include <type_traits>

#include "core/job_contract.h"
#include "reconcile/object_builder.h"

namespace ppu::op {

namespace {
template <typename T>
T value_or(const json& obj, const char* key, T fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// The spec's field lists (job_spec.h) read from `obj`: a key that is absent or null, or an
// object field that is not an object, keeps the member's default (the CRD's); a value of the
// wrong type throws nlohmann's type_error.
template <class T>
void read_fields(const json& obj, T& out);

template <class T>
void read_value(const json& v, T& out) {
  if constexpr (kIsFieldStruct<T>) {
    if (v.is_object()) read_fields(v, out);
  } else if constexpr (std::is_same_v<T, json>) {
    if (v.is_object()) out = v;
  } else {
    out = v.get<T>();
  }
}
template <class T>
void read_value(const json& v, std::optional<T>& out) {
  if constexpr (kIsFieldStruct<T>) {
    if (!v.is_object()) return;
    out.emplace();
    read_fields(v, *out);
  } else {
    out = v.get<T>();
  }
}

template <class T>
void read_fields(const json& obj, T& out) {
  if (!obj.is_object()) return;
  FieldList<T>::visit(out, [&](const ApiField& field, auto& member) {
    auto it = obj.find(field.key);
    if (it != obj.end() && !it->is_null()) read_value(*it, member);
  });
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
  read_fields(j.spec, j);
  try {
    j.training = parse_config(render_training_config(j));
  } catch (const std::exception&) {  // the CRD's rules refuse most such sections at admission
  }
  j.recovery = j.training ? j.training->network.recovery : NetworkConfig{}.recovery;
  return j;
}

int slots(const JobSpec& j) { return j.elastic ? j.elastic->max_replicas : j.replicas; }
int required_replicas(const JobSpec& j) { return j.elastic ? j.elastic->min_replicas : j.replicas; }

std::string service_name(const JobSpec& j) { return j.name; }
std::string config_map_name(const JobSpec& j) { return j.name + "-config"; }
std::string network_policy_name(const JobSpec& j) { return j.name; }
std::string export_job_name(const JobSpec& j) { return j.name + "-export"; }
std::string export_network_policy_name(const JobSpec& j) { return j.name + ".export"; }
std::string pod_name(const JobSpec& j, int rank) { return j.name + "-rank-" + std::to_string(rank); }
std::string run_id(const JobSpec& j) { return j.ns + "-" + j.name + "-" + j.uid.substr(0, 8); }
std::string rendezvous_name(const JobSpec& j) { return j.name + "-rendezvous"; }

bool checkpoints_in_object_storage(const JobSpec& j) {
  return j.training && j.training->checkpoint.dir.rfind("s3://", 0) == 0;
}

std::string checkpoint_location(const JobSpec& j) {
  return checkpoints_in_object_storage(j) ? j.training->checkpoint.dir : std::string(kCheckpointPath);
}

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
