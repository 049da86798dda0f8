// What the operator's informer caches keep of the objects they watch. At 100 jobs × 32 ranks the
// pod cache dominates the operator's memory, and nothing reads a cached pod's spec: the
// reconciler decides from metadata (name, labels, uid, deletionTimestamp) and status (phase,
// conditions, container states, podIP), and rebuilds the spec it wants from the PPUJob.
#pragma once

#include "kube/kube_api.h"

namespace ppu::op {

// Drops spec and the status fields the operator never reads (images, host addresses, QoS class).
void prune_pod(json& pod);
// An export Job (reconcile/export_job.h) is read by its metadata (uid, annotations,
// deletionTimestamp) and status conditions: its spec, a whole pod template, is dropped.
void prune_job(json& job);

}  // namespace ppu::op
