// core/job_contract.h against the documentation users and the operator's docs rely on:
// docs/METRICS.md's exit-code table lists exactly the contract's codes, with "Failed at once"
// exactly for the permanent ones; every environment variable and scraped metric is documented.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "core/job_contract.h"

namespace {

std::string read_doc(const std::string& name) {
  std::ifstream in(std::string(PPU_SOURCE_DIR) + "/docs/" + name);
  EXPECT_TRUE(in) << "docs/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// code -> the operator-action column of METRICS.md's exit-code table.
std::map<int, std::string> documented_exit_codes() {
  const std::string doc = read_doc("METRICS.md");
  const auto section = doc.find("## Exit codes");
  EXPECT_NE(section, std::string::npos) << "docs/METRICS.md has no '## Exit codes' section";
  std::map<int, std::string> rows;
  std::istringstream lines(doc.substr(section == std::string::npos ? 0 : section));
  std::string line;
  const std::regex row(R"(^\| (\d+) \| [^|]+ \| ([^|]+) \|$)");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) rows[std::stoi(m[1])] = m[2];
  }
  return rows;
}

}  // namespace

TEST(JobContract, ExitCodesAreTheDocumentedTable) {
  namespace ec = ppu::contract::exit_code;
  const auto rows = documented_exit_codes();
  const std::map<int, bool> codes = {{ec::kDone, false},
                                     {ec::kRuntimeFailure, false},
                                     {ec::kConfigError, true},
                                     {ec::kPeerFailure, false},
                                     {ec::kDataError, true}};
  ASSERT_EQ(rows.size(), codes.size()) << "docs/METRICS.md documents a different set of exit codes";
  for (const auto& [code, permanent] : codes) {
    ASSERT_TRUE(rows.count(code)) << "exit code " << code << " is not in docs/METRICS.md";
    EXPECT_EQ(ppu::contract::exit_is_permanent(code), permanent) << code;
    EXPECT_EQ(rows.at(code).find("Failed at once") != std::string::npos, permanent)
        << "docs/METRICS.md, exit code " << code << ": '" << rows.at(code) << "'";
  }
}

TEST(JobContract, EnvironmentAndScrapedMetricsAreDocumented) {
  namespace env = ppu::contract::env;
  namespace metric = ppu::contract::metric;
  const std::string docs = read_doc("METRICS.md") + read_doc("RUNTIME.md") + read_doc("OPERATOR.md");
  for (const char* name : {env::kRank, env::kWorldSize, env::kLocalRank, env::kMasterAddr, env::kMasterPort,
                           env::kConfig, env::kRunId, env::kCheckpointDir, env::kMetricsPort, env::kLogPrefixed})
    EXPECT_NE(docs.find(std::string("`") + name), std::string::npos)
        << "environment variable " << name << " is undocumented";
  const std::string metrics = read_doc("METRICS.md");
  for (const char* name :
       {metric::kStateBytes, metric::kFlopsExecuted, metric::kFlopsFullBackward, metric::kEvalPerplexity, metric::kLoss,
        metric::kTokensPerSecond, metric::kOuterRound, metric::kCheckpointRound})
    EXPECT_NE(metrics.find(std::string("`") + name + "`"), std::string::npos)
        << "rank metric " << name << " is not in docs/METRICS.md";
  EXPECT_NE(docs.find(ppu::contract::kTerminationLog), std::string::npos);
}
