#include "kube/cache_pruning.h"
#include "kube/kube_words.h"

namespace ppu::op {

void prune_pod(json& pod) {
  if (pod.contains("spec") && pod["spec"].is_object() && pod["spec"].contains("nodeName"))
    pod["spec"] = json{{"nodeName", pod["spec"]["nodeName"]}};
  else pod.erase("spec");
  if (!pod.contains("status") || !pod["status"].is_object()) return;
  json& st = pod["status"];
  for (const char* unused : {"hostIP", "hostIPs", "podIPs", "qosClass", "initContainerStatuses"}) st.erase(unused);
  if (st.contains("containerStatuses"))
    for (json& cs : st["containerStatuses"])
      for (const char* unused : {"image", "imageID", "containerID"}) cs.erase(unused);
}

void prune_job(json& job) { job.erase("spec"); }

void prune_node(json& node) {
  json md = json::object();
  if (node.contains("metadata") && node["metadata"].is_object())
    for (const char* keep : {"name", "uid", "resourceVersion", "deletionTimestamp"})
      if (node["metadata"].contains(keep)) md[keep] = node["metadata"][keep];
  json ready = json::array();
  if (node.contains("status") && node["status"].is_object() && node["status"].contains("conditions") &&
      node["status"]["conditions"].is_array())
    for (const json& c : node["status"]["conditions"])
      if (c.is_object() && c.value("type", std::string()) == kube_condition::kReady) ready.push_back(c);
  json pruned = {{"metadata", md}, {"status", {{"conditions", ready}}}};
  for (const char* keep : {"apiVersion", "kind"})
    if (node.contains(keep)) pruned[keep] = node[keep];
  node = std::move(pruned);
}

}  // namespace ppu::op
