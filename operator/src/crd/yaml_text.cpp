#include "crd/yaml_text.h"

#include <cctype>
#include <cstdio>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace ppu::op::crd {

namespace {

constexpr const char* kStringTag = "!";  // what yaml-cpp gives a quoted scalar
constexpr const char* kRawTag = "?";     // and a plain one

YAML::Node tagged(const std::string& text, const char* tag) {
  YAML::Node n(text);
  n.SetTag(tag);
  return n;
}

bool is_string(const YAML::Node& n) {
  if (n.Tag() == kStringTag) return true;
  if (n.Tag() == kRawTag) return false;
  throw std::logic_error("untagged scalar '" + n.Scalar() + "' (build it with str() or raw())");
}

// The words and numbers YAML 1.1 (the API server's reader, and PyYAML) resolves to another type.
bool resolves_to_non_string(const std::string& s) {
  static const std::regex words(
      "y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~|=|<<.*");
  static const std::regex number(R"([-+]?(\.?[0-9].*|\.(inf|Inf|INF))|\.(nan|NaN|NAN))");
  return std::regex_match(s, words) || std::regex_match(s, number);
}

std::string double_quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// A scalar on one line, as it goes after "key: " or inside a flow collection. In a flow
// collection a string with spaces (prose) is quoted too, so that its commas read as its own.
std::string inline_scalar(const YAML::Node& n, bool in_flow) {
  const std::string& s = n.Scalar();
  if (!is_string(n)) return s;
  const bool prose_in_flow = in_flow && s.find(' ') != std::string::npos;
  return plain_safe(s, in_flow) && !prose_in_flow ? s : double_quoted(s);
}

// Whether every scalar in `n` fits on a line (a flow collection cannot hold a block scalar).
bool single_line_scalars(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar().find('\n') == std::string::npos;
  if (!n.IsSequence() && !n.IsMap()) return false;
  for (auto it = n.begin(); it != n.end(); ++it)
    if (!single_line_scalars(n.IsMap() ? it->second : *it)) return false;
  return true;
}

// A mapping's key: always a string here.
std::string key_text(const YAML::Node& k) {
  const std::string& s = k.Scalar();
  return plain_safe(s, true) ? s : double_quoted(s);
}

std::string flow(const YAML::Node& n) {
  if (n.IsScalar()) return inline_scalar(n, true);
  std::string out = n.IsMap() ? "{" : "[";
  bool first = true;
  for (auto it = n.begin(); it != n.end(); ++it) {
    out += first ? "" : ", ";
    first = false;
    if (n.IsMap()) out += key_text(it->first) + ": " + flow(it->second);
    else out += flow(*it);
  }
  return out + (n.IsMap() ? "}" : "]");
}

// Whether a collection starting at `column` is written in flow style.
bool use_flow(const YAML::Node& n, size_t column) {
  if (n.size() == 0) return true;
  if (n.Style() == YAML::EmitterStyle::Flow) return true;
  if (n.Style() == YAML::EmitterStyle::Block) return false;
  return single_line_scalars(n) && column + flow(n).size() <= static_cast<size_t>(kWidth);
}

// The words of `s` in lines of at most `room` characters, when folding gives `s` back.
bool fold(const std::string& s, size_t room, std::vector<std::string>& lines) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.find("  ") != std::string::npos) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  std::istringstream words(s);
  std::string word, line;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > room) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  lines.push_back(line);
  return true;
}

// The lines of a multi-line `s`, when a literal block (|-) gives `s` back.
bool literal_lines(const std::string& s, std::vector<std::string>& lines) {
  if (s.empty() || s.front() == ' ' || s.back() == '\n') return false;
  std::string line;
  std::istringstream in(s);
  while (std::getline(in, line)) {
    if (line.empty() || line.back() == ' ') return false;
    for (unsigned char c : line)
      if (c < 0x20 || c == 0x7f) return false;
    lines.push_back(line);
  }
  return true;
}

void write_map(std::ostream& os, const YAML::Node& map, int indent, const std::string& first_prefix);
void write_seq(std::ostream& os, const YAML::Node& seq, int indent);

// "<prefix>key:" and its value, starting a line; nested blocks are indented under the key.
void write_entry(std::ostream& os, const std::string& head, const YAML::Node& v, int indent) {
  const std::string pad(indent + 2, ' ');
  if (v.IsScalar()) {
    const std::string& s = v.Scalar();
    std::vector<std::string> lines;
    if (is_string(v) && s.find('\n') != std::string::npos && literal_lines(s, lines)) {
      os << head << " |-\n";
      for (const auto& l : lines) os << pad << l << "\n";
      return;
    }
    const std::string one = inline_scalar(v, false);
    if (head.size() + 1 + one.size() > static_cast<size_t>(kWidth) && is_string(v) &&
        fold(s, kWidth - pad.size(), lines) && lines.size() > 1) {
      os << head << " >-\n";
      for (const auto& l : lines) os << pad << l << "\n";
      return;
    }
    os << head << " " << one << "\n";
  } else if (v.IsMap() || v.IsSequence()) {
    if (use_flow(v, head.size() + 1)) {
      os << head << " " << flow(v) << "\n";
    } else if (v.IsMap()) {
      os << head << "\n";
      write_map(os, v, indent + 2, std::string(indent + 2, ' '));
    } else {
      os << head << "\n";
      write_seq(os, v, indent);  // a list's dashes line up with its key
    }
  } else {
    throw std::logic_error("a null or undefined node under '" + head + "'");
  }
}

void write_map(std::ostream& os, const YAML::Node& map, int indent, const std::string& first_prefix) {
  bool first = true;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string prefix = first ? first_prefix : std::string(indent, ' ');
    first = false;
    write_entry(os, prefix + key_text(it->first) + ":", it->second, indent);
  }
}

void write_seq(std::ostream& os, const YAML::Node& seq, int indent) {
  const std::string dash = std::string(indent, ' ') + "- ";
  for (const auto& item : seq) {
    if (item.IsMap() && !use_flow(item, dash.size())) write_map(os, item, indent + 2, dash);
    else if (item.IsScalar()) os << dash << inline_scalar(item, false) << "\n";
    else if (use_flow(item, dash.size())) os << dash << flow(item) << "\n";
    else throw std::logic_error("a list directly inside a list");
  }
}

}  // namespace

YAML::Node str(const std::string& s) { return tagged(s, kStringTag); }
YAML::Node raw(const std::string& text) { return tagged(text, kRawTag); }
YAML::Node integer(int64_t v) { return raw(std::to_string(v)); }
YAML::Node boolean(bool v) { return raw(v ? "true" : "false"); }

YAML::Node parse(const std::string& text, const std::string& what) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::logic_error(what + ": not valid YAML: " + e.what());
  }
}

bool plain_safe(const std::string& s, bool in_flow) {
  if (s.empty() || resolves_to_non_string(s)) return false;
  static const std::string indicators = "-?:,[]{}#&*!|>'\"%@`";
  if (indicators.find(s.front()) != std::string::npos || s.front() == ' ' || s.back() == ' ' || s.back() == ':')
    return false;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  // In a flow collection a ':' or a flow indicator anywhere ends a plain scalar (PyYAML); quotes
  // and CEL's operators are quoted there too, for the reader.
  return !in_flow || s.find_first_of(",[]{}:'\"\\|&!") == std::string::npos;
}

std::string write_yaml(const YAML::Node& doc) {
  if (!doc.IsMap()) throw std::logic_error("the document is not a mapping");
  std::ostringstream os;
  write_map(os, doc, 0, "");
  return os.str();
}

}  // namespace ppu::op::crd
