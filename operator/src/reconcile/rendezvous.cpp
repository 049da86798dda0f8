#include "reconcile/rendezvous.h"

#include <string>

#include "core/job_contract.h"
#include "kube/kube_words.h"
#include "kube/typed_object.h"
#include "reconcile/object_builder.h"
#include "reconcile/spec_passthrough_keys.h"

namespace ppu::op {

namespace {
json selector_for(const JobSpec& j) { return json{{kJobLabel, j.name}, {kRoleLabel, kRendezvousRole}}; }
}  // namespace

json build_rendezvous_pod(const JobSpec& j, int restart) {
  const json& s = j.spec;
  json md = object_metadata(j, rendezvous_name(j));
  md["labels"][kRoleLabel] = kRendezvousRole;
  md["annotations"] = {{"ppu.dev/restart", std::to_string(restart)}};
  if (j.elastic) md["annotations"][kDesiredRanksAnnotation] = std::to_string(j.replicas);

  const int port = contract::kRendezvousPort;
  json container = {
      {"name", kRendezvousContainer},
      {"image", j.image},
      {"command", j.elastic ? json::array({contract::kRendezvousBinary, "--port", std::to_string(port),
                                           "--desired-file", kDesiredRanksPath})
                            : json::array({contract::kRendezvousBinary, "--port", std::to_string(port)})},
      {"ports", json::array({{{"name", "rendezvous"}, {"containerPort", port}}})},
      // A key-value store of a few keys per rank: a tenth of a core and a little memory.
      {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}, {"limits", {{"memory", "256Mi"}}}}},
      {"volumeMounts", json::array({{{"name", "tmp"}, {"mountPath", kTmpPath}}})},
      {"terminationMessagePath", contract::kTerminationLog},
      {"terminationMessagePolicy", kTerminationMessagePolicy},
      // A stopped or wedged store accepts connections but answers nothing: only a request tells.
      // Two probes without an answer restart it in place; the ranks ride that out.
      {"livenessProbe",
       {{"exec",
         {{"command", json::array({contract::kRendezvousBinary, "--probe", "127.0.0.1:" + std::to_string(port),
                                   "--timeout", "5"})}}},
        {"periodSeconds", 10},
        {"timeoutSeconds", 15},
        {"failureThreshold", 2}}}};
  if (s.contains(passthrough::kImagePullPolicy)) container["imagePullPolicy"] = s[passthrough::kImagePullPolicy];
  container["securityContext"] = container_security_context(j);

  json spec = pod_settings(j);
  spec["restartPolicy"] = "Always";  // restarted in place, empty: the ranks rebuild its keys
  spec["containers"] = json::array({container});
  spec["volumes"] = json::array({{{"name", "tmp"}, {"emptyDir", json::object()}}});
  if (j.elastic) {  // the desired size, kept in step by the kubelet (ppu-rendezvous --desired-file)
    spec["volumes"].push_back({{"name", "ppu-config"}, {"configMap", {{"name", config_map_name(j)}}}});
    spec["containers"][0]["volumeMounts"].push_back(
        {{"name", "ppu-config"}, {"mountPath", kConfigDir}, {"readOnly", true}});
  }
  return typed_object(ResourceKind::Pod, {{"metadata", md}, {"spec", spec}});
}

json build_rendezvous_service(const JobSpec& j) {
  const int port = contract::kRendezvousPort;
  return typed_object(ResourceKind::Service,
                      {{"metadata", object_metadata(j, rendezvous_name(j))},
                       {"spec",
                        // Headless: the name resolves to the store pod's own IP (no kube-proxy
                        // needed), published before it is ready, as rank 0's is for gang jobs.
                        {{"clusterIP", kHeadlessClusterIP},
                         {"selector", selector_for(j)},
                         {"publishNotReadyAddresses", true},
                         {"ports", json::array({{{"name", "rendezvous"}, {"port", port}, {"targetPort", port}}})}}}});
}

bool is_rendezvous_pod(const json& pod) {
  if (!pod.contains("metadata") || !pod["metadata"].contains("labels")) return false;
  const json& labels = pod["metadata"]["labels"];
  return labels.contains(kRoleLabel) && labels[kRoleLabel] == kRendezvousRole;
}

}  // namespace ppu::op
