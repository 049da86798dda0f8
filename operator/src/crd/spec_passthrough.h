// The spec fields the operator does not read into values but passes to the rank pods (and the
// export Job) as written: imagePullPolicy, command, args, env, the pod and container security
// contexts, resources, the checkpoint and data volumes, scheduling. Their schemas are corev1's
// (or a subset of them) and are written by hand, as YAML in spec_passthrough.cpp; only
// data.mountPath's default comes from reconcile/job_spec.h (kDataPath), where the pods read it.
// The CEL rules among these fields are crd/cel_rules.cpp's.
#pragma once

#include <yaml-cpp/yaml.h>

#include "crd/yaml_text.h"

namespace ppu::op::crd {

// A mapping from each field's key to its schema, in the order the CRD lists them.
YAML::Node spec_passthrough_schema();

}  // namespace ppu::op::crd
