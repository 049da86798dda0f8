#include "reconcile/node_health.h"

#include "kube/kube_words.h"
#include "kube/rfc3339.h"
#include "reconcile/job_status.h"

namespace ppu::op {

namespace {

// The node's Ready condition, or nullptr.
const json* ready_condition(const json& node) {
  if (!node.contains("status") || !node["status"].is_object()) return nullptr;
  const json& st = node["status"];
  if (!st.contains("conditions") || !st["conditions"].is_array()) return nullptr;
  for (const json& c : st["conditions"])
    if (c.is_object() && c.value("type", std::string()) == kube_condition::kReady) return &c;
  return nullptr;
}

}  // namespace

const char* to_string(NodeHealth h) {
  switch (h) {
    case NodeHealth::Ready: return kube_condition::kReady;
    case NodeHealth::NotReady: return "NotReady";
    case NodeHealth::Unreachable: return condition_status::kUnknown;  // Ready is Unknown
    case NodeHealth::Gone: return "gone";
  }
  return "?";
}

NodeHealth node_health(const json* node) {
  if (!node) return NodeHealth::Gone;
  const json* ready = ready_condition(*node);
  if (!ready) return NodeHealth::Unreachable;
  const std::string s = ready->value("status", std::string());
  if (s == condition_status::kTrue) return NodeHealth::Ready;
  if (s == condition_status::kFalse) return NodeHealth::NotReady;
  return NodeHealth::Unreachable;
}

std::string node_name(const json& pod) {
  if (!pod.contains("spec") || !pod["spec"].is_object()) return "";
  const json& n = pod["spec"].value("nodeName", json());
  return n.is_string() ? n.get<std::string>() : "";
}

StuckPod stuck_on_lost_node(const json& pod, const std::map<std::string, json>& nodes, int64_t now) {
  StuckPod out;
  out.node = node_name(pod);
  if (!pod_terminating(pod) || out.node.empty()) return out;
  auto it = nodes.find(out.node);
  const json* node = it == nodes.end() ? nullptr : &it->second;
  out.health = node_health(node);
  if (out.health == NodeHealth::Ready) return out;
  if (node)
    if (const json* ready = ready_condition(*node)) out.since = ready->value("lastTransitionTime", std::string());
  // A deletionTimestamp that does not parse is treated as passed: the pod is terminating either way.
  const json& ts = pod["metadata"]["deletionTimestamp"];
  const auto deadline = ts.is_string() ? parse_rfc3339(ts.get<std::string>()) : std::nullopt;
  if (deadline && *deadline > now) {
    out.wait_s = *deadline - now;
    return out;
  }
  out.force_delete = true;
  return out;
}

std::string describe(const StuckPod& s) {
  if (s.health == NodeHealth::Gone) return "node " + s.node + ", which no longer exists";
  return "node " + s.node + ", which is " + to_string(s.health) + (s.since.empty() ? "" : " since " + s.since);
}

}  // namespace ppu::op
