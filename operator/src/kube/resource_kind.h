// ResourceKind: the kinds of Kubernetes object the operator reads or writes, and resource(), the
// one table that says for each its API group and version, its `kind`, its plural (the URL
// segment) and whether it lives in a namespace. The client builds URLs from it, the executor
// and the policies name the objects they act on by it, the builders take apiVersion/kind from
// it. No client code here: it is vocabulary, usable by the pure reconcile logic.
#pragma once

#include <cstddef>
#include <string>

namespace ppu::op {

enum class ResourceKind {
  Pod,
  Service,
  ConfigMap,
  Event,
  Lease,
  PPUJob,
  NetworkPolicy,
  Job,  // batch/v1: the export Job
  TokenReview,
  SubjectAccessReview,
  ResourceQuota,  // read and written by the tests only
  // Kueue (--kueue): the Workload that queues a job, and the priority classes it names.
  Workload,
  WorkloadPriorityClass,
  // Read only: the node a live job's rank pod is bound to, when that pod is stuck terminating
  // (reconcile/node_health.h; --force-delete-on-lost-node).
  Node,
};

struct ResourceInfo {
  ResourceKind id;
  const char* group;    // "" = the core group (/api/v1)
  const char* version;  // "v1", "v1alpha1"
  const char* kind;     // the objects' `kind`
  const char* plural;   // the URL segment
  bool namespaced;

  std::string api_version() const;  // "v1", "batch/v1", "ppu.dev/v1alpha1"
  // /api/v1[/namespaces/<ns>]/<plural>[/<name>[/<sub>]] (the core group), /apis/<group>/<version>/... otherwise.
  std::string path(const std::string& ns, const std::string& name = "", const std::string& sub = "") const;
};

inline constexpr ResourceInfo kResources[] = {
    {ResourceKind::Pod, "", "v1", "Pod", "pods", true},
    {ResourceKind::Service, "", "v1", "Service", "services", true},
    {ResourceKind::ConfigMap, "", "v1", "ConfigMap", "configmaps", true},
    {ResourceKind::Event, "", "v1", "Event", "events", true},
    {ResourceKind::Lease, "coordination.k8s.io", "v1", "Lease", "leases", true},
    {ResourceKind::PPUJob, "ppu.dev", "v1alpha1", "PPUJob", "ppujobs", true},
    {ResourceKind::NetworkPolicy, "networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true},
    {ResourceKind::Job, "batch", "v1", "Job", "jobs", true},
    {ResourceKind::TokenReview, "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false},
    {ResourceKind::SubjectAccessReview, "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
     false},
    {ResourceKind::ResourceQuota, "", "v1", "ResourceQuota", "resourcequotas", true},
    {ResourceKind::Workload, "kueue.x-k8s.io", "v1beta2", "Workload", "workloads", true},
    {ResourceKind::WorkloadPriorityClass, "kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass",
     "workloadpriorityclasses", false},
    {ResourceKind::Node, "", "v1", "Node", "nodes", false},
};

// The table is indexed by the enum: each row sits at its own kind's position.
constexpr bool resource_table_in_order() {
  for (size_t i = 0; i < sizeof kResources / sizeof kResources[0]; ++i)
    if (static_cast<size_t>(kResources[i].id) != i) return false;
  return true;
}
static_assert(resource_table_in_order(), "kResources must list the kinds in the order of ResourceKind");

constexpr const ResourceInfo& resource(ResourceKind k) { return kResources[static_cast<size_t>(k)]; }

}  // namespace ppu::op
