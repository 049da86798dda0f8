// The objects one PPUJob owns, built from its spec: the training ConfigMap (spec.training
// rendered as YAML under config.yaml), the headless Service that gives every rank a stable DNS
// name, and the rank pods with the rendezvous environment of DESIGN.md. Pure functions.
#pragma once

#include <string>

#include "job_spec.h"

namespace ppu::op {

// spec.training as the YAML ppu-train reads, with `ranks` set to spec.replicas.
std::string render_training_config(const JobSpec& j);
json build_config_map(const JobSpec& j);
json build_service(const JobSpec& j);
// `restart` is the job's restartCount when the pod is created (recorded as an annotation).
json build_pod(const JobSpec& j, int rank, int restart);
json owner_reference(const JobSpec& j);

}  // namespace ppu::op
