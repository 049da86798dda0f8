#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/config.h"

using namespace ppu;

namespace {
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, overrides, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, DefaultsMatchThePaper) {
  const Config c = parse_config("");
  EXPECT_EQ(c.inner.beta1, 0.9);
  EXPECT_EQ(c.inner.beta2, 0.99);
  EXPECT_EQ(c.inner.weight_decay, 0.1);
  EXPECT_EQ(c.inner.warmup_steps, 1500);
  EXPECT_EQ(c.outer.lr, 0.4);
  EXPECT_EQ(c.outer.momentum, 0.9);
  EXPECT_EQ(c.outer.sync_every, 100);
  EXPECT_EQ(c.outer.layers_per_fragment, 3);
  EXPECT_EQ(c.model.preset, "small");
}

TEST(Config, PresetThenExplicitKeysOverride) {
  const Config c = parse_config("model: {preset: gpt3-xl, seq_len: 256}\nslicing: {slices: 2}\nranks: 32\n");
  EXPECT_EQ(c.model.layers, 24);
  EXPECT_EQ(c.model.d_model, 2048);
  EXPECT_EQ(c.model.heads, 16);
  EXPECT_EQ(c.model.vocab, 32000);
  EXPECT_EQ(c.model.seq_len, 256);
}

TEST(Config, SetOverridesApplyInOrderAndCreateSections) {
  const Config c = parse_config("inner: {lr: 0.1}\n", {"inner.lr=0.5", "outer.delta_dtype=bf16", "method=diloco"});
  EXPECT_EQ(c.inner.lr, 0.5);
  EXPECT_EQ(c.outer.delta_dtype, WireDtype::Bf16);
  EXPECT_EQ(c.method, Method::DiLoCo);
  EXPECT_EQ(c.effective_slices(), 1);
  EXPECT_FALSE(c.streaming());
}

TEST(Config, UnknownKeyIsNamed) {
  EXPECT_NE(error_of("inner: {lrr: 1}\n").find("unknown config key 'inner.lrr'"), std::string::npos);
  EXPECT_NE(error_of("", {"outer.sync_evry=3"}).find("'outer.sync_evry'"), std::string::npos);
}

TEST(Config, WrongTypeNamesKeyAndValue) {
  const auto e = error_of("inner: {lr: fast}\n");
  EXPECT_NE(e.find("'inner.lr'"), std::string::npos) << e;
  EXPECT_NE(e.find("fast"), std::string::npos) << e;
}

TEST(Config, QuorumSyncNamesWhatItCannotWorkWith) {
  const auto ddp = error_of("", {"method=ddp", "outer.sync_mode=quorum"});
  EXPECT_NE(ddp.find("'outer.sync_mode' is 'quorum' but method=ddp"), std::string::npos) << ddp;
  const auto grace =
      error_of("", {"outer.sync_mode=quorum", "outer.quorum_grace_min_s=2", "outer.quorum_grace_max_s=1"});
  EXPECT_NE(grace.find("'outer.quorum_grace_max_s' (1) must be at least outer.quorum_grace_min_s (2)"),
            std::string::npos)
      << grace;
  const auto fraction = error_of("", {"outer.quorum_fraction=1.5"});
  EXPECT_NE(fraction.find("'outer.quorum_fraction'"), std::string::npos) << fraction;
  EXPECT_EQ(error_of("", {"outer.sync_mode=quorum"}), "");
}

TEST(Config, BadEnumListsChoices) {
  const auto e = error_of("slicing: {mode: rows}\n");
  EXPECT_NE(e.find("'slicing.mode'"), std::string::npos) << e;
  EXPECT_NE(e.find("mlp+heads"), std::string::npos) << e;
}

// Every choice key: each allowed name parses to its own enum value and spells back the same
// (to_yaml round trip); any other name is an error naming the file, the key, the value and
// every allowed name.
TEST(Config, EveryChoiceParsesOnceAndRejectsOtherNamesListingTheAllowedOnes) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> choices = {
      {"model.activation", {"relu", "gelu"}},
      {"method", {"ppu", "diloco", "streaming-diloco", "ddp"}},
      {"slicing.mode", {"none", "mlp", "mlp+heads", "mlp+heads+wo", "horizontal"}},
      {"slicing.jacobian", {"full", "slice", "slice+random"}},
      {"inner.optimizer", {"adamw", "sgd"}},
      {"inner.schedule", {"cosine", "constant"}},
      {"outer.optimizer", {"nesterov", "average"}},
      {"outer.grouping", {"layers", "slices"}},
      {"outer.delta_dtype", {"fp32", "bf16", "int8"}},
      {"outer.final_sync", {"average", "none"}},
      {"data.source", {"synthetic", "shards"}},
      {"train.device", {"cpu", "cuda"}},
      {"train.dtype", {"fp32", "bf16"}},
      {"network.collective", {"ring", "direct"}}};
  // A base in which every name of every key is a valid combination.
  const std::vector<std::string> base = {"model.preset=tiny", "ranks=4", "slicing.slices=2", "data.path=/data"};
  for (const auto& [key, names] : choices) {
    std::set<std::string> spelled;
    for (const auto& name : names) {
      auto overrides = base;
      overrides.push_back(key + "=" + name);
      if (key == "slicing.jacobian" || key == "slicing.mode") overrides.emplace_back("method=ppu");
      const Config c = parse_config("", overrides);
      const auto yaml = YAML::Load(to_yaml(c));
      const auto dot = key.find('.');
      const auto node = dot == std::string::npos ? yaml[key] : yaml[key.substr(0, dot)][key.substr(dot + 1)];
      EXPECT_EQ(node.as<std::string>(), name) << key;
      spelled.insert(to_yaml(c));
    }
    EXPECT_EQ(spelled.size(), names.size()) << key << ": two names parse to the same value";
    const auto e = error_of("", {key + "=bogus"});
    EXPECT_NE(e.find("test.yaml"), std::string::npos) << e;
    EXPECT_NE(e.find("'" + key + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("'bogus'"), std::string::npos) << e;
    for (const auto& name : names) EXPECT_NE(e.find(name), std::string::npos) << key << ": " << e;
  }
  EXPECT_EQ(parse_choice<WireDtype>("outer.delta_dtype", "int8"), WireDtype::Int8);
  EXPECT_EQ(choice_name(Collective::Direct), "direct");
  EXPECT_THROW(parse_choice<Dtype>("train.dtype", "fp16"), ConfigError);
}

TEST(Config, InvalidSlicingNamesTheValues) {
  // K not a multiple of N
  auto e = error_of("ranks: 6\nslicing: {mode: mlp, slices: 4}\n");
  EXPECT_NE(e.find("K=6"), std::string::npos) << e;
  EXPECT_NE(e.find("N=4"), std::string::npos) << e;
  // N does not divide the head count (tiny has 4 heads) in mlp+heads mode
  e = error_of("model: {preset: tiny}\nranks: 8\nslicing: {mode: mlp+heads, slices: 8}\n");
  EXPECT_NE(e.find("model.heads=4"), std::string::npos) << e;
  // ... but it is fine for MLP-only slicing (4*64 = 256 is divisible by 8)
  EXPECT_EQ(error_of("model: {preset: tiny}\nranks: 8\nslicing: {mode: mlp, slices: 8}\n"), "");
  // N does not divide the MLP hidden size
  e = error_of("model: {preset: tiny}\nranks: 3\nslicing: {mode: mlp, slices: 3}\n");
  EXPECT_NE(e.find("MLP hidden size"), std::string::npos) << e;
}

TEST(Config, RoundTripsThroughYaml) {
  const Config a = parse_config("model: {preset: tiny}\nmethod: streaming-diloco\ninner: {lr: 0.002}\n");
  const Config b = parse_config(to_yaml(a));
  EXPECT_EQ(to_yaml(a), to_yaml(b));
  EXPECT_EQ(b.method, Method::StreamingDiLoCo);
  EXPECT_EQ(b.inner.lr, 0.002);
  EXPECT_EQ(b.model.d_model, 64);
}

TEST(Config, ShippedConfigsLoad) {
  for (const char* name : {"demo", "tiny", "paper/mlp-4", "paper/mlp-heads-4", "paper/ddp", "paper/streaming-diloco"}) {
    EXPECT_NO_THROW(load_config(std::string(PPU_SOURCE_DIR) + "/configs/" + name + ".yaml")) << name;
  }
}

namespace {
const std::vector<std::string> kPaperConfigs = {
    "ddp",    "diloco",      "streaming-diloco", "streaming-diloco-28b", "mlp-2", "mlp-4", "mlp-8", "mlp-8-overtrained",
    "mlp-16", "mlp-heads-2", "mlp-heads-4"};
Config paper(const std::string& name) {
  return load_config(std::string(PPU_SOURCE_DIR) + "/configs/paper/" + name + ".yaml");
}
std::string section(const Config& c, const char* name) { return YAML::Dump(YAML::Load(to_yaml(c))[name]); }
}  // namespace

TEST(Config, PaperConfigsShareEveryOpenChoice) {
  // Every method in a comparison trains with the same inner optimiser, schedule, clipping,
  // weight-decay exclusions, outer optimiser and finish; they differ only in method, slicing
  // and token budget. The values follow §3.1, and no clipping (the paper does not clip).
  const Config ref = paper("mlp-4");
  EXPECT_EQ(ref.inner.grad_clip, 0.0);
  EXPECT_EQ(ref.inner.lr, 3.0e-4);
  EXPECT_EQ(ref.inner.warmup_steps, 1500);
  EXPECT_EQ(ref.inner.schedule, LrScheduleKind::Cosine);
  EXPECT_EQ(ref.inner.weight_decay, 0.1);
  EXPECT_EQ(ref.inner.beta2, 0.99);
  EXPECT_EQ(ref.inner.batch_size, 16);
  EXPECT_EQ(ref.outer.lr, 0.4);
  EXPECT_EQ(ref.outer.sync_every, 100);
  EXPECT_EQ(ref.outer.layers_per_fragment, 3);
  EXPECT_EQ(ref.slicing.jacobian, Jacobian::Full);
  for (const auto& name : kPaperConfigs) {
    const Config c = paper(name);
    EXPECT_EQ(section(c, "inner"), section(ref, "inner")) << name;
    EXPECT_EQ(section(c, "outer"), section(ref, "outer")) << name;
    EXPECT_EQ(section(c, "model"), section(ref, "model")) << name;
    EXPECT_EQ(c.ranks, 32) << name;
    EXPECT_EQ(c.slicing.jacobian, Jacobian::Full) << name;
  }
}

TEST(Config, AblationKeysAreValidatedByName) {
  EXPECT_EQ(error_of("model: {preset: tiny}\nslicing: {mode: mlp+heads+wo, slices: 2}\nranks: 2\n"), "");
  EXPECT_EQ(error_of("model: {preset: tiny}\nslicing: {mode: horizontal, slices: 2}\nranks: 2\n"), "");
  // horizontal needs N | layers (tiny has 2 layers)
  auto e = error_of("model: {preset: tiny}\nslicing: {mode: horizontal, slices: 4}\nranks: 4\n");
  EXPECT_NE(e.find("model.layers=2"), std::string::npos) << e;
  e = error_of("model: {preset: tiny}\nslicing: {mode: mlp+heads+wo, slices: 8}\nranks: 8\n");
  EXPECT_NE(e.find("model.heads=4"), std::string::npos) << e;
  e = error_of("slicing: {jacobian: half}\n");
  EXPECT_NE(e.find("'slicing.jacobian'"), std::string::npos) << e;
  EXPECT_NE(e.find("slice+random"), std::string::npos) << e;
  EXPECT_EQ(error_of("model: {preset: tiny}\nslicing: {jacobian: slice+random, slices: 2}\nranks: 2\n"), "");
  e = error_of("method: diloco\nslicing: {jacobian: slice}\n");
  EXPECT_NE(e.find("'slicing.jacobian'"), std::string::npos) << e;
  e = error_of("model: {preset: tiny}\nslicing: {mode: horizontal, jacobian: slice, slices: 2}\nranks: 2\n");
  EXPECT_NE(e.find("'slicing.jacobian'"), std::string::npos) << e;
  e = error_of("model: {preset: tiny}\nslicing: {mode: horizontal, slices: 2}\nranks: 2\nouter: {grouping: slices}\n");
  EXPECT_NE(e.find("'outer.grouping'"), std::string::npos) << e;
}

TEST(Config, OpenChoicesAreKeysNamedInErrors) {
  const Config c = parse_config("", {"inner.decay_embedding=false", "inner.decay_norms=true", "outer.final_sync=none",
                                     "inner.min_lr_ratio=0", "inner.grad_clip=0"});
  EXPECT_FALSE(c.inner.decay_embedding);
  EXPECT_TRUE(c.inner.decay_norms);
  EXPECT_EQ(c.outer.final_sync, FinalSync::None);
  EXPECT_FALSE(applies_weight_decay(c.inner, ParamRole::Embedding));
  EXPECT_TRUE(applies_weight_decay(c.inner, ParamRole::Norm));
  EXPECT_TRUE(applies_weight_decay(c.inner, ParamRole::MlpUp));
  const Config d = parse_config("");
  EXPECT_TRUE(applies_weight_decay(d.inner, ParamRole::Embedding));
  EXPECT_FALSE(applies_weight_decay(d.inner, ParamRole::Norm));
  EXPECT_EQ(d.outer.final_sync, FinalSync::Average);
  auto e = error_of("outer: {final_sync: nesterov}\n");
  EXPECT_NE(e.find("'outer.final_sync'"), std::string::npos) << e;
  e = error_of("inner: {decay_norms: sometimes}\n");
  EXPECT_NE(e.find("'inner.decay_norms'"), std::string::npos) << e;
  e = error_of("inner: {grad_clip: -1}\n");
  EXPECT_NE(e.find("'inner.grad_clip'"), std::string::npos) << e;
  e = error_of("inner: {min_lr_ratio: 1.5}\n");
  EXPECT_NE(e.find("'inner.min_lr_ratio'"), std::string::npos) << e;
}

TEST(Config, ProfilerWindowMustStartBeforeTheLastStep) {
  EXPECT_EQ(error_of("train: {steps: 10, profile_first_step: 12}\n"), "");  // no profile_dir: unused
  EXPECT_EQ(error_of("train: {steps: 10, profile_dir: /tmp/t, profile_first_step: 9}\n"), "");
  auto e = error_of("train: {steps: 10, profile_dir: /tmp/t, profile_first_step: 10}\n");
  EXPECT_NE(e.find("'train.profile_first_step' (10)"), std::string::npos) << e;
  e = error_of("train: {profile_dir: /tmp/t, profile_steps: 0}\n");
  EXPECT_NE(e.find("'train.profile_steps'"), std::string::npos) << e;
}

TEST(Config, MissingFileIsNamed) {
  try {
    load_config("/nonexistent/x.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.yaml"), std::string::npos);
  }
}

// The schema table and the Config structs are one: every key to_yaml writes has a row, and
// every row is a key to_yaml writes.
TEST(ConfigSchema, RowsAreExactlyTheKeysOfAConfig) {
  std::set<std::string> rows;
  for (const auto& row : config_schema()) EXPECT_TRUE(rows.insert(row.key).second) << "duplicate row " << row.key;
  std::set<std::string> leaves;
  const auto collect = [&](const auto& self, const YAML::Node& node, const std::string& prefix) -> void {
    for (const auto& kv : node) {
      const std::string key = prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>();
      if (kv.second.IsMap()) self(self, kv.second, key);
      else leaves.insert(key);
    }
  };
  collect(collect, YAML::Load(to_yaml(parse_config(""))), "");
  EXPECT_EQ(rows, leaves);
  EXPECT_GT(rows.size(), 60u);
}

// Every bound of the table is enforced: a value just outside it is refused with a message that
// names the key and the bound, and the same value one step inside (where the key has no rule
// relating it to another) is accepted.
TEST(ConfigSchema, EveryBoundRefusesAValueJustOutsideNamingTheKey) {
  int checked = 0;
  for (const auto& row : config_schema()) {
    const Bounds& b = row.bounds;
    if (!b.has_min && !b.has_max) continue;
    const bool integral = row.type != KeyType::Double;
    const double step = integral ? 1 : 1e-9 * std::max(1.0, std::abs(b.has_min ? b.min : b.max));
    std::vector<double> outside;
    if (b.has_min) outside.push_back(b.min_open ? b.min : b.min - step);
    if (b.has_max) outside.push_back(b.max_open ? b.max : b.max + step);
    for (double v : outside) {
      std::ostringstream value;
      value.precision(17);
      value << v;
      const std::string e = error_of("model: {preset: tiny}\n", {row.key + "=" + value.str()});
      EXPECT_NE(e.find("'" + row.key + "' must be"), std::string::npos) << row.key << "=" << value.str() << ": " << e;
      ++checked;
    }
  }
  EXPECT_GT(checked, 35);
  EXPECT_EQ(error_of("", {"inner.beta1=0"}), "");  // the closed end of [0, 1) is inside
  EXPECT_NE(error_of("", {"inner.beta1=1"}).find("must be in [0, 1), got 1"), std::string::npos);
}

// The defaults the schema reports are the ones a parsed empty config has.
TEST(ConfigSchema, DefaultsAreAnEmptyConfigsValues) {
  const YAML::Node parsed = YAML::Load(to_yaml(parse_config("")));
  int with_default = 0;
  for (const auto& row : config_schema()) {
    if (!row.default_value) {
      EXPECT_EQ(row.key.rfind("model.", 0), 0u) << row.key << ": only model keys default to the preset's";
      continue;
    }
    YAML::Node node = parsed;
    std::stringstream parts(row.key);
    for (std::string part; std::getline(parts, part, '.');) node.reset(node[part]);
    const std::string written = node.Scalar();
    if (row.type == KeyType::Double) EXPECT_EQ(std::stod(written), std::stod(*row.default_value)) << row.key;
    else EXPECT_EQ(written, *row.default_value) << row.key;
    ++with_default;
  }
  EXPECT_GT(with_default, 55);
}
