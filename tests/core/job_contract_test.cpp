// core/job_contract.h against the documentation users and the operator's docs rely on:
// docs/METRICS.md's exit-code table lists exactly the contract's codes, with "Failed at once"
// exactly for the permanent ones; every environment variable and scraped metric is documented.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <new>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/exit_status.h"
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
                                     {ec::kDataError, true},
                                     {ec::kRejoin, false},
                                     {ppu::contract::left_on_notice(SIGINT), false},
                                     {ppu::contract::left_on_notice(SIGTERM), false}};
  ASSERT_EQ(rows.size(), codes.size()) << "docs/METRICS.md documents a different set of exit codes";
  for (const auto& [code, permanent] : codes) {
    ASSERT_TRUE(rows.count(code)) << "exit code " << code << " is not in docs/METRICS.md";
    EXPECT_EQ(ppu::contract::exit_is_permanent(code), permanent) << code;
    EXPECT_EQ(rows.at(code).find("Failed at once") != std::string::npos, permanent)
        << "docs/METRICS.md, exit code " << code << ": '" << rows.at(code) << "'";
  }
}

// The restart decision ppu-launch and the operator share, row by row, and the operator-action
// column that states it for users: a gang restart under gang recovery for every failure that is
// not permanent; under live, only this rank for all of them but 3.
TEST(JobContract, TheRestartDecisionIsTheDocumentedOne) {
  using ppu::contract::on_exit;
  using ppu::contract::OnExit;
  namespace ec = ppu::contract::exit_code;
  const auto rows = documented_exit_codes();
  for (const auto& [code, action] : rows) {
    const auto has = [&, &action = action](const char* words) { return action.find(words) != std::string::npos; };
    const OnExit gang = on_exit(code, false), live = on_exit(code, true);
    SCOPED_TRACE("docs/METRICS.md, exit code " + std::to_string(code) + ": '" + action + "'");
    EXPECT_EQ(gang == OnExit::Finished, code == ec::kDone);
    EXPECT_EQ(gang == OnExit::FailJob, has("Failed at once"));
    EXPECT_EQ(gang == OnExit::RestartGang, has("gang restart"));
    EXPECT_EQ(live == OnExit::RestartRank, has("only this rank")) << "live";
    if (live != OnExit::RestartRank) {
      EXPECT_EQ(live, gang) << "live only changes whom a failure restarts";
    }
  }
  EXPECT_EQ(on_exit(ec::kRejoin, true), OnExit::RestartRank);
  EXPECT_EQ(on_exit(ec::kPeerFailure, true), OnExit::RestartGang);
  EXPECT_EQ(on_exit(137, true), OnExit::RestartRank);  // a SIGKILLed rank
  EXPECT_EQ(on_exit(137, false), OnExit::RestartGang);
  EXPECT_EQ(on_exit(ppu::contract::left_on_notice(SIGTERM), true), OnExit::RestartRank);  // 143
  EXPECT_EQ(on_exit(ppu::contract::left_on_notice(SIGTERM), false), OnExit::RestartGang);
}

TEST(JobContract, EnvironmentAndEveryRankMetricAreDocumented) {
  namespace env = ppu::contract::env;
  const std::string docs = read_doc("METRICS.md") + read_doc("RUNTIME.md") + read_doc("OPERATOR.md");
  for (const char* name :
       {env::kRank, env::kWorldSize, env::kLocalRank, env::kMasterAddr, env::kMasterPort, env::kConfig, env::kRunId,
        env::kCheckpointDir, env::kMetricsPort, env::kLogPrefixed, env::kExternalStore})
    EXPECT_NE(docs.find(std::string("`") + name), std::string::npos)
        << "environment variable " << name << " is undocumented";
  const std::string metrics = read_doc("METRICS.md");
#define PPU_EXPECT_DOCUMENTED(constant, name)                         \
  EXPECT_NE(metrics.find(std::string("`") + name), std::string::npos) \
      << "rank metric " << name << " is not in docs/METRICS.md";
  PPU_RANK_METRICS(PPU_EXPECT_DOCUMENTED)
#undef PPU_EXPECT_DOCUMENTED
  EXPECT_NE(docs.find(ppu::contract::kTerminationLog), std::string::npos);
}

// core/exit_status.h: one table from what failed to the contract's exit code, for every binary.
// The runtime's own error types (PeerError, ShardError, CheckpointError, ...) derive from these
// classes; tests/engine/exit_status_test checks them, the process tests check the binaries.
TEST(ExitStatus, EveryKindOfFailureHasItsContractCode) {
  namespace ec = ppu::contract::exit_code;
  struct Checkpointish : ppu::UnusableInput {
    using ppu::UnusableInput::UnusableInput;
    const char* subject() const noexcept override { return "checkpoint"; }
  };
  const auto config = ppu::exit_status_of(ppu::ConfigError("config key 'inner.lr' must be > 0"));
  EXPECT_EQ(config.code, ec::kConfigError);
  EXPECT_EQ(config.message, "configuration error: config key 'inner.lr' must be > 0");
  EXPECT_EQ(ppu::exit_status_of(std::invalid_argument("stoi")).code, ec::kConfigError);
  EXPECT_EQ(ppu::exit_status_of(ppu::PeerFailure("rank 2 timed out")).code, ec::kPeerFailure);
  const auto input = ppu::exit_status_of(Checkpointish("round-000004: no outer state"));
  EXPECT_EQ(input.code, ec::kDataError);
  EXPECT_EQ(input.message, "checkpoint error: round-000004: no outer state");
  EXPECT_EQ(ppu::exit_status_of(ppu::OutOfGroup("rank 2 was dropped in generation 3")).code, ec::kRejoin);
  const auto notice = ppu::exit_status_of(ppu::LeftOnNotice(SIGTERM, "round 7's checkpoint holds the job's state"));
  EXPECT_EQ(notice.code, 143);
  EXPECT_EQ(notice.message, "left on notice: round 7's checkpoint holds the job's state");
  EXPECT_EQ(ppu::exit_status_of(ppu::LeftOnNotice(SIGINT, "")).code, 130);
  EXPECT_EQ(ppu::exit_status_of(std::runtime_error("disk full")).code, ec::kRuntimeFailure);
  EXPECT_EQ(ppu::exit_status_of(std::bad_alloc()).code, ec::kRuntimeFailure);
  EXPECT_TRUE(ppu::contract::exit_is_permanent(config.code));
  EXPECT_TRUE(ppu::contract::exit_is_permanent(input.code));
  EXPECT_FALSE(ppu::contract::exit_is_permanent(ppu::exit_status_of(ppu::PeerFailure("")).code));
  EXPECT_EQ(ppu::usage_exit_code(0), ec::kDone);
  EXPECT_EQ(ppu::usage_exit_code(106), ec::kConfigError);  // CLI11's code for a bad option value
}
