#include "crd/cel_rules.h"

#include <algorithm>
#include <stdexcept>

#include "core/checkpoint_names.h"
#include "core/config.h"
#include "core/model_spec.h"
#include "reconcile/spec_passthrough_keys.h"

namespace ppu::op::crd {

namespace {

// "self.training.<key>", once the runtime's schema has the key.
std::string training(const std::string& key) {
  const auto schema = config_schema();
  if (std::none_of(schema.begin(), schema.end(), [&](const KeySchema& k) { return k.key == key; }))
    throw std::logic_error("a CEL rule reads spec.training." + key + ", which is no key of core/config_keys.h");
  return "self.training." + key;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The model's `field` as the ranks will see it: the explicit key, or model.preset's value.
std::string explicit_or_preset(const std::string& field) {
  const std::string key = training("model." + field);
  return "has(" + key + ") ? " + key + " :\n  " + preset_table(field) + "[" + training("model.preset") + "]";
}

std::string slices_divide(const std::string& expr) { return expr + "\n% " + training("slicing.slices") + " == 0"; }

// slicing.slices divides `expr` in every slicing.mode whose row of the runtime's slicing_divides
// table (core/config.h) sets `needs`, e.g. the heads in mlp+heads, mlp+heads+wo and heads.
CelRule divides_in_modes(bool SlicingDivides::*needs, const std::string& expr, const std::string& what) {
  std::string list, names;
  for (const auto& name : choice_names<SliceMode>()) {
    if (!(slicing_divides(parse_choice<SliceMode>("slicing.mode", name)).*needs)) continue;
    list += (list.empty() ? "" : ", ") + quoted(name);
    names += (names.empty() ? "" : ", ") + name;
  }
  return {slices_divide("!(" + training("slicing.mode") + " in [" + list + "]) || (" + expr + ")"),
          ".training.slicing.slices", "spec.training.slicing.slices must divide " + what + " in modes " + names};
}

// While the job is not suspended (before and after the change), `field` keeps its value.
CelRule immutable(const std::string& field) {
  return {"self." + field + " == oldSelf." + field +
              " || (has(self.runPolicy.suspend) && self.runPolicy.suspend && has(oldSelf.runPolicy.suspend) && "
              "oldSelf.runPolicy.suspend)",
          "." + field, "spec." + field + " is immutable unless the job is suspended"};
}

std::vector<CelRule> spec_rules() {
  const std::string slices = training("slicing.slices");
  return {
      {"has(self.elastic) || self.replicas % " + slices + " == 0", ".replicas",
       "spec.replicas must be a multiple of spec.training.slicing.slices"},
      // spec.elastic (docs/RESIZE.md): a live job resized within its range while it runs.
      {"!has(self.elastic) || (self.elastic.minReplicas <= self.replicas && self.replicas <= "
       "self.elastic.maxReplicas)",
       ".replicas", "spec.replicas must be within [spec.elastic.minReplicas, spec.elastic.maxReplicas]"},
      {"!has(self.elastic) || (self.elastic.minReplicas % " + slices + " == 0 && self.elastic.maxReplicas % " + slices +
           " == 0)",
       ".elastic", "spec.elastic.minReplicas and maxReplicas must be multiples of spec.training.slicing.slices"},
      {"!has(self.elastic) || (has(self.training.network) && has(" + training("network.recovery") + ") && " +
           training("network.recovery") + " == 'live')",
       ".elastic", "spec.elastic needs spec.training.network.recovery live (a gang job has one size)"},
      {"self.replicas == oldSelf.replicas || has(self.elastic) || (has(self.runPolicy.suspend) && "
       "self.runPolicy.suspend && has(oldSelf.runPolicy.suspend) && oldSelf.runPolicy.suspend)",
       ".replicas", "spec.replicas is immutable unless the job is suspended or elastic (spec.elastic)"},
      {"has(self.elastic) == has(oldSelf.elastic) && (!has(self.elastic) || (self.elastic.minReplicas == "
       "oldSelf.elastic.minReplicas && self.elastic.maxReplicas == oldSelf.elastic.maxReplicas)) || "
       "(has(self.runPolicy.suspend) && self.runPolicy.suspend && has(oldSelf.runPolicy.suspend) && "
       "oldSelf.runPolicy.suspend)",
       ".elastic", "spec.elastic is immutable unless the job is suspended"},
      divides_in_modes(
          &SlicingDivides::mlp_hidden,
          std::to_string(ModelSpec::kMlpExpansion) + " * (" + explicit_or_preset("d_model") + ")",
          "the MLP hidden size " + std::to_string(ModelSpec::kMlpExpansion) + "*spec.training.model.d_model"),
      divides_in_modes(&SlicingDivides::heads, explicit_or_preset("heads"), "spec.training.model.heads"),
      divides_in_modes(&SlicingDivides::layers, explicit_or_preset("layers"), "spec.training.model.layers"),
      immutable("training"),
      immutable("image"),
      {"!has(self.export) || (has(self.checkpoint) && (has(self.checkpoint.claimName) || "
       "(has(self.checkpoint.volumeSource) && !has(self.checkpoint.volumeSource.emptyDir) && "
       "!has(self.checkpoint.volumeSource.ephemeral))))",
       ".export",
       "spec.export needs a checkpoint volume that outlives the pods: set spec.checkpoint.claimName (or a persistent "
       "spec.checkpoint.volumeSource), not an emptyDir or ephemeral volume; the model is written there after the "
       "ranks have exited"},
  };
}

CelRule one_volume(const std::string& field) {
  return {"!(has(self.claimName) && has(self.volumeSource))", "",
          "spec." + field + ": set either claimName or volumeSource, not both"};
}

}  // namespace

std::string preset_table(const std::string& field) {
  std::vector<ModelSpec> presets;
  for (const auto& name : model_preset_names()) presets.push_back(*model_preset(name));
  std::stable_sort(presets.begin(), presets.end(),
                   [](const ModelSpec& a, const ModelSpec& b) { return total_parameters(a) < total_parameters(b); });
  std::string out = "{";
  for (const auto& p : presets) {
    const int v = field == "d_model" ? p.d_model : field == "heads" ? p.heads : field == "layers" ? p.layers : -1;
    if (v < 0) throw std::logic_error("preset_table: no preset field '" + field + "'");
    out += (out.size() > 1 ? ", " : "") + quoted(p.preset) + ": " + std::to_string(v);
  }
  return out + "}";
}

std::vector<PlacedRules> cel_rules() {
  return {
      {"", spec_rules()},
      {passthrough::kCheckpoint, {one_volume(passthrough::kCheckpoint)}},
      {passthrough::kData, {one_volume(passthrough::kData)}},
      {"runPolicy",
       {{"!has(self.recoveryBackoffSeconds) || !has(self.recoveryBackoffMaxSeconds) || "
         "self.recoveryBackoffMaxSeconds >= self.recoveryBackoffSeconds",
         ".recoveryBackoffMaxSeconds",
         "spec.runPolicy.recoveryBackoffMaxSeconds must be at least spec.runPolicy.recoveryBackoffSeconds"}}},
      {"export.path",
       {{"self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$')", "",
         "spec.export.path must be a relative directory: names of letters, digits, '.', '_' and '-' separated by "
         "single '/', no leading or trailing '/'"},
        {"!self.matches('(^|/)[.][.]?(/|$)')", "", "spec.export.path must not have a '.' or '..' segment"},
        {"!self.startsWith('" + std::string(checkpoint_file::kRoundPrefix) + "')", "",
         "spec.export.path must not start with " + std::string(checkpoint_file::kRoundPrefix) + ": the " +
             checkpoint_file::kRoundPrefix +
             "* directories are the checkpoint store's, pruned to training.checkpoint.keep"}}},
  };
}

}  // namespace ppu::op::crd
