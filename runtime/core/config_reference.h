// What is rendered from the config schema (core/config_keys.h through config_schema()): the
// PPUJob CRD's spec.training and docs/CONFIG.md. Both are checked in; `ppu-schema --write`
// regenerates them and `ppu-schema --check` (a ctest) fails when a checked-in copy drifts.
#pragma once

#include <string>

namespace ppu {

// The CRD's `training:` property and everything under it, each line indented by `indent` spaces.
std::string crd_training_schema(int indent);

// docs/CONFIG.md: every key by section, with type, default, allowed values and doc.
std::string config_reference_markdown();

// `text` with the lines strictly between "# BEGIN generated: <name>" and "# END generated: <name>"
// replaced by render(indent of the BEGIN line). Throws std::runtime_error naming `name` when a
// marker is missing or out of order.
std::string replace_generated_block(const std::string& text, const std::string& name,
                                    std::string (*render)(int indent));

}  // namespace ppu
