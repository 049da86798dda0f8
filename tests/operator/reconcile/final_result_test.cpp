// A finished job's status is its result: the ranks' termination messages (core/run_result.h) set
// status.outerRound / perplexity / lastCheckpointRound / result when every rank succeeded; the
// last metrics scrape (always older) never does; disagreeing checksums fail the job; a rank
// without a readable result lets it succeed with ResultReported False and no figures at all.
#include <gtest/gtest.h>

#include <string>

#include "core/run_result.h"
#include "kube/rfc3339.h"
#include "reconcile/job_constants.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::condition_of;
using testing::gang;
using testing::kNow;
using testing::make_job;
using testing::new_status;
using testing::observed;
using testing::with_exit;

RunResult result(int rank, const std::string& checksum = "7905be7a33aa0be4") {
  RunResult r;
  r.round = 20;
  r.eval_loss = 2.169512;
  r.perplexity = 8.7542;
  r.steps = 200;
  r.tokens = 409600;
  r.checkpoint_round = 20;
  r.seconds = 61.25 + rank;
  r.checksum = checksum;
  return r;
}

// A running job whose last scrape saw round 15 and perplexity 9.082 (what a user once saw at the end of a run).
Observed finished_gang(const std::vector<std::string>& messages) {
  json job = make_job("demo", static_cast<int>(messages.size()),
                      {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow - 120)}});
  auto pods = gang(job, static_cast<int>(messages.size()), "Running");
  for (size_t r = 0; r < pods.size(); ++r) pods[r] = with_exit(pods[r], 0, messages[r]);
  Observed in = observed(job, pods);
  in.progress = ScrapedProgress{15, 9.082, 15, std::nullopt, std::nullopt, 990, 1000, 4.0};
  return in;
}

// The status the decision writes; null if none.
json status_of(const Decision& d) { return new_status(d).value_or(json()); }

TEST(RunResult, RoundTripsCompactAndRejectsAnythingElse) {
  const RunResult r = result(0);
  const std::string msg = format_run_result(r);
  EXPECT_LT(msg.size(), 300u);  // the kubelet keeps 4096 bytes
  const auto back = parse_run_result(msg);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->round, 20);
  EXPECT_DOUBLE_EQ(back->eval_loss, r.eval_loss);
  EXPECT_DOUBLE_EQ(back->perplexity, r.perplexity);
  EXPECT_EQ(back->tokens, 409600);
  EXPECT_EQ(back->checkpoint_round, 20);
  EXPECT_EQ(back->checksum, r.checksum);
  // A failure reason, an empty message (older image), a truncated one, another version, a type
  // changed: none is a result.
  EXPECT_FALSE(parse_run_result("configuration error: config key 'model.layers' must be >= 1"));
  EXPECT_FALSE(parse_run_result(""));
  EXPECT_FALSE(parse_run_result(msg.substr(0, msg.size() / 2)));
  std::string v2 = msg;
  v2.replace(v2.find("\"ppu_result\":1"), 14, "\"ppu_result\":2");
  EXPECT_FALSE(parse_run_result(v2));
  std::string typed = msg;
  typed.replace(typed.find(R"("round":20)"), 10, R"("round":"20")");
  EXPECT_FALSE(parse_run_result(typed));
  RunResult huge = r;
  huge.checksum = std::string(2000, 'a');
  EXPECT_THROW(format_run_result(huge), std::length_error);
}

TEST(FinalStatus, ComesFromTheRanksResultsNotTheLastScrape) {
  const Decision d = reconcile(finished_gang({format_run_result(result(0)), format_run_result(result(1))}));
  const json st = status_of(d);
  ASSERT_FALSE(st.is_null());
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["outerRound"], 20);       // not the scrape's 15
  EXPECT_EQ(st["perplexity"], "8.754");  // not 9.082
  EXPECT_EQ(st["lastCheckpointRound"], 20);
  EXPECT_EQ(st["result"]["evalLoss"], "2.169512");
  EXPECT_EQ(st["result"]["tokens"], 2 * 409600);       // summed over the ranks
  EXPECT_EQ(st["result"]["durationSeconds"], "62.2");  // the longest rank
  EXPECT_EQ(st["result"]["parameterChecksum"], "7905be7a33aa0be4");
  EXPECT_EQ(st["result"]["ranksReported"], 2);
  const auto reported = condition_of(st, "ResultReported");
  ASSERT_TRUE(reported);
  EXPECT_EQ((*reported)["status"], "True");
  const auto done = condition_of(st, "Succeeded");
  ASSERT_TRUE(done);
  EXPECT_NE((*done)["message"].get<std::string>().find("eval perplexity 8.754"), std::string::npos);
  EXPECT_EQ(st["progressPercentage"], 100);  // not the scrape's 99
  EXPECT_EQ(st["estimatedRemainingSeconds"], 0);
  EXPECT_EQ(st["step"], 200);  // the results' steps, not the scrape's 990

  // A later pass, with the stale scrape still in the controller's memory, changes nothing.
  Observed again = finished_gang({format_run_result(result(0)), format_run_result(result(1))});
  again.job["status"] = st;
  const Decision later = reconcile(again);
  EXPECT_TRUE(status_of(later).is_null()) << "a finished job's status was rewritten";
}

TEST(FinalStatus, DisagreeingChecksumsAreNotACleanSuccess) {
  const Decision d = reconcile(finished_gang(
      {format_run_result(result(0, "aaaa")), format_run_result(result(1)), format_run_result(result(2, "aaaa"))}));
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Failed");
  EXPECT_EQ(st["reason"], "RanksDisagree");
  const std::string msg = st["message"];
  EXPECT_NE(msg.find("aaaa on rank(s) 0, 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("7905be7a33aa0be4 on rank(s) 1"), std::string::npos) << msg;
  EXPECT_FALSE(st.contains("outerRound"));
  EXPECT_FALSE(st.contains("perplexity"));
  EXPECT_FALSE(st.contains("estimatedRemainingSeconds")) << "a failed job will not finish";
  bool warned = false;
  for (const auto& e : testing::actions_of<RecordEvent>(d))
    if (e.type == "Warning" && e.reason == "RanksDisagree") warned = true;
  EXPECT_TRUE(warned);
}

TEST(FinalStatus, AMissingResultSucceedsWithoutAnyFiguresAndSaysSo) {
  const std::string full = format_run_result(result(0));
  const Decision d = reconcile(finished_gang({full, "", full.substr(0, 40)}));
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Succeeded");
  // The scrape's 15 / 9.082 must not be presented as the result.
  EXPECT_FALSE(st.contains("outerRound"));
  EXPECT_FALSE(st.contains("perplexity"));
  EXPECT_FALSE(st.contains("lastCheckpointRound"));
  EXPECT_FALSE(st.contains("result"));
  const auto reported = condition_of(st, "ResultReported");
  ASSERT_TRUE(reported);
  EXPECT_EQ((*reported)["status"], "False");
  EXPECT_EQ((*reported)["reason"], "ResultMissing");
  EXPECT_NE((*reported)["message"].get<std::string>().find("rank(s) 1, 2"), std::string::npos);
}

TEST(FinalStatus, ARunWithoutCheckpointsReportsNoCheckpointRound) {
  RunResult r = result(0);
  r.checkpoint_round = -1;
  const Decision d = reconcile(finished_gang({format_run_result(r), format_run_result(r)}));
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["outerRound"], 20);
  EXPECT_FALSE(st.contains("lastCheckpointRound"));  // the scrape's 15 is dropped too
  EXPECT_FALSE(st["result"].contains("lastCheckpointRound"));
}

}  // namespace
}  // namespace ppu::op
