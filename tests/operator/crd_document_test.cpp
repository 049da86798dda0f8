// The CRD ppu-crd renders (operator/src/crd/) against what reads and writes the same objects:
// the status ppujob_status.cpp writes has exactly the rendered status schema's keys, at every
// level; the spec parse_job reads from an empty spec has the rendered defaults; the CEL rules'
// preset maps are the runtime's presets and their modes the runtime's slicing modes; the
// printer columns name status fields of the schema with their types; the checked-in CRD and its
// chart copy are the rendering.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/export_result.h"
#include "core/model_spec.h"
#include "crd/cel_rules.h"
#include "crd/crd_document.h"
#include "crd/spec_passthrough.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"
#include "reconcile/ppujob_status.h"
#include "reconcile/recovery_pacing.h"
#include "reconcile/spec_passthrough_keys.h"
#include "schema_sample.h"

namespace ppu::op {
namespace {

YAML::Node schema_root() {
  static const YAML::Node doc = crd::crd_document();
  return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}
YAML::Node status_schema() { return schema_root()["properties"]["status"]; }
YAML::Node spec_schema() { return schema_root()["properties"]["spec"]; }

std::set<std::string> property_names(const YAML::Node& object) {
  std::set<std::string> names;
  for (const auto& p : object["properties"]) names.insert(p.first.as<std::string>());
  return names;
}

using testing::sample_of;

// Every object in `written` has exactly the properties of its schema, at every level.
void expect_same_keys(const json& written, const YAML::Node& schema, const std::string& path) {
  if (schema["type"] && schema["type"].as<std::string>() == "array") {
    ASSERT_TRUE(written.is_array()) << path;
    for (const auto& item : written) expect_same_keys(item, schema["items"], path + "[]");
    return;
  }
  if (!schema["properties"]) return;
  ASSERT_TRUE(written.is_object()) << path;
  std::set<std::string> keys;
  for (const auto& [k, v] : written.items()) keys.insert(k);
  EXPECT_EQ(keys, property_names(schema)) << "keys written at " << path << " vs the rendered schema";
  for (const auto& [k, v] : written.items())
    if (schema["properties"][k]) expect_same_keys(v, schema["properties"][k], path + "." + k);
}

TEST(CrdDocument, TheStatusWrittenHasTheRenderedSchemasKeys) {
  // A status with every member set, read from a sample of the rendered schema...
  const PPUJobStatus full = sample_of(status_schema()).get<PPUJobStatus>();
  EXPECT_TRUE(full.unknown.empty()) << "rendered fields ppujob_status.cpp does not read: " << full.unknown.dump();
  // ...is written with exactly the schema's keys, nested objects and list items included.
  expect_same_keys(json(full), status_schema(), "status");
  // And the list's top level is what the schema lists, in its order.
  std::vector<std::string> listed, rendered;
  FieldList<PPUJobStatus>::visit(full, [&](const ApiField& f, const auto&) { listed.emplace_back(f.key); });
  for (const auto& p : status_schema()["properties"]) rendered.push_back(p.first.as<std::string>());
  EXPECT_EQ(listed, rendered);
  EXPECT_EQ(listed.size(), 33u) << "a status field added: keep this count honest";
}

TEST(CrdDocument, TypesFollowTheMembers) {
  const YAML::Node s = status_schema()["properties"];
  EXPECT_EQ(s["phase"]["enum"].size(), std::size(kPhaseWords));
  EXPECT_EQ(s["phase"]["enum"][0].as<std::string>(), phase::kPending);
  EXPECT_TRUE(s["perplexity"]["x-kubernetes-int-or-string"].as<bool>());
  EXPECT_FALSE(s["perplexity"]["type"]);
  EXPECT_EQ(s["result"]["properties"]["tokens"]["type"].as<std::string>(), "integer");
  EXPECT_EQ(s["conditions"]["items"]["required"].size(), 5u);
  EXPECT_EQ(s["recentRecoveries"]["maxItems"].as<size_t>(), kRecoveryHistoryMax);
  EXPECT_EQ(key_of(&PPUJobStatus::model_export), "export");
  EXPECT_EQ(key_of(&ExportedModel::claim_name), "claimName");
  EXPECT_THROW(key_of(&PPUJobStatus::unknown), std::logic_error) << "unknown is no field of the list";
}

// The value of a scalar member as the CRD writes a default.
template <class T>
std::optional<std::string> scalar_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else if constexpr (std::is_same_v<T, std::string>) return v;
  else return std::nullopt;
}

// parse_job's value of every member of `parsed` against the rendered schema's default of its key.
template <class T>
int expect_defaults(const T& parsed, const YAML::Node& schema, const std::string& path) {
  int compared = 0;
  FieldList<T>::visit(parsed, [&](const ApiField& f, const auto& member) {
    const YAML::Node p = schema["properties"][f.key];
    ASSERT_TRUE(p) << path << "." << f.key << " is not rendered";
    const auto text = scalar_text(member);
    if (!text) return;
    if (p["default"]) {
      EXPECT_EQ(*text, p["default"].Scalar()) << path << "." << f.key;
      ++compared;
      return;
    }
    bool required = false;
    for (const auto& r : schema["required"]) required = required || r.as<std::string>() == f.key;
    EXPECT_TRUE(required) << path << "." << f.key << ": a value of its own with neither a default nor required";
  });
  return compared;
}

TEST(CrdDocument, AnEmptySpecParsesToTheRenderedDefaults) {
  json job = {{"metadata", {{"name", "demo"}}}, {"spec", {{"export", json::object()}}}};
  const JobSpec j = parse_job(job);
  ASSERT_TRUE(j.model_export);
  const YAML::Node spec = spec_schema();
  int compared = expect_defaults(j, spec, "spec");
  compared += expect_defaults(j.run_policy, spec["properties"]["runPolicy"], "spec.runPolicy");
  compared += expect_defaults(*j.model_export, spec["properties"]["export"], "spec.export");
  EXPECT_EQ(compared, 2 + 7 + 4) << "ports, runPolicy's seven, export's four";
  EXPECT_EQ(j.master_port, contract::kRendezvousPort);
  EXPECT_EQ(spec["properties"]["data"]["properties"]["mountPath"]["default"].as<std::string>(), kDataPath);
  EXPECT_TRUE(spec["properties"]["runPolicy"]["default"].IsMap()) << "runPolicy: {} so that its defaults apply";
  std::set<std::string> required;
  for (const auto& r : spec["required"]) required.insert(r.as<std::string>());
  EXPECT_EQ(required, (std::set<std::string>{"replicas", "image"}));
}

TEST(CrdDocument, CelPresetMapsAreTheRuntimePresetsAndModesItsChoices) {
  const std::regex table(R"(self\.training\.model\.(\w+) :\s*\{([^}]*)\}\[self\.training\.model\.preset\])");
  const std::regex entry(R"('([\w-]+)': (\d+))");
  const std::regex mode(R"(slicing\.mode (?:==|!=|in) \[?'([^']+)')");
  const auto modes = choice_names<SliceMode>();
  std::set<std::string> fields;
  for (const auto& rule : spec_schema()["x-kubernetes-validations"]) {
    const auto text = rule["rule"].as<std::string>();
    for (std::sregex_iterator t(text.begin(), text.end(), table), end; t != end; ++t) {
      const std::string field = (*t)[1], body = (*t)[2];
      fields.insert(field);
      std::map<std::string, int> literal;
      for (std::sregex_iterator e(body.begin(), body.end(), entry); e != end; ++e)
        literal[(*e)[1]] = std::stoi((*e)[2]);
      EXPECT_EQ(literal.size(), model_preset_names().size()) << body;
      for (const auto& name : model_preset_names()) {
        const ModelSpec m = *model_preset(name);
        EXPECT_EQ(literal[name], field == "d_model" ? m.d_model
                                 : field == "heads" ? m.heads
                                                    : m.layers)
            << field << " of " << name;
      }
    }
    for (std::sregex_iterator m(text.begin(), text.end(), mode), end; m != end; ++m)
      EXPECT_NE(std::find(modes.begin(), modes.end(), (*m)[1]), modes.end()) << "mode " << (*m)[1];
  }
  EXPECT_EQ(fields, (std::set<std::string>{"d_model", "heads", "layers"}));
  EXPECT_EQ(crd::preset_table("heads").front(), '{');
  EXPECT_THROW(crd::preset_table("vocabulary"), std::logic_error);
}

// Each divisibility rule lists the modes in which the ranks' check_slicing demands it (the
// runtime's slicing_divides table), no more and no fewer.
TEST(CrdDocument, CelDivisibilityRulesNameTheModesTheRanksCheck) {
  const std::regex list(R"(slicing\.mode in \[([^\]]*)\]\) \|\| \(([\s\S]*)\n% self\.training\.slicing\.slices == 0)");
  const std::regex quoted(R"('([^']+)')");
  std::map<std::string, std::set<std::string>> listed;  // what must divide -> the modes listed
  for (const auto& rule : spec_schema()["x-kubernetes-validations"]) {
    const auto text = rule["rule"].as<std::string>();
    std::smatch m;
    if (!std::regex_search(text, m, list)) continue;
    const std::string body = m[2], names = m[1];
    const std::string what = body.find("d_model") != std::string::npos  ? "mlp_hidden"
                             : body.find("heads") != std::string::npos  ? "heads"
                             : body.find("layers") != std::string::npos ? "layers"
                                                                        : "?";
    for (std::sregex_iterator q(names.begin(), names.end(), quoted), end; q != end; ++q) listed[what].insert((*q)[1]);
  }
  std::map<std::string, std::set<std::string>> want;
  for (const auto& name : choice_names<SliceMode>()) {
    const SlicingDivides d = slicing_divides(parse_choice<SliceMode>("slicing.mode", name));
    if (d.mlp_hidden) want["mlp_hidden"].insert(name);
    if (d.heads) want["heads"].insert(name);
    if (d.layers) want["layers"].insert(name);
  }
  EXPECT_EQ(listed, want);
  EXPECT_EQ(want["heads"].count("heads"), 1U) << "the heads-only ablation slices the heads";
  EXPECT_EQ(want["mlp_hidden"].count("heads"), 0U) << "the heads-only ablation keeps the MLPs whole";
}

// The pass-through fields' schemas sit under the names the operator reads them by.
TEST(CrdDocument, PassThroughFieldsAreTheKeysTheOperatorReads) {
  std::vector<std::string> keys;
  for (const auto& field : crd::spec_passthrough_schema()) keys.push_back(field.first.as<std::string>());
  EXPECT_EQ(keys, std::vector<std::string>(passthrough::kAll.begin(), passthrough::kAll.end()));
  const auto spec_fields = property_names(spec_schema());
  for (const char* key : passthrough::kAll) EXPECT_EQ(spec_fields.count(key), 1U) << key;
}

// spec.export.format and .dtype are passed to ppu-export as --format and --dtype: the CRD admits
// exactly its choices, and defaults to its defaults (the first of each list).
TEST(CrdDocument, ExportChoicesArePpuExportsOwn) {
  const YAML::Node exp = spec_schema()["properties"]["export"]["properties"];
  const auto names = [](const YAML::Node& seq) {
    std::vector<std::string> out;
    for (const auto& n : seq) out.push_back(n.as<std::string>());
    return out;
  };
  using namespace ppu::export_choice;
  EXPECT_EQ(names(exp["format"]["enum"]), std::vector<std::string>(std::begin(kFormats), std::end(kFormats)));
  EXPECT_EQ(names(exp["dtype"]["enum"]), std::vector<std::string>(std::begin(kDtypes), std::end(kDtypes)));
  EXPECT_EQ(exp["format"]["default"].as<std::string>(), kFormats[0]);
  EXPECT_EQ(exp["dtype"]["default"].as<std::string>(), kDtypes[0]);
}

// runPolicy.cleanPodPolicy admits exactly the policies the operator acts on (job_constants.h).
TEST(CrdDocument, CleanPodPolicyChoicesAreTheOperatorsOwn) {
  const YAML::Node policy = spec_schema()["properties"]["runPolicy"]["properties"]["cleanPodPolicy"];
  std::vector<std::string> choices;
  for (const auto& n : policy["enum"]) choices.push_back(n.as<std::string>());
  EXPECT_EQ(choices,
            (std::vector<std::string>{clean_pod_policy::kAll, clean_pod_policy::kRunning, clean_pod_policy::kNone}));
  EXPECT_EQ(policy["default"].as<std::string>(), clean_pod_policy::kRunning);
}

TEST(CrdDocument, PrinterColumnsShowStatusFieldsWithTheirTypes) {
  const YAML::Node columns = crd::crd_document()["spec"]["versions"][0]["additionalPrinterColumns"];
  int status_columns = 0;
  for (const auto& c : columns) {
    const auto path = c["jsonPath"].as<std::string>();
    if (path.rfind(".status.", 0) != 0) continue;
    ++status_columns;
    YAML::Node field;
    field.reset(status_schema());
    // A list's filter ([?(@.type=="Exported")]) selects items: the field is then the items'.
    std::stringstream parts(std::regex_replace(path.substr(8), std::regex(R"(\[[^\]]*\])"), "[]"));
    std::string part;
    while (std::getline(parts, part, '.')) {
      const auto filter = part.find('[');
      field.reset(field["properties"][part.substr(0, filter)]);  // reset: assigning would write the tree
      ASSERT_TRUE(field) << path << " names no status field";
      if (filter != std::string::npos) field.reset(field["items"]);
    }
    const std::string type = field["type"] ? field["type"].as<std::string>() : "string";
    EXPECT_EQ(c["type"].as<std::string>(), type) << path;
  }
  EXPECT_EQ(status_columns, 13) << "every column but Age";
}

std::string read(const std::string& rel) {
  std::ifstream in(std::string(PPU_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CrdDocument, TheCheckedInCrdAndItsChartCopyAreTheRendering) {
  const std::string text = crd::crd_yaml();
  EXPECT_EQ(read(crd::kCrdPath), text) << "run: ninja -C build generate-schema";
  EXPECT_EQ(read(crd::kChartCrdPath), text) << "run: ninja -C build generate-schema";
}

}  // namespace
}  // namespace ppu::op
