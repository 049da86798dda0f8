#include "reconcile/object_builder.h"

#include <cmath>

#include "core/config.h"
#include "core/job_contract.h"
#include "core/slice_plan.h"
#include "kube/kube_words.h"
#include "kube/typed_object.h"
#include "reconcile/spec_passthrough_keys.h"

#include <yaml-cpp/yaml.h>

namespace ppu::op {

namespace {

// JSON → YAML node, keeping integers integers (ppu-train rejects "4.0" for an int key).
YAML::Node to_yaml(const json& v) {
  YAML::Node n;
  switch (v.type()) {
    case json::value_t::object:
      n = YAML::Node(YAML::NodeType::Map);
      for (auto it = v.begin(); it != v.end(); ++it) n[it.key()] = to_yaml(it.value());
      break;
    case json::value_t::array:
      n = YAML::Node(YAML::NodeType::Sequence);
      for (const auto& e : v) n.push_back(to_yaml(e));
      break;
    case json::value_t::string: n = v.get<std::string>(); break;
    case json::value_t::boolean: n = v.get<bool>(); break;
    case json::value_t::number_integer: n = v.get<int64_t>(); break;
    case json::value_t::number_unsigned: n = v.get<uint64_t>(); break;
    case json::value_t::number_float: n = v.get<double>(); break;
    default: break;  // null stays an empty node
  }
  return n;
}

json labels_for(const JobSpec& j) { return json{{kJobLabel, j.name}}; }

json env(const std::string& name, const std::string& value) { return json{{"name", name}, {"value", value}}; }

// A claimName becomes a PVC source; otherwise the given volume source, else an emptyDir.
json volume_from(const std::string& name, const json& ref) {
  json vol = {{"name", name}};
  if (ref.is_object() && ref.contains("claimName")) {
    vol["persistentVolumeClaim"] = {{"claimName", ref["claimName"]}};
  } else if (ref.is_object() && ref.contains("volumeSource") && ref["volumeSource"].is_object() &&
             !ref["volumeSource"].empty()) {
    for (auto it = ref["volumeSource"].begin(); it != ref["volumeSource"].end(); ++it) vol[it.key()] = it.value();
  } else {
    vol["emptyDir"] = json::object();
  }
  return vol;
}

// Live recovery survives a lost node only while every slice keeps a live owner: a preferred
// anti-affinity between the pods of one slice asks the scheduler to put its owners on
// different nodes (kept beside the user's own terms; preferred, so a lost node's ranks still
// come back on the nodes that are left).
void spread_slice_owners(json& pod_spec, const JobSpec& j, int slice) {
  json term = {{"weight", 100},
               {"podAffinityTerm",
                {{"topologyKey", "kubernetes.io/hostname"},
                 {"labelSelector", {{"matchLabels", {{kJobLabel, j.name}, {kSliceLabel, std::to_string(slice)}}}}}}}};
  json& preferred = pod_spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  if (!preferred.is_array()) preferred = json::array();
  preferred.push_back(std::move(term));
}

}  // namespace

json owner_reference(const JobSpec& j) {
  return typed_object(ResourceKind::PPUJob,
                      {{"name", j.name}, {"uid", j.uid}, {"controller", true}, {"blockOwnerDeletion", true}});
}

json object_metadata(const JobSpec& j, const std::string& name) {
  return json{{"name", name},
              {"namespace", j.ns},
              {"labels", labels_for(j)},
              {"ownerReferences", json::array({owner_reference(j)})}};
}

JobVolumes job_volumes(const JobSpec& j) {
  const json& s = j.spec;
  JobVolumes v;
  v.mounts.push_back({{"name", "checkpoints"}, {"mountPath", kCheckpointPath}});
  v.volumes.push_back(volume_from("checkpoints", s.value(passthrough::kCheckpoint, json())));
  if (s.contains(passthrough::kData) && s[passthrough::kData].is_object()) {
    const json& data = s[passthrough::kData];
    v.mounts.push_back(
        {{"name", "data"}, {"mountPath", data.value("mountPath", std::string(kDataPath))}, {"readOnly", true}});
    v.volumes.push_back(volume_from("data", data));
  }
  // The root filesystem is read-only by default: /tmp is where anything else may write.
  v.mounts.push_back({{"name", "tmp"}, {"mountPath", kTmpPath}});
  v.volumes.push_back({{"name", "tmp"}, {"emptyDir", json::object()}});
  return v;
}

json container_security_context(const JobSpec& j) {
  // Given security contexts replace the defaults whole (no merging): what you write is what runs.
  const json& s = j.spec;
  return s.contains(passthrough::kSecurityContext) && s[passthrough::kSecurityContext].is_object()
             ? s[passthrough::kSecurityContext]
             : default_container_security_context();
}

json pod_settings(const JobSpec& j) {
  const json& s = j.spec;
  json out = {{"securityContext",
               s.contains(passthrough::kPodSecurityContext) && s[passthrough::kPodSecurityContext].is_object()
                   ? s[passthrough::kPodSecurityContext]
                   : default_pod_security_context()},
              // Our binaries never call the API server: no token in the pod unless asked for.
              {"automountServiceAccountToken", false}};
  const json sched = s.value(passthrough::kScheduling, json::object());
  for (const char* k : {"schedulerName", "priorityClassName", "serviceAccountName", "automountServiceAccountToken",
                        "nodeSelector", "tolerations", "affinity"})
    if (sched.contains(k)) out[k] = sched[k];
  return out;
}

std::string render_training_config(const JobSpec& j) {
  json training = j.spec.value("training", json::object());
  training["ranks"] = slots(j);
  // An elastic job: the runtime resizes within [min_ranks, WORLD_SIZE] (docs/RESIZE.md).
  if (j.elastic) training["network"]["min_ranks"] = j.elastic->min_replicas;
  YAML::Emitter out;
  out << to_yaml(training);
  return std::string(out.c_str()) + "\n";
}

json config_map_data(const JobSpec& j) {
  json data = {{kConfigKey, render_training_config(j)}};
  if (j.elastic) data[kDesiredRanksKey] = std::to_string(j.replicas);
  return data;
}

json build_config_map(const JobSpec& j) {
  return typed_object(ResourceKind::ConfigMap,
                      {{"metadata", object_metadata(j, config_map_name(j))}, {"data", config_map_data(j)}});
}

json build_service(const JobSpec& j) {
  // Headless and publishing not-ready addresses: ranks must resolve rank 0 before any is ready.
  return typed_object(ResourceKind::Service,
                      {{"metadata", object_metadata(j, service_name(j))},
                       {"spec",
                        {{"clusterIP", kHeadlessClusterIP},
                         {"publishNotReadyAddresses", true},
                         {"selector", labels_for(j)},
                         {"ports", json::array({{{"name", "rendezvous"}, {"port", j.master_port}},
                                                {{"name", "metrics"}, {"port", j.metrics_port}}})}}}});
}

json default_pod_security_context() {
  // fsGroup makes the checkpoint volume writable by the uid; OnRootMismatch skips the recursive
  // chown of a large checkpoint PVC when its root already has the right group.
  return json{{"runAsNonRoot", true},
              {"runAsUser", kRunAsUser},
              {"runAsGroup", kRunAsUser},
              {"fsGroup", kRunAsUser},
              {"fsGroupChangePolicy", "OnRootMismatch"},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

json default_container_security_context() {
  return json{{"allowPrivilegeEscalation", false},
              {"readOnlyRootFilesystem", true},
              {"runAsNonRoot", true},
              {"capabilities", {{"drop", json::array({"ALL"})}}}};
}

json build_network_policy(const JobSpec& j, const std::vector<std::string>& metrics_namespaces) {
  json ingress = json::array({{{"from", json::array({{{"podSelector", {{"matchLabels", labels_for(j)}}}}})}}});
  if (!metrics_namespaces.empty())
    ingress.push_back(
        {{"from", json::array({{{"namespaceSelector",
                                 {{"matchExpressions", json::array({{{"key", "kubernetes.io/metadata.name"},
                                                                     {"operator", "In"},
                                                                     {"values", metrics_namespaces}}})}}}}})},
         {"ports", json::array({{{"protocol", "TCP"}, {"port", j.metrics_port}}})}});
  return typed_object(ResourceKind::NetworkPolicy, {{"metadata", object_metadata(j, network_policy_name(j))},
                                                    {"spec",
                                                     {{"podSelector", {{"matchLabels", labels_for(j)}}},
                                                      {"policyTypes", json::array({"Ingress"})},
                                                      {"ingress", ingress}}}});
}

std::vector<int> shared_slices(const JobSpec& j) {
  std::vector<int> slices;
  if (!j.training) return slices;
  try {
    for (int rank = 0; rank < j.replicas; ++rank) {
      const SlicePlan plan = SlicePlan::from_config(*j.training, j.replicas, rank);
      if (plan.slices() < 2 || plan.slices() >= j.replicas) return {};
      slices.push_back(plan.slice_index());
    }
  } catch (const std::exception&) {  // a plan the runtime refuses (it exits 2 naming why)
    return {};
  }
  return slices;
}

// How long the kubelet waits between a rank pod's SIGTERM and its SIGKILL (a deletion, a drain,
// an eviction, a preemption): the rank's own bound on acting on a notice, checkpoint.notice_s
// (train to the round boundary, save the job's state there), plus 5 s to write it and exit.
int64_t termination_grace_seconds(const JobSpec& j) {
  const double notice = j.training ? j.training->checkpoint.notice_s : CheckpointConfig{}.notice_s;
  return static_cast<int64_t>(std::ceil(notice)) + 5;
}

namespace {
// A rank whose process is frozen (SIGSTOP, a paused VM) still holds its pod: its metrics server
// stops answering, the kubelet ends it, and (restartPolicy Never) the pod fails like a lost rank,
// so that the operator replaces it. Startup (data, rendezvous) may take minutes before the first
// answer: the startup probe waits that long, the liveness probe then allows 30 s without one.
json metrics_probe(int period_s, int failures) {
  return {{"httpGet", {{"path", "/metrics"}, {"port", "metrics"}}},
          {"periodSeconds", period_s},
          {"timeoutSeconds", 5},
          {"failureThreshold", failures}};
}
}  // namespace

json checkpoint_secret_env(const JobSpec& j) {
  if (!j.checkpoint_secret) return json::array();
  return json::array({{{"secretRef", {{"name", *j.checkpoint_secret}}}}});
}

json build_pod(const JobSpec& j, int rank, int restart, const std::vector<int>& slices) {
  const json& s = j.spec;
  json md = object_metadata(j, pod_name(j, rank));
  md["labels"][kRankLabel] = std::to_string(rank);
  std::optional<int> slice;
  if (rank >= 0 && rank < static_cast<int>(slices.size())) slice = slices[rank];
  if (slice) md["labels"][kSliceLabel] = std::to_string(*slice);
  md["annotations"] = {{"ppu.dev/restart", std::to_string(restart)}};

  json envs = json::array(
      {env(contract::env::kRank, std::to_string(rank)), env(contract::env::kWorldSize, std::to_string(slots(j))),
       env(contract::env::kMasterAddr, master_addr(j)), env(contract::env::kMasterPort, std::to_string(master_port(j))),
       env(contract::env::kConfig, kConfigPath), env(contract::env::kRunId, run_id(j)),
       env(contract::env::kMetricsPort, std::to_string(j.metrics_port))});
  // Checkpoints on the volume, unless the training section names an S3 location (which this
  // variable would override).
  if (!checkpoints_in_object_storage(j)) envs.push_back(env(contract::env::kCheckpointDir, kCheckpointPath));
  // The store is the rendezvous pod's (rendezvous.h), so it outlives any rank, rank 0 included.
  if (j.recovery == Recovery::Live) envs.push_back(env(contract::env::kExternalStore, "1"));
  if (s.contains(passthrough::kEnv) && s[passthrough::kEnv].is_array())
    for (const auto& e : s[passthrough::kEnv]) envs.push_back(e);

  const JobVolumes shared = job_volumes(j);
  json mounts = json::array({{{"name", "ppu-config"}, {"mountPath", kConfigDir}, {"readOnly", true}}});
  json volumes = json::array({{{"name", "ppu-config"}, {"configMap", {{"name", config_map_name(j)}}}}});
  for (const auto& m : shared.mounts) mounts.push_back(m);
  for (const auto& v : shared.volumes) volumes.push_back(v);

  json container = {{"name", contract::kTrainBinary},
                    {"image", j.image},
                    {"command", s.value(passthrough::kCommand, json::array({contract::kTrainBinary}))},
                    {"env", envs},
                    {"ports", json::array({{{"name", "rendezvous"}, {"containerPort", j.master_port}},
                                           {{"name", "metrics"}, {"containerPort", j.metrics_port}}})},
                    {"volumeMounts", mounts},
                    {"terminationMessagePath", contract::kTerminationLog},
                    {"terminationMessagePolicy", kTerminationMessagePolicy},
                    {"startupProbe", metrics_probe(5, 120)},
                    {"livenessProbe", metrics_probe(10, 3)}};
  if (const json from = checkpoint_secret_env(j); !from.empty()) container["envFrom"] = from;
  if (s.contains(passthrough::kArgs)) container["args"] = s[passthrough::kArgs];
  if (s.contains(passthrough::kResources)) container["resources"] = s[passthrough::kResources];
  if (s.contains(passthrough::kImagePullPolicy)) container["imagePullPolicy"] = s[passthrough::kImagePullPolicy];
  container["securityContext"] = container_security_context(j);

  json spec = pod_settings(j);
  spec["restartPolicy"] = "Never";
  spec["terminationGracePeriodSeconds"] = termination_grace_seconds(j);
  spec["hostname"] = pod_name(j, rank);
  spec["subdomain"] = service_name(j);
  spec["containers"] = json::array({container});
  spec["volumes"] = volumes;
  if (slice && j.recovery == Recovery::Live) spread_slice_owners(spec, j, *slice);

  return typed_object(ResourceKind::Pod, {{"metadata", md}, {"spec", spec}});
}

json build_rank_pod_template(const JobSpec& j) {
  json pod = build_pod(j, 0, 0, /*slices=*/{});
  pod["metadata"]["labels"].erase(kRankLabel);
  pod["spec"].erase("hostname");
  return pod;
}

}  // namespace ppu::op
