// The objects one PPUJob owns, built from its spec: the training ConfigMap (spec.training
// rendered as YAML under config.yaml), the headless Service that gives every rank a stable DNS
// name, the NetworkPolicy that closes the job's ports to everyone but its own ranks (and the
// metrics port to the named monitoring namespaces), and the rank pods with the rendezvous
// environment of DESIGN.md and a security context that passes the "restricted" Pod Security
// Standard unless spec.podSecurityContext / spec.securityContext replace it. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "job_spec.h"

namespace ppu::op {

// spec.training as the YAML ppu-train reads, with `ranks` set to spec.replicas.
std::string render_training_config(const JobSpec& j);
json build_config_map(const JobSpec& j);
json build_service(const JobSpec& j);
// `restart` is the job's restartCount when the pod is created (recorded as an annotation).
json build_pod(const JobSpec& j, int rank, int restart);
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
json owner_reference(const JobSpec& j);

}  // namespace ppu::op
