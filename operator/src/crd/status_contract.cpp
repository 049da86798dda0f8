#include "crd/status_contract.h"

#include <string>

#include "crd/field_schema.h"

namespace ppu::op::crd {

namespace {

// An OpenAPI schema node as a contract shape.
nlohmann::json shape_of(const YAML::Node& schema) {
  nlohmann::json out = nlohmann::json::object();
  if (schema["x-kubernetes-int-or-string"].IsDefined()) out["type"] = "int-or-string";
  else if (schema["type"].IsDefined()) out["type"] = schema["type"].as<std::string>();
  if (schema["description"].IsDefined()) out["doc"] = schema["description"].as<std::string>();
  if (schema["properties"].IsDefined()) {
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& p : schema["properties"]) fields[p.first.as<std::string>()] = shape_of(p.second);
    out["fields"] = fields;
  }
  if (schema["items"].IsDefined()) out["items"] = shape_of(schema["items"]);
  if (schema["additionalProperties"].IsDefined() && schema["additionalProperties"].IsMap())
    out["values"] = shape_of(schema["additionalProperties"]);
  return out;
}

}  // namespace

nlohmann::json status_contract() { return shape_of(object_schema<PPUJobStatus>()); }

}  // namespace ppu::op::crd
