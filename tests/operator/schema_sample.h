// Test helper: a value for every property of an openAPIV3 schema node (a CRD's), nested objects
// and arrays included, of the type the schema names (the first enum value, a date-time for a
// formatted string), so that a test can fill every field the schema declares.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <string>

namespace ppu::op::testing {

inline nlohmann::json sample_of(const YAML::Node& schema) {
  if (schema["x-kubernetes-int-or-string"]) return "12.345";
  if (schema["enum"]) return schema["enum"][0].as<std::string>();
  const std::string type = schema["type"] ? schema["type"].as<std::string>() : "";
  if (type == "integer") return 7;
  if (type == "string") return schema["format"] ? "2027-01-15T08:00:00Z" : "text";
  if (type == "array") return nlohmann::json::array({sample_of(schema["items"])});
  nlohmann::json out = nlohmann::json::object();
  for (const auto& p : schema["properties"]) out[p.first.as<std::string>()] = sample_of(p.second);
  return out;
}

}  // namespace ppu::op::testing
