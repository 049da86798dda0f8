// The OpenAPI schema of a struct declared from a field list (reconcile/api_fields.h): one
// property per line of the list, in its order. From the member's C++ type: `type` (int, int64_t:
// integer; bool: boolean; std::string: string; a listed struct: object, its properties from its
// own list; std::vector: array of its element; JobPhase: string with the phases as enum;
// IntOrString: x-kubernetes-int-or-string; json: nothing, the line's schema says it all). Then
// the line's schema attributes, the default (lists whose kDefaults is set: the initial value of a
// member that is neither optional, json nor required) and the doc as description. A schema
// attribute that restates what the type decides (type, enum of a phase, properties, items)
// throws std::logic_error, so a line cannot disagree with its member.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "crd/yaml_text.h"
#include "reconcile/api_fields.h"
#include "reconcile/ppujob_status.h"

namespace ppu::op::crd {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

// What a member's type decides: `head` goes first in its property, `tail` last.
struct TypeSchema {
  YAML::Node head{YAML::NodeType::Map};
  YAML::Node tail{YAML::NodeType::Map};
};

template <class T>
YAML::Node object_schema();
template <class T>
YAML::Node object_or_scalar_schema();

// `n` and every collection in it without a style of their own: the writer lays them out by width.
inline void default_style(YAML::Node n) {
  if (!n.IsMap() && !n.IsSequence()) return;
  n.SetStyle(YAML::EmitterStyle::Default);
  for (auto it = n.begin(); it != n.end(); ++it) default_style(n.IsMap() ? it->second : *it);
}

// Whether mapping `n` has `key` (read through a const node, which adds nothing to it).
inline bool has_key(const YAML::Node& n, const std::string& key) { return n[key].IsDefined(); }

template <class T>
TypeSchema type_schema() {
  TypeSchema s;
  if constexpr (IsOptional<T>::value) {
    return type_schema<typename T::value_type>();
  } else if constexpr (std::is_same_v<T, ConditionList>) {
    return type_schema<std::vector<Condition>>();
  } else if constexpr (IsVector<T>::value) {
    s.head["type"] = str("array");
    s.tail["items"] = object_or_scalar_schema<typename T::value_type>();
  } else if constexpr (kIsFieldStruct<T>) {
    const YAML::Node o = object_schema<T>();
    for (auto it = o.begin(); it != o.end(); ++it) {
      const std::string key = it->first.Scalar();
      (key == "type" ? s.head : s.tail)[key] = it->second;
    }
  } else if constexpr (std::is_same_v<T, JobPhase>) {
    YAML::Node words(YAML::NodeType::Sequence);
    for (const auto& [p, word] : kPhaseWords) words.push_back(str(word));
    s.head["type"] = str("string");
    s.head["enum"] = words;
  } else if constexpr (std::is_same_v<T, IntOrString>) {
    s.head["x-kubernetes-int-or-string"] = boolean(true);
  } else if constexpr (std::is_same_v<T, bool>) {
    s.head["type"] = str("boolean");
  } else if constexpr (std::is_integral_v<T>) {
    s.head["type"] = str("integer");
  } else if constexpr (std::is_same_v<T, std::string>) {
    s.head["type"] = str("string");
  } else {
    static_assert(std::is_same_v<T, json>, "a field type with no OpenAPI type");
  }
  return s;
}

template <class T>
YAML::Node object_or_scalar_schema() {
  const TypeSchema s = type_schema<T>();
  YAML::Node n(YAML::NodeType::Map);
  for (const YAML::Node& part : {s.head, s.tail})
    for (auto it = part.begin(); it != part.end(); ++it) n[it->first.Scalar()] = it->second;
  return n;
}

template <class T>
YAML::Node default_of(const T& v) {
  if constexpr (kIsFieldStruct<T>) return YAML::Node(YAML::NodeType::Map);
  else if constexpr (std::is_same_v<T, bool>) return boolean(v);
  else if constexpr (std::is_integral_v<T>) return integer(v);
  else if constexpr (std::is_same_v<T, std::string>) return str(v);
  else static_assert(std::is_same_v<T, std::string>, "a default of a type the CRD cannot state");
}

// One line of a list as a property; `required` is set when its schema says `required: true`.
template <class Parent, class M>
YAML::Node property_schema(const ApiField& field, const M& initial, bool& required) {
  const std::string where = std::string(FieldList<Parent>::kName) + "." + field.key;
  YAML::Node attrs = parse("{" + std::string(field.schema) + "}", where);
  default_style(attrs);  // laid out by width, not as the line's flow text
  required = has_key(attrs, "required") && static_cast<const YAML::Node&>(attrs)["required"].as<bool>();
  attrs.remove("required");
  const TypeSchema t = type_schema<M>();
  YAML::Node p(YAML::NodeType::Map);
  for (auto it = t.head.begin(); it != t.head.end(); ++it) p[it->first.Scalar()] = it->second;
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (has_key(p, key) || has_key(t.tail, key))
      throw std::logic_error(where + ": schema attribute '" + key + "' is decided by the member's type");
    p[key] = it->second;
  }
  if constexpr (FieldList<Parent>::kDefaults && !IsOptional<M>::value && !std::is_same_v<M, json>) {
    if (!required) p["default"] = default_of(initial);
  }
  if (*field.doc) p["description"] = str(field.doc);
  for (auto it = t.tail.begin(); it != t.tail.end(); ++it) p[it->first.Scalar()] = it->second;
  return p;
}

template <class T>
YAML::Node object_schema() {
  const T initial{};
  YAML::Node o(YAML::NodeType::Map);
  o["type"] = str("object");
  YAML::Node required(YAML::NodeType::Sequence);
  YAML::Node properties(YAML::NodeType::Map);
  properties.SetStyle(YAML::EmitterStyle::Block);  // one property a line
  FieldList<T>::visit(initial, [&](const ApiField& field, const auto& member) {
    bool is_required = false;
    properties[field.key] = property_schema<T>(field, member, is_required);
    if (is_required) required.push_back(str(field.key));
  });
  if (required.size() > 0) o["required"] = required;
  o["properties"] = properties;
  return o;
}

}  // namespace ppu::op::crd
