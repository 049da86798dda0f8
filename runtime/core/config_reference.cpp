#include "core/config_reference.h"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/config.h"
#include "core/decimal.h"

namespace ppu {

namespace {

std::string section_of(const std::string& key) {
  const auto dot = key.find('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

std::string leaf_of(const std::string& key) {
  const auto dot = key.find('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

const char* section_doc(const std::string& section) {
  for (const auto& s : kSectionDocs)
    if (section == s.name) return s.doc;
  throw std::logic_error("config section '" + section + "' has no entry in kSectionDocs (core/config_keys.h)");
}

// The sections in schema order, each with its keys.
std::vector<std::pair<std::string, std::vector<KeySchema>>> by_section() {
  std::vector<std::pair<std::string, std::vector<KeySchema>>> sections;
  for (auto& row : config_schema()) {
    const std::string s = section_of(row.key);
    if (sections.empty() || sections.back().first != s) sections.push_back({s, {}});
    sections.back().second.push_back(std::move(row));
  }
  return sections;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A default as YAML: numbers plain (with a '.' before an exponent, which YAML 1.1 readers such
// as the API server's need to see a float), strings quoted.
std::string yaml_default(const KeySchema& k) {
  const std::string& v = *k.default_value;
  switch (k.type) {
    case KeyType::Double: {
      const auto e = v.find('e');
      if (e != std::string::npos && v.find('.') == std::string::npos) return v.substr(0, e) + ".0" + v.substr(e);
      return v;
    }
    case KeyType::Int:
    case KeyType::Int64:
    case KeyType::UInt64:
    case KeyType::Bool: return v;
    case KeyType::String:
    case KeyType::Choice: return quoted(v);
  }
  return v;
}

std::string crd_property(const KeySchema& k) {
  std::ostringstream os;
  os << leaf_of(k.key) << ": {type: ";
  switch (k.type) {
    case KeyType::Int: os << "integer"; break;
    case KeyType::Int64:
    case KeyType::UInt64: os << "integer, format: int64"; break;
    case KeyType::Double: os << "number"; break;
    case KeyType::Bool: os << "boolean"; break;
    case KeyType::String:
    case KeyType::Choice: os << "string"; break;
  }
  if (!k.choices.empty()) {
    os << ", enum: [";
    for (size_t i = 0; i < k.choices.size(); ++i) os << (i ? ", " : "") << quoted(k.choices[i]);
    os << "]";
  }
  const Bounds& b = k.bounds;
  if (b.has_min) os << ", minimum: " << shortest_decimal(b.min) << (b.min_open ? ", exclusiveMinimum: true" : "");
  else if (k.type == KeyType::UInt64) os << ", minimum: 0";
  if (b.has_max) os << ", maximum: " << shortest_decimal(b.max) << (b.max_open ? ", exclusiveMaximum: true" : "");
  if (k.default_value) os << ", default: " << yaml_default(k);
  os << ", description: " << quoted(k.doc + (k.default_value ? "" : " (default: model.preset's)")) << "}";
  return os.str();
}

std::string type_name(const KeySchema& k) {
  switch (k.type) {
    case KeyType::Int: return "integer";
    case KeyType::Int64: return "integer (64-bit)";
    case KeyType::UInt64: return "integer (unsigned 64-bit)";
    case KeyType::Double: return "number";
    case KeyType::Bool: return "boolean";
    case KeyType::String: return k.choices.empty() ? "string" : "choice";
    case KeyType::Choice: return "choice";
  }
  return "?";
}

std::string allowed(const KeySchema& k) {
  if (!k.choices.empty()) {
    std::string s;
    for (const auto& c : k.choices) s += (s.empty() ? "`" : ", `") + c + "`";
    return s;
  }
  const Bounds& b = k.bounds;
  if (b.has_min && b.has_max)
    return std::string(b.min_open ? "(" : "[") + shortest_decimal(b.min) + ", " + shortest_decimal(b.max) +
           (b.max_open ? ")" : "]");
  if (b.has_min) return std::string(b.min_open ? "> " : ">= ") + shortest_decimal(b.min);
  if (b.has_max) return std::string(b.max_open ? "< " : "<= ") + shortest_decimal(b.max);
  return k.type == KeyType::UInt64 ? ">= 0" : "";
}

std::string table_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string crd_training_schema(int indent) {
  std::ostringstream os;
  const std::string pad(indent, ' ');
  os << pad << "training:\n"
     << pad << "  type: object\n"
     << pad << "  default: {}\n"
     << pad << "  description: "
     << quoted("The ppu-train config (docs/CONFIG.md); rendered into a ConfigMap mounted at PPU_CONFIG.") << "\n"
     << pad << "  properties:\n";
  for (const auto& [section, keys] : by_section()) {
    std::string key_pad = pad + "    ";
    if (!section.empty()) {
      os << pad << "    " << section << ":\n"
         << pad << "      type: object\n"
         << pad << "      default: {}\n"
         << pad << "      description: " << quoted(section_doc(section)) << "\n"
         << pad << "      properties:\n";
      key_pad = pad + "        ";
    }
    for (const auto& k : keys) os << key_pad << crd_property(k) << "\n";
  }
  return os.str();
}

std::string config_reference_markdown() {
  std::ostringstream os;
  os << "# Config reference\n\n"
     << "Generated by `ppu-schema` from `runtime/core/config_keys.h`; do not edit. Every key below is read\n"
     << "the same way from a config file (`configs/*.yaml`, `ppu-train --config`), from `--set key=value`\n"
     << "and from a PPUJob's `spec.training`, whose CRD schema is generated from the same table.\n\n"
     << "Adding a key is one `KEY(...)` line in its section's list in `runtime/core/config_keys.h`,\n"
     << "then `ninja -C build generate-schema` to rewrite the CRD, its chart copy and this file\n"
     << "(`ppu-crd --check` and `ppu-schema --check`, unit tests, fail while they are out of date).\n"
     << "Rules that relate several keys are in `validate_config` (`runtime/core/config.cpp`).\n";
  for (const auto& [section, keys] : by_section()) {
    os << "\n## " << (section.empty() ? "Top level" : "`" + section + "`") << "\n\n"
       << section_doc(section) << "\n\n"
       << "| key | type | default | allowed | description |\n"
       << "|---|---|---|---|---|\n";
    for (const auto& k : keys) {
      const std::string def =
          k.default_value ? (k.default_value->empty() ? "`\"\"`" : "`" + *k.default_value + "`") : "model.preset's";
      os << "| `" << k.key << "` | " << type_name(k) << " | " << def << " | " << table_cell(allowed(k)) << " | "
         << table_cell(k.doc) << " |\n";
    }
  }
  return os.str();
}

}  // namespace ppu
