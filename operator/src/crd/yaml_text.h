// The CRD as a YAML tree (yaml-cpp nodes) and the writer that prints it for people: block style,
// a mapping or list of plain values on one line in flow style when it fits in kWidth columns (or
// when it was written in flow style), long strings folded (>-), multi-line ones literal (|-), a
// string quoted only when YAML would read it as something else. Every scalar says what it is:
// str() is a string, raw() is written as given (numbers, true/false); a scalar loaded from YAML
// text keeps what the text said (quoted: a string; plain: as given). An untagged scalar, which
// says neither, throws std::logic_error when written. The writer's output loads back to the same
// tree (tests/operator/crd_yaml_test.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace ppu::op::crd {

inline constexpr int kWidth = 120;

YAML::Node str(const std::string& s);
YAML::Node raw(const std::string& text);
YAML::Node integer(int64_t v);
YAML::Node boolean(bool v);
// `text` parsed (a fragment of YAML written in the generator's source); throws
// std::logic_error naming `what` when it is not valid YAML.
YAML::Node parse(const std::string& text, const std::string& what);

// The node as a YAML document (block style at the top), ending in a newline.
std::string write_yaml(const YAML::Node& doc);

// Whether `s` written without quotes reads back as the same string (in a flow collection when
// `in_flow`): used by the writer, exposed for its tests.
bool plain_safe(const std::string& s, bool in_flow);

}  // namespace ppu::op::crd
