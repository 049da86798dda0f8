// The CRD's YAML writer (operator/src/crd/yaml_text.h): what it prints loads back to the same
// tree, strings stay strings whatever they look like, long prose is folded and multi-line text
// kept line for line, and a scalar that does not say what it is cannot be written.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>

#include "crd/crd_document.h"
#include "crd/yaml_text.h"

namespace ppu::op::crd {
namespace {

// Same shape and scalars; a string of `a` loads back quoted (tag "!") or as plain text that
// is not another type.
void expect_same(const YAML::Node& a, const YAML::Node& b, const std::string& path) {
  ASSERT_EQ(a.Type(), b.Type()) << path;
  if (a.IsScalar()) {
    EXPECT_EQ(a.Scalar(), b.Scalar()) << path;
    if (a.Tag() == "!" && b.Tag() != "!") {
      EXPECT_TRUE(plain_safe(b.Scalar(), false)) << path << ": " << b.Scalar();
    }
    return;
  }
  ASSERT_EQ(a.size(), b.size()) << path;
  if (a.IsSequence()) {
    for (size_t i = 0; i < a.size(); ++i) expect_same(a[i], b[i], path + "[" + std::to_string(i) + "]");
    return;
  }
  auto ib = b.begin();
  for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib) {
    EXPECT_EQ(ia->first.Scalar(), ib->first.Scalar()) << path << ": keys in another order";
    expect_same(ia->second, ib->second, path + "." + ia->first.Scalar());
  }
}

TEST(CrdYaml, TrickyStringsLoadBackAsThemselves) {
  YAML::Node doc(YAML::NodeType::Map);
  const std::string words[] = {
      "True",
      "no",
      "~",
      "null",
      "1",
      "1.5",
      "0x1f",
      ".inf",
      "-x",
      "a: b",
      "a #b",
      "",
      "x,y",
      "[z]",
      "it's",
      "say \"hi\"",
      "back\\slash",
      "tab\there",
      "ünïcode",
      "=",
      "line one\n  indented two\nthree",
      "ends in space ",
      std::string(300, 'w'),
      std::string("a long sentence of many words that goes on, and on, well past the width of any ") +
          "line the writer allows, so that it has to be folded: twice, maybe three times over"};
  int i = 0;
  for (const auto& w : words) {
    doc["k" + std::to_string(i)] = str(w);
    YAML::Node in_flow(YAML::NodeType::Map);
    in_flow["v"] = str(w);
    doc["f" + std::to_string(i++)] = in_flow;
  }
  doc["number"] = integer(-42);
  doc["flag"] = boolean(false);
  doc["exponent"] = raw("3.0e-04");
  doc["empty"] = YAML::Node(YAML::NodeType::Map);
  doc["list"].push_back(str("yes"));
  doc["list"].push_back(integer(2));
  const std::string text = write_yaml(doc);
  expect_same(doc, YAML::Load(text), "doc");
  EXPECT_NE(text.find("  line one\n    indented two\n  three"), std::string::npos) << text;
  EXPECT_NE(text.find(": >-\n"), std::string::npos) << "long prose is folded";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(std::string(300, 'w')) == std::string::npos) {
      EXPECT_LE(line.size(), size_t{kWidth}) << line;
    }
}

TEST(CrdYaml, AScalarMustSayWhatItIs) {
  YAML::Node doc(YAML::NodeType::Map);
  doc["port"] = 29500;  // neither str() nor raw()
  EXPECT_THROW(write_yaml(doc), std::logic_error);
  EXPECT_FALSE(plain_safe("True", false));
  EXPECT_FALSE(plain_safe("a,b", true));
  EXPECT_TRUE(plain_safe("a,b", false));
  EXPECT_TRUE(plain_safe(".status.phase", true));
}

TEST(CrdYaml, TheCrdLoadsBackToItsTree) {
  const YAML::Node doc = crd_document();
  const std::string text = crd_yaml();
  EXPECT_EQ(text.rfind("# PPUJob", 0), 0u) << "the header comment first";
  expect_same(doc, YAML::Load(text), "crd");
}

}  // namespace
}  // namespace ppu::op::crd
