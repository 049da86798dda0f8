#include "metrics/prom_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace ppu::op {

namespace {

bool parse_value(const std::string& s, double& v) {
  if (s == "NaN") {
    v = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    v = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    v = -std::numeric_limits<double>::infinity();
    return true;
  }
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && !s.empty();
}

// Parses `{a="x",b="y"}` starting at line[i] == '{'; leaves i after '}'.
bool parse_labels(const std::string& line, size_t& i, std::map<std::string, std::string>& out) {
  ++i;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
    if (i < line.size() && line[i] == '}') {
      ++i;
      return true;
    }
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) return false;
    std::string key = line.substr(i, eq - i);
    while (!key.empty() && key.back() == ' ') key.pop_back();
    i = eq + 1;
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size() || line[i] != '"') return false;
    ++i;
    std::string val;
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\\' && i + 1 < line.size()) {
        char c = line[++i];
        val.push_back(c == 'n' ? '\n' : c);
      } else {
        val.push_back(line[i]);
      }
      ++i;
    }
    if (i >= line.size()) return false;
    ++i;  // closing quote
    out[key] = val;
  }
  return false;
}

}  // namespace

std::vector<Sample> parse_prometheus_text(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] == '#') continue;
    Sample s;
    size_t j = i;
    while (j < line.size() && line[j] != '{' && line[j] != ' ' && line[j] != '\t') ++j;
    s.name = line.substr(i, j - i);
    if (j < line.size() && line[j] == '{' && !parse_labels(line, j, s.labels)) continue;
    while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
    size_t k = line.find_first_of(" \t", j);
    std::string value = line.substr(j, k == std::string::npos ? std::string::npos : k - j);
    if (s.name.empty() || !parse_value(value, s.value)) continue;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ppu::op
