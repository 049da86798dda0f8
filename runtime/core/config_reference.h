// What is rendered from the config schema (core/config_keys.h through config_schema()): the
// PPUJob CRD's spec.training (placed in the CRD by the operator's ppu-crd, operator/src/crd/) and
// docs/CONFIG.md (ppu-schema). Both are checked in; `ninja generate-schema` regenerates them and
// `ppu-crd --check` / `ppu-schema --check` (ctests) fail when a checked-in copy drifts.
#pragma once

#include <string>

namespace ppu {

// The CRD's `training:` property and everything under it, as YAML, each line indented by `indent` spaces.
std::string crd_training_schema(int indent);

// docs/CONFIG.md: every key by section, with type, default, allowed values and doc.
std::string config_reference_markdown();

}  // namespace ppu
