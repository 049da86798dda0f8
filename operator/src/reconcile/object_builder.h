// The objects one PPUJob owns, built from its spec: the training ConfigMap (spec.training
// rendered as YAML under config.yaml), the headless Service that gives every rank a stable DNS
// name, the NetworkPolicy that closes the job's ports to everyone but its own ranks (and the
// metrics port to the named monitoring namespaces), and the rank pods with the rendezvous
// environment of core/job_contract.h and a security context that passes the "restricted" Pod Security
// Standard unless spec.podSecurityContext / spec.securityContext replace it. Pure functions.
// The pieces every pod of a job shares (metadata, volumes, security, scheduling) are public:
// the export Job (export_job.h) is built from them too.
#pragma once

#include <string>
#include <vector>

#include "reconcile/job_spec.h"

namespace ppu::op {

// spec.training as the YAML ppu-train reads, with `ranks` set to the job's slots (spec.replicas, or
// an elastic job's maxReplicas, with network.min_ranks its minReplicas).
std::string render_training_config(const JobSpec& j);
// A rank pod's terminationGracePeriodSeconds: checkpoint.notice_s (rounded up) + 5.
int64_t termination_grace_seconds(const JobSpec& j);
// The ConfigMap's data: config.yaml, and an elastic job's desired size (kDesiredRanksKey).
json config_map_data(const JobSpec& j);
json build_config_map(const JobSpec& j);
json build_service(const JobSpec& j);
// The slice each rank trains (index: rank), by the runtime's own SlicePlan from one parse of the
// rendered training section, when the job's slices have several owners each (1 < N < K). Empty
// otherwise, or when the runtime would refuse the section (its ranks exit 2 and say why). It
// parses the training section: compute it once per pass that creates pods, not per pod.
std::vector<int> shared_slices(const JobSpec& j);
// `restart` is the job's restartCount when the pod is created (recorded as an annotation). With
// recovery live its store is the rendezvous Service (MASTER_ADDR, MASTER_PORT, PPU_EXTERNAL_STORE=1).
// `slices` is shared_slices(j): on jobs with shared slices the pod carries its slice's label and,
// with recovery live, a preferred anti-affinity to its slice's other owners.
json build_pod(const JobSpec& j, int rank, int restart, const std::vector<int>& slices);
// What every rank pod of the gang has in common (rank 0's pod without its rank and slice labels,
// hostname and slice anti-affinity): the template Kueue counts the gang's quota by.
json build_rank_pod_template(const JobSpec& j);
// Ingress to the job's pods: from its own pods on every port (c10d rendezvous on masterPort and
// Gloo's pair connections on ephemeral ports), and to metricsPort from `metrics_namespaces`.
json build_network_policy(const JobSpec& j, const std::vector<std::string>& metrics_namespaces);

// The image's non-root user (Dockerfile: USER 65532:65532).
inline constexpr int64_t kRunAsUser = 65532;
// Defaults used when spec.podSecurityContext / spec.securityContext are absent (restricted PSS).
json default_pod_security_context();
json default_container_security_context();
// Writable emptyDirs a read-only root filesystem needs: /tmp.
inline constexpr const char* kTmpPath = "/tmp";
// The container writes its last line (error, or result) to contract::kTerminationLog; if it dies
// before writing one, the kubelet keeps the tail of its log instead.
inline constexpr const char* kTerminationMessagePolicy = "FallbackToLogsOnError";
json owner_reference(const JobSpec& j);

// What every pod of a job shares, rank pods and the export Job's pod (export_job.h) alike.
// name, namespace, the ppu.dev/job label and the controller owner reference to the PPUJob.
json object_metadata(const JobSpec& j, const std::string& name);
// The checkpoint volume at /checkpoints (spec.checkpoint; an emptyDir when absent), spec.data
// read-only at its mountPath, and an emptyDir at /tmp: volumes and the container's mounts.
struct JobVolumes {
  json volumes = json::array();
  json mounts = json::array();
};
JobVolumes job_volumes(const JobSpec& j);
// spec.securityContext, else the default container context (replaced whole, never merged).
json container_security_context(const JobSpec& j);
// The container's envFrom for spec.checkpointSecret (its keys as variables); empty without one.
json checkpoint_secret_env(const JobSpec& j);
// Pod-level settings: spec.podSecurityContext (else the default), no service-account token unless
// spec.scheduling asks for one, and spec.scheduling's fields passed through.
json pod_settings(const JobSpec& j);

}  // namespace ppu::op
