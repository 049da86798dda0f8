#include "crd/crd_document.h"

#include <cctype>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/config_reference.h"
#include "crd/cel_rules.h"
#include "crd/field_schema.h"
#include "crd/spec_passthrough.h"
#include "crd/yaml_text.h"
#include "kube/resource_kind.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"
#include "reconcile/ppujob_status.h"

namespace ppu::op::crd {

namespace {

// `map` with `key: value` placed before its `before` key (at the end when it has none).
YAML::Node insert_before(const YAML::Node& map, const std::string& before, const std::string& key,
                         const YAML::Node& value) {
  YAML::Node out(YAML::NodeType::Map);
  bool placed = false;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.Scalar() == before && !placed) {
      out[key] = value;
      placed = true;
    }
    out[it->first.Scalar()] = it->second;
  }
  if (!placed) out[key] = value;
  return out;
}

// The schema of the property at `path` (names below `object`'s properties, dot-separated): a
// handle into the tree. (Assigning to a yaml-cpp handle overwrites the node it refers to, so
// handles are moved with reset().)
YAML::Node property_at(const YAML::Node& object, const std::string& path) {
  YAML::Node at;
  at.reset(object);
  std::istringstream parts(path);
  std::string name;
  while (std::getline(parts, name, '.')) {
    const YAML::Node& here = at;
    if (!has_key(here, "properties") || !has_key(here["properties"], name))
      throw std::logic_error("no property '" + path + "' in the CRD");
    at.reset(here["properties"][name]);
  }
  return at;
}

YAML::Node rule_list(const std::vector<CelRule>& rules) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& r : rules) {
    YAML::Node n(YAML::NodeType::Map);
    n.SetStyle(YAML::EmitterStyle::Block);
    n["rule"] = str(r.rule);
    if (!r.field_path.empty()) n["fieldPath"] = str(r.field_path);
    n["message"] = str(r.message);
    list.push_back(n);
  }
  return list;
}

// spec: the operator's own fields, the passthrough ones, training; then the CEL rules in place.
YAML::Node spec_schema() {
  YAML::Node spec = object_schema<JobSpec>();
  const YAML::Node passthrough = spec_passthrough_schema();
  for (auto it = passthrough.begin(); it != passthrough.end(); ++it) {
    if (has_key(spec["properties"], it->first.Scalar()))
      throw std::logic_error("spec." + it->first.Scalar() + " is both a field of JobSpec and a passthrough field");
    spec["properties"][it->first.Scalar()] = it->second;
  }
  spec["properties"]["training"] = parse(crd_training_schema(0), "crd_training_schema()")["training"];
  for (const auto& placed : cel_rules()) {
    if (placed.at.empty()) {
      spec.reset(insert_before(spec, "properties", "x-kubernetes-validations", rule_list(placed.rules)));
      continue;
    }
    const auto dot = placed.at.rfind('.');
    YAML::Node parent = dot == std::string::npos ? spec : property_at(spec, placed.at.substr(0, dot));
    const std::string name = dot == std::string::npos ? placed.at : placed.at.substr(dot + 1);
    property_at(parent, name);  // throws when absent
    parent["properties"][name] =
        insert_before(parent["properties"][name], "properties", "x-kubernetes-validations", rule_list(placed.rules));
  }
  return spec;
}

// One printer column; a status column's type is its field's in `status` (an int-or-string shows
// as a string).
struct Column {
  std::string name;
  std::string json_path;
  std::string type;
  std::string description;
  int priority = 0;
};

Column status_column(const YAML::Node& status, const std::string& name, const std::string& path,
                     const std::string& description = "", int priority = 0) {
  const YAML::Node field = property_at(status, path);
  const std::string type = has_key(field, "type") ? field["type"].Scalar() : "string";
  return {name, ".status." + path, type, description, priority};
}

std::string export_reasons() {
  std::string out;
  const size_t n = std::size(reason::kExportReasons);
  for (size_t i = 0; i < n; ++i)
    out += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + reason::kExportReasons[i];
  return out;
}

YAML::Node printer_columns(const YAML::Node& status) {
  using S = PPUJobStatus;
  const std::vector<Column> columns = {
      status_column(status, "Phase", key_of(&S::phase)),
      status_column(status, "Ready", key_of(&S::ready_string), "ready ranks / replicas"),  // words: not Ready
      status_column(status, "Round", key_of(&S::outer_round)),
      status_column(status, "Perplexity", key_of(&S::perplexity)),
      status_column(status, "Progress", key_of(&S::progress_percentage),
                    "percent of train.steps done by the slowest rank"),
      status_column(status, "ETA", key_of(&S::estimated_remaining_seconds),
                    "seconds the slowest rank still needs at its measured rate"),
      status_column(status, "Restarts", key_of(&S::restart_count)),
      status_column(status, "Live", key_of(&S::live_ranks),
                    "network.recovery live: ranks in the live group (the smallest count any rank reports)"),
      status_column(status, "Recoveries", key_of(&S::recoveries),
                    "network.recovery live: rank pods recreated alone (not counted in Restarts)"),
      status_column(status, "Reason", key_of(&S::reason),
                    "why the job is stuck or failed, e.g. PodSecurity, QuotaExceeded"),
      {"Export",
       ".status." + key_of(&S::conditions) + "[?(@." + key_of(&Condition::type) + "==\"" + condition::kExported +
           "\")]." + key_of(&Condition::reason),
       "string", "with spec.export: " + export_reasons() + " (condition " + condition::kExported + ")"},
      {"Age", ".metadata.creationTimestamp", "date", ""},
      status_column(status, "Message", key_of(&S::message), "", 1),
      status_column(status, "Model", key_of(&S::model_export) + "." + key_of(&ExportedModel::path),
                    "the exported model's directory on the checkpoint volume", 1),
  };
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& c : columns) {
    YAML::Node n(YAML::NodeType::Map);
    n["name"] = str(c.name);
    n["type"] = str(c.type);
    n["jsonPath"] = str(c.json_path);
    if (c.priority) n["priority"] = integer(c.priority);
    if (!c.description.empty()) n["description"] = str(c.description);
    list.push_back(n);
  }
  return list;
}

YAML::Node type_only(const char* type) {
  YAML::Node n(YAML::NodeType::Map);
  n["type"] = str(type);
  return n;
}

}  // namespace

YAML::Node crd_document() {
  const ResourceInfo& r = resource(ResourceKind::PPUJob);
  std::string singular = r.kind;
  for (auto& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));

  YAML::Node names(YAML::NodeType::Map);
  names["kind"] = str(r.kind);
  names["listKind"] = str(std::string(r.kind) + "List");
  names["plural"] = str(r.plural);
  names["singular"] = str(singular);
  names["shortNames"].push_back(str("ppj"));
  names["categories"].push_back(str("all"));

  YAML::Node schema(YAML::NodeType::Map);
  schema["type"] = str("object");
  schema["description"] = str("PPUJob runs one PPU (or baseline) training job as a gang of K rank pods.");
  schema["properties"]["apiVersion"] = type_only("string");
  schema["properties"]["kind"] = type_only("string");
  schema["properties"]["metadata"] = type_only("object");
  schema["properties"]["spec"] = spec_schema();
  const YAML::Node status = object_schema<PPUJobStatus>();
  schema["properties"]["status"] = status;

  YAML::Node version(YAML::NodeType::Map);
  version["name"] = str(r.version);
  version["served"] = boolean(true);
  version["storage"] = boolean(true);
  version["subresources"]["status"] = YAML::Node(YAML::NodeType::Map);
  // kubectl scale ppj: spec.replicas, which only an elastic job may change while it runs (CEL).
  version["subresources"]["scale"]["specReplicasPath"] = str(".spec.replicas");
  version["subresources"]["scale"]["statusReplicasPath"] = str(".status." + key_of(&PPUJobStatus::active_ranks));
  version["additionalPrinterColumns"] = printer_columns(status);
  version["schema"]["openAPIV3Schema"] = schema;

  YAML::Node doc(YAML::NodeType::Map);
  doc["apiVersion"] = str("apiextensions.k8s.io/v1");
  doc["kind"] = str("CustomResourceDefinition");
  doc["metadata"]["name"] = str(std::string(r.plural) + "." + r.group);
  doc["spec"]["group"] = str(r.group);
  doc["spec"]["scope"] = str(r.namespaced ? "Namespaced" : "Cluster");
  doc["spec"]["names"] = names;
  doc["spec"]["versions"].push_back(version);
  return doc;
}

std::string crd_yaml() {
  return "# PPUJob: a gang of K `ppu-train` ranks trained with partial parameter updates (docs/OPERATOR.md).\n"
         "# Generated whole by ppu-crd (operator/src/crd/) from the operator's spec and status field lists\n"
         "# (operator/src/reconcile/job_spec.h, ppujob_status.h), the runtime's config schema\n"
         "# (runtime/core/config_keys.h) and model presets; do not edit. `ninja -C build generate-schema`\n"
         "# rewrites it and the chart's copy; the ctest operator.crd_file fails while either differs.\n"
         "# CEL rules reject cross-field mistakes at admission with messages that name the field.\n" +
         write_yaml(crd_document());
}

}  // namespace ppu::op::crd
