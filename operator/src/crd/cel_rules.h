// The CRD's CEL rules (x-kubernetes-validations): what the API server checks across fields at
// admission, each with a message that names the field. The rules are written by hand here, with
// two things taken from the runtime's own tables instead of restated: the preset -> d_model /
// heads / layers maps (core/model_spec.h's presets, smallest first), the slicing modes' names
// (core/config_choices.h) and which modes need slicing.slices to divide the MLP hidden size, the
// heads or the layers (core/config.h's slicing_divides, the table the ranks' check_slicing reads);
// every spec.training key a rule reads must be a key of the runtime's config schema
// (core/config_keys.h), or the rules throw std::logic_error.
#pragma once

#include <string>
#include <vector>

namespace ppu::op::crd {

struct CelRule {
  std::string rule;
  std::string field_path;  // "" = none
  std::string message;
};

// The rules of one object of the schema: `at` is the path of property names below spec
// ("" = spec itself, "export.path").
struct PlacedRules {
  std::string at;
  std::vector<CelRule> rules;
};

std::vector<PlacedRules> cel_rules();

// {'tiny': 64, 'small': 384, ...}: the presets' `field` (d_model, heads or layers), smallest
// model first; as the rules write it.
std::string preset_table(const std::string& field);

}  // namespace ppu::op::crd
