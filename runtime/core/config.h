// Config: the one training schema shared by configs/*.yaml, `ppu-train`, `ppu-plan` and a
// PPUJob's spec.training. Its keys, types, defaults, bounds and docs are written once, in
// core/config_keys.h; docs/CONFIG.md is generated from them. `load_config` reads YAML, applies
// `--set dotted.key=value` overrides, rejects unknown keys and invalid values or combinations
// with a ConfigError whose message names the key and the value.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/config_choices.h"
#include "core/config_keys.h"
#include "core/exit_status.h"  // ConfigError
#include "core/model_spec.h"

namespace ppu {

// Choices. Every key whose value is one of a fixed set of names is an enum, declared with its
// spellings in core/config_choices.h: parse_config reads the name once and rejects any other with a
// ConfigError naming the key and the allowed values; choice_name() spells a value back (summaries,
// checkpoints, logs).
#define CHOICE(Enum, key, values) std::string choice_name(Enum v);
PPU_CONFIG_CHOICES
#undef CHOICE
// The value spelled `name` in the choice of config key `key`, e.g.
// parse_choice<WireDtype>("outer.delta_dtype", "int8"); throws ConfigError naming the key, the
// value and the allowed names. Instantiated for every choice above.
template <class E>
E parse_choice(const std::string& key, const std::string& name);
// The allowed names of a choice in table order, e.g. {"fp32", "bf16"} for Dtype.
template <class E>
std::vector<std::string> choice_names();

// One key of config_keys.h as data, for what is rendered from the schema (the CRD's
// spec.training, docs/CONFIG.md) and for tests.
enum class KeyType { Int, Int64, UInt64, Double, Bool, String, Choice };
struct KeySchema {
  std::string key;  // dotted, e.g. "inner.lr"
  KeyType type;
  std::optional<std::string> default_value;  // as a YAML scalar; nullopt: model.preset's value
  std::vector<std::string> choices;          // the allowed names of a Choice (and of model.preset)
  Bounds bounds;
  std::string doc;
};
// Every key in file order, model.preset first.
std::vector<KeySchema> config_schema();

// The sections of a config, declared from config_keys.h: one member per KEY line, with its default.
#define PPU_DECLARE_KEY(section, name, type, default_value, bounds, doc) type name = default_value;
struct SlicingConfig {
  PPU_SLICING_KEYS(PPU_DECLARE_KEY)
};
struct InnerConfig {
  PPU_INNER_KEYS(PPU_DECLARE_KEY)
};
struct OuterConfig {
  PPU_OUTER_KEYS(PPU_DECLARE_KEY)
};
struct DataConfig {
  PPU_DATA_KEYS(PPU_DECLARE_KEY)
};
struct TrainConfig {
  PPU_TRAIN_KEYS(PPU_DECLARE_KEY)
};
struct CheckpointConfig {
  PPU_CHECKPOINT_KEYS(PPU_DECLARE_KEY)
};
struct MetricsConfig {
  PPU_METRICS_KEYS(PPU_DECLARE_KEY)
};
struct NetworkConfig {
  PPU_NETWORK_KEYS(PPU_DECLARE_KEY)
};

struct Config {
  ModelSpec model;  // model.preset's sizes, then the explicit model.* keys
  PPU_TOP_KEYS(PPU_DECLARE_KEY)
  SlicingConfig slicing;
  InnerConfig inner;
  OuterConfig outer;
  DataConfig data;
  TrainConfig train;
  CheckpointConfig checkpoint;
  MetricsConfig metrics;
  NetworkConfig network;

  // N actually in effect: 1 when the method or mode does not slice.
  int effective_slices() const;
  // outer.quorum_sit_out in effect: -1 resolves to kDefaultSitOut where sitting out is supported
  // (sync_mode quorum, recovery gang, no overlap), else to 0.
  static constexpr int kDefaultSitOut = 16;
  int effective_sit_out() const;
  // Fragments synchronise in a staggered way (streaming) rather than all at once.
  bool streaming() const;
};
#undef PPU_DECLARE_KEY

// Reads `path` (may be empty: defaults only), applies overrides "a.b=value" in order, validates.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from YAML text (ppu-export reads a checkpoint's config with it; tests too). The operator
// parses spec.training only to label each rank pod with its slice (object_builder): the CRD's
// schema and CEL rules check it at admission, and a rank exits 2 on anything they cannot.
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                    const std::string& origin = "<config>");
// Checks cross-field constraints for `world_size` ranks; throws ConfigError naming the keys.
void validate_config(const Config& config, int world_size);
// What slicing.slices N must divide in each slicing.mode: the MLP hidden size 4*d_model, the heads,
// the layers. One table, read by check_slicing and by the PPUJob CRD's CEL rules (ppu-crd).
struct SlicingDivides {
  bool mlp_hidden = false, heads = false, layers = false;
};
SlicingDivides slicing_divides(SliceMode mode);
// The slicing part of it, the one check of (model, mode, K, N) that validate_config and the
// SlicePlan constructor both run: N divides K and what slicing_divides(mode) names.
void check_slicing(const ModelSpec& m, SliceMode mode, int world_size, int n);
// The config as YAML (all keys, defaults filled in): stored in checkpoints and summaries.
std::string to_yaml(const Config& config);
// One section's keys as a JSON object ({name: value}, choices by name, defaults filled in), e.g.
// "inner" or "outer": the resolved settings a run summary records.
nlohmann::json config_section_json(const Config& config, const std::string& section);

// Whether AdamW/SGD weight decay applies to a parameter of `role`: matrices always, the tied
// embedding per inner.decay_embedding, LayerNorm parameters per inner.decay_norms.
bool applies_weight_decay(const InnerConfig& inner, ParamRole role);

inline std::string method_name(Method m) { return choice_name(m); }
inline std::string slice_mode_name(SliceMode m) { return choice_name(m); }

}  // namespace ppu
