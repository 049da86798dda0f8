// Defaults live in one place (runtime/core/config.h). The PPUJob CRD documents them in its
// OpenAPI schema, and the API server applies them: every default there must equal the
// runtime's, or a PPUJob would train differently from the same YAML given to ppu-launch. And
// every key the runtime reads must be a property there: the schema is structural, so the API
// server silently prunes a key it does not list from spec.training.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/model_spec.h"

namespace {

void collect_defaults(const YAML::Node& properties, const std::string& prefix, std::map<std::string, YAML::Node>& out) {
  for (const auto& kv : properties) {
    const std::string key = prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>();
    const YAML::Node& schema = kv.second;
    if (schema["default"] && !schema["default"].IsMap()) out[key] = schema["default"];
    if (schema["properties"]) collect_defaults(schema["properties"], key, out);
  }
}

// The dotted keys under `properties` whose schema lists an enum.
void collect_enums(const YAML::Node& properties, const std::string& prefix, std::set<std::string>& out) {
  for (const auto& kv : properties) {
    const std::string key = prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>();
    if (kv.second["enum"]) out.insert(key);
    if (kv.second["properties"]) collect_enums(kv.second["properties"], key, out);
  }
}

YAML::Node lookup(const YAML::Node& root, const std::string& dotted) {
  YAML::Node node = YAML::Clone(root);
  std::stringstream ss(dotted);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!node.IsMap() || !node[part]) return {};
    node = node[part];
  }
  return node;
}

}  // namespace

// Every choice key's enum in the CRD lists exactly the names the runtime accepts (config.cpp's
// tables), so the API server rejects what ppu-train would and admits everything it accepts.
TEST(CrdDefaults, EnumsAreTheRuntimeChoices) {
  const auto crd = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/manifests/crd/ppu.dev_ppujobs.yaml");
  const auto training =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["training"];
  std::set<std::string> choice_keys;
  for (const auto& row : ppu::config_schema()) {
    if (row.type == ppu::KeyType::Choice) {
      EXPECT_FALSE(row.choices.empty()) << row.key << " is a choice with no names";
    }
    if (row.choices.empty()) continue;
    choice_keys.insert(row.key);
    const auto dot = row.key.find('.');
    const auto schema = dot == std::string::npos
                            ? training["properties"][row.key]
                            : training["properties"][row.key.substr(0, dot)]["properties"][row.key.substr(dot + 1)];
    ASSERT_TRUE(schema && schema["enum"]) << row.key << " has no enum in the CRD";
    std::vector<std::string> crd_names;
    for (const auto& n : schema["enum"]) crd_names.push_back(n.as<std::string>());
    EXPECT_EQ(std::set<std::string>(crd_names.begin(), crd_names.end()),
              std::set<std::string>(row.choices.begin(), row.choices.end()))
        << row.key;
  }
  // And the other way: every enum of spec.training is a key the runtime reads as a choice.
  std::set<std::string> crd_enums;
  collect_enums(training["properties"], "", crd_enums);
  EXPECT_EQ(crd_enums, choice_keys);
  EXPECT_EQ(ppu::choice_names<ppu::Dtype>(), (std::vector<std::string>{"fp32", "bf16"}));
}

TEST(CrdDefaults, EqualTheRuntimeDefaults) {
  const auto crd = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/manifests/crd/ppu.dev_ppujobs.yaml");
  const auto training =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["training"];
  ASSERT_TRUE(training["properties"]) << "spec.training has no properties in the CRD";
  std::map<std::string, YAML::Node> defaults;
  collect_defaults(training["properties"], "", defaults);
  ASSERT_GT(defaults.size(), 20u);
  const auto runtime = YAML::Load(ppu::to_yaml(ppu::parse_config("")));
  for (const auto& [key, value] : defaults) {
    const auto mine = lookup(runtime, key);
    if (key.rfind("model.", 0) == 0 && key != "model.preset" && key != "model.activation") continue;  // preset-derived
    ASSERT_TRUE(mine.IsDefined() && !mine.IsNull()) << "CRD default for unknown key " << key;
    if (mine.Scalar() == value.Scalar()) continue;
    double a = 0, b = 0;
    const bool numeric = YAML::convert<double>::decode(mine, a) && YAML::convert<double>::decode(value, b);
    EXPECT_TRUE(numeric && a == b) << key << ": CRD default '" << value.Scalar() << "', runtime default '"
                                   << mine.Scalar() << "'";
  }
}

namespace {
void collect_leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& kv : node) {
    const std::string key = prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>();
    if (kv.second.IsMap()) collect_leaves(kv.second, key, out);
    else out.push_back(key);
  }
}

// Whether the object schema `schema` lists the dotted `key` as a typed property.
bool has_property(const YAML::Node& schema, const std::string& key) {
  const size_t dot = key.find('.');
  const YAML::Node props = schema["properties"];
  // A missing key gives an invalid node, which throws on anything but IsDefined().
  if (!props.IsDefined() || !props.IsMap()) return false;
  const YAML::Node child = props[key.substr(0, dot)];
  if (!child.IsDefined() || !child.IsMap()) return false;
  if (dot != std::string::npos) return has_property(child, key.substr(dot + 1));
  const YAML::Node type = child["type"];
  return type.IsDefined() && type.IsScalar();
}
}  // namespace

TEST(CrdDefaults, EveryRuntimeKeyIsInTheSchema) {
  const YAML::Node crd = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/manifests/crd/ppu.dev_ppujobs.yaml");
  const YAML::Node training =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["training"];
  std::vector<std::string> keys;
  collect_leaves(YAML::Load(ppu::to_yaml(ppu::parse_config(""))), "", keys);
  ASSERT_GT(keys.size(), 40u);
  for (const auto& key : keys)
    EXPECT_TRUE(has_property(training, key)) << "config key " << key << " is not in the CRD's spec.training schema";
  EXPECT_FALSE(has_property(training, "outer.no_such_key")) << "the check itself must be able to fail";
}

// The CEL rules cannot call the runtime, so they carry each preset's d_model, heads and layers
// as a literal table; those tables, and the schema's preset enum, must be model_preset()'s.
TEST(CrdDefaults, CelPresetTablesAreTheRuntimePresets) {
  const YAML::Node crd = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/manifests/crd/ppu.dev_ppujobs.yaml");
  const YAML::Node spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  const auto names = ppu::model_preset_names();
  std::vector<std::string> enum_names;
  for (const auto& n : spec["properties"]["training"]["properties"]["model"]["properties"]["preset"]["enum"])
    enum_names.push_back(n.as<std::string>());
  EXPECT_EQ(std::set<std::string>(enum_names.begin(), enum_names.end()),
            std::set<std::string>(names.begin(), names.end()));

  const std::regex table(R"(self\.training\.model\.(\w+) :\s*\{([^}]*)\}\[self\.training\.model\.preset\])");
  const std::regex entry(R"('([\w-]+)': (\d+))");
  std::set<std::string> fields_checked;
  for (const auto& rule : spec["x-kubernetes-validations"]) {
    const auto text = rule["rule"].as<std::string>();
    for (std::sregex_iterator t(text.begin(), text.end(), table), end; t != end; ++t) {
      const std::string field = (*t)[1];
      const std::string body = (*t)[2];
      std::map<std::string, int> literal;
      for (std::sregex_iterator e(body.begin(), body.end(), entry); e != end; ++e)
        literal[(*e)[1]] = std::stoi((*e)[2]);
      EXPECT_EQ(literal.size(), names.size()) << field << " table: " << body;
      for (const auto& name : names) {
        const auto preset = ppu::model_preset(name);
        ASSERT_TRUE(preset.has_value()) << name;
        const int want = field == "d_model"  ? preset->d_model
                         : field == "heads"  ? preset->heads
                         : field == "layers" ? preset->layers
                                             : -1;
        ASSERT_NE(want, -1) << "a CEL table of an unexpected field: " << field;
        EXPECT_EQ(literal[name], want) << "CEL table of model." << field << ", preset " << name;
      }
      fields_checked.insert(field);
    }
  }
  EXPECT_EQ(fields_checked, (std::set<std::string>{"d_model", "heads", "layers"}))
      << "the rules' tables were not all found";
}
