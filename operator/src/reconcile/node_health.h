// Whether a terminating pod is stuck on a node that will never finish it, and so may be
// force-deleted (docs/OPERATOR.md, "Live recovery": a lost node). A pod the API server was asked
// to delete stays in the API, Terminating, until its kubelet confirms the containers are gone; a
// kubelet that stopped answering never does, and the pod's name stays taken for ever. The
// operator force-deletes such a pod (grace period 0, uid precondition) only when all of these
// hold, and never otherwise:
//   - the pod is terminating (it has a deletionTimestamp) and its own grace period has run out
//     (deletionTimestamp <= now: a live kubelet has had all the time it was given);
//   - it is bound to a node (spec.nodeName; an unbound pod leaves the API without a kubelet);
//   - that node is NotReady (Ready=False), unreachable (Ready=Unknown, or no Ready condition at
//     all), or gone (no Node object of that name).
// A pod on a Ready node is never force-deleted: its kubelet is alive and will finish it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ppu::op {

using json = nlohmann::json;

enum class NodeHealth {
  Ready,        // condition Ready=True
  NotReady,     // Ready=False: the kubelet reports the node not ready
  Unreachable,  // Ready=Unknown (the node controller stopped hearing the kubelet), or no Ready condition
  Gone,         // no Node object of that name
};
const char* to_string(NodeHealth h);  // "Ready", "NotReady", "Unknown", "gone"

// `node` is the Node object (its status.conditions), nullptr when there is none.
NodeHealth node_health(const json* node);

// spec.nodeName of a pod; "" when it is not bound to a node.
std::string node_name(const json& pod);

// What to do about one terminating pod, given the nodes observed (by name; a name absent from
// `nodes` has no Node object) at `now`.
struct StuckPod {
  bool force_delete = false;  // all the conditions above hold
  int64_t wait_s = -1;        // its node is lost but its grace period has not run out: seconds left
  std::string node;           // spec.nodeName
  NodeHealth health = NodeHealth::Ready;
  std::string since;  // lastTransitionTime of the node's Ready condition, when known
};
StuckPod stuck_on_lost_node(const json& pod, const std::map<std::string, json>& nodes, int64_t now);
// "node n7, which is Unknown since 2026-11-27T14:04:21Z" / "node n7, which no longer exists".
std::string describe(const StuckPod& s);

}  // namespace ppu::op
