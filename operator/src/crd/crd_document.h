// ppu-crd's generator: the PPUJob CustomResourceDefinition, rendered whole into
// manifests/crd/ppu.dev_ppujobs.yaml (and the chart's copy, charts/ppu-operator/files/).
//
// Why beside the operator and not in ppu-schema: the spec fields the operator reads and the
// status it writes are the operator's (reconcile/job_spec.h, reconcile/ppujob_status.h), and the
// runtime must not depend on the operator; the operator already links the runtime's contracts
// (ppu_core), so one generator here sees both. What it takes from where:
//   names, group, version, scope   kube/resource_kind.h's PPUJob row
//   spec: replicas, image, ports,  reconcile/job_spec.h's field lists (type, bounds, doc, and the
//     export, runPolicy            defaults the operator applies: one value for both)
//   spec.training                  the runtime's config schema (core/config_reference.h,
//                                  from core/config_keys.h)
//   status                         reconcile/ppujob_status.h's field lists
//   printer columns                status fields named by member (key_of), types from the schema
//   CEL rules                      crd/cel_rules.cpp (preset maps and modes from core's tables)
// What stays written by hand, in this room's sources: the corev1 schemas of the fields passed to
// the pods as written (crd/spec_passthrough.cpp), the CEL rules' text (crd/cel_rules.cpp), and
// here the document's frame (short names, categories, descriptions of the top level, the columns'
// names and descriptions and which fields they show). In job_spec.h's field lines, the enums of
// the string fields export.format and export.dtype (ppu-export's choices, core/export_result.h;
// CrdDocument.ExportChoicesArePpuExportsOwn fails when they differ) and runPolicy.cleanPodPolicy
// (clean_pod_policy in job_constants.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace ppu::op::crd {

// Where the CRD and its chart copy live, relative to the source root.
inline constexpr const char* kCrdPath = "manifests/crd/ppu.dev_ppujobs.yaml";
inline constexpr const char* kChartCrdPath = "charts/ppu-operator/files/ppu.dev_ppujobs.yaml";

// The CRD as a tree (scalars tagged as crd/yaml_text.h says).
YAML::Node crd_document();
// The file: a header comment, then crd_document() as YAML.
std::string crd_yaml();

}  // namespace ppu::op::crd
