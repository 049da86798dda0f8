// What the operator's informer caches keep of the objects they watch. At 100 jobs × 32 ranks the
// pod cache dominates the operator's memory, and nothing reads a cached pod's spec but the node
// it is bound to: the reconciler decides from metadata (name, labels, uid, deletionTimestamp),
// spec.nodeName and status (phase, conditions, container states, podIP), and rebuilds the spec
// it wants from the PPUJob.
#pragma once

#include "kube/kube_api.h"

namespace ppu::op {

// Drops the spec but spec.nodeName, and the status fields the operator never reads (images, host
// addresses, QoS class).
void prune_pod(json& pod);
// An export Job (reconcile/export_job.h) is read by its metadata (uid, annotations,
// deletionTimestamp) and status conditions: its spec, a whole pod template, is dropped.
void prune_job(json& job);
// A Node is read for one thing: its Ready condition (reconcile/node_health.h). Kept: metadata's
// name, uid, resourceVersion and deletionTimestamp, and status.conditions of type Ready; the rest
// (images, addresses, capacity, labels, taints) is dropped.
void prune_node(json& node);

}  // namespace ppu::op
