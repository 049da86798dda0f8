// Unit tests of the Prometheus text parser and the per-job aggregation of rank metrics.
#include <gtest/gtest.h>

#include <cmath>

#include "metrics/job_metrics.h"
#include "metrics/prom_text.h"

namespace ppu::op {
namespace {

const char* const kRank0 = R"(# HELP ppu_state_bytes training state
# TYPE ppu_state_bytes gauge
ppu_state_bytes{component="weights",rank="0",run_id="r",method="ppu"} 1000
ppu_state_bytes{component="gradients",rank="0",run_id="r",method="ppu"} 250
ppu_flops_executed_total{rank="0"} 6e9
ppu_flops_full_backward_total{rank="0"} 8e9
ppu_eval_perplexity{rank="0"} 10
ppu_loss{rank="0"} 2.5
ppu_outer_round{rank="0"} 5
ppu_tokens_per_second{rank="0"} 100 1712345678000
weird_label{path="a\"b\\c\nd"} 1
garbage line here
ppu_step{rank="0"} 500
ppu_steps_target{rank="0"} 1000
ppu_remaining_seconds{rank="0"} 40
)";

const char* const kRank1 = R"(ppu_state_bytes{component="weights",rank="1"} 1000
ppu_flops_executed_total{rank="1"} 6e9
ppu_flops_full_backward_total{rank="1"} 8e9
ppu_eval_perplexity{rank="1"} 14
ppu_loss{rank="1"} 2.7
ppu_outer_round{rank="1"} 4
ppu_tokens_per_second{rank="1"} 120
ppu_eval_loss NaN
ppu_step{rank="1"} 450
ppu_steps_target{rank="1"} 1000
ppu_remaining_seconds{rank="1"} 55.5
)";

TEST(PromText, ParsesNamesLabelsValuesAndEscapes) {
  auto s = parse_prometheus_text(kRank0);
  ASSERT_EQ(s.size(), 12u) << "comments and the malformed line are skipped";
  EXPECT_EQ(s[0].name, "ppu_state_bytes");
  EXPECT_EQ(s[0].labels.at("component"), "weights");
  EXPECT_DOUBLE_EQ(s[0].value, 1000);
  EXPECT_DOUBLE_EQ(s[2].value, 6e9);
  EXPECT_DOUBLE_EQ(s[7].value, 100) << "timestamp ignored";
  EXPECT_EQ(s[8].labels.at("path"), "a\"b\\c\nd");
}

TEST(PromText, SpecialValues) {
  auto s = parse_prometheus_text("a +Inf\nb -Inf\nc NaN\n");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(std::isinf(s[0].value) && s[0].value > 0);
  EXPECT_TRUE(std::isnan(s[2].value));
}

TEST(JobMetrics, SumsMeansAndMinimumRound) {
  JobMetrics m = aggregate_job_metrics({parse_prometheus_text(kRank0), parse_prometheus_text(kRank1)});
  EXPECT_EQ(m.ranks_scraped, 2);
  EXPECT_DOUBLE_EQ(m.state_bytes.at("weights"), 2000);
  EXPECT_DOUBLE_EQ(m.state_bytes.at("gradients"), 250);
  EXPECT_DOUBLE_EQ(m.flops_executed, 12e9);
  EXPECT_DOUBLE_EQ(m.flops_saved_ratio(), 0.25);
  EXPECT_DOUBLE_EQ(*m.eval_perplexity, 12);
  EXPECT_DOUBLE_EQ(*m.loss, 2.6);
  EXPECT_DOUBLE_EQ(*m.tokens_per_second, 220);
  EXPECT_EQ(*m.outer_round, 4) << "a round counts when every rank finished it";
  EXPECT_EQ(*m.step, 450) << "progress is the slowest rank's";
  EXPECT_EQ(*m.steps_target, 1000);
  EXPECT_DOUBLE_EQ(*m.remaining_seconds, 55.5) << "so is the time left";
  EXPECT_FALSE(m.stops || m.rounds_lost) << "ranks that export no stop figures give none";
}

TEST(JobMetrics, TheLastStopIsTheOneOfTheRankThatCountsTheMostStops) {
  // Rank 0 resumed after two stops (23 + 7 rounds lost); rank 1 is a replacement that has only
  // read the first; rank 2 knows none (-1).
  const auto rank0 = parse_prometheus_text(
      "ppu_stops 2\nppu_rounds_lost 30\nppu_last_stop_round 60\nppu_last_stop_resumed_round 53\n");
  const auto rank1 = parse_prometheus_text(
      "ppu_stops 1\nppu_rounds_lost 23\nppu_last_stop_round 73\nppu_last_stop_resumed_round 50\n");
  const auto rank2 =
      parse_prometheus_text("ppu_stops 0\nppu_rounds_lost 0\nppu_last_stop_round -1\nppu_last_stop_resumed_round -1\n");
  for (const auto& order : {std::vector{rank0, rank1, rank2}, std::vector{rank2, rank1, rank0}}) {
    const JobMetrics m = aggregate_job_metrics(order);
    ASSERT_TRUE(m.stops && m.rounds_lost && m.last_stop_round && m.last_stop_resumed_round);
    EXPECT_EQ(*m.stops, 2);
    EXPECT_EQ(*m.rounds_lost, 30);
    EXPECT_EQ(*m.last_stop_round, 60) << "the latest stop, though an earlier one had reached a later round";
    EXPECT_EQ(*m.last_stop_resumed_round, 53);
  }
  const JobMetrics none = aggregate_job_metrics({rank2});
  EXPECT_EQ(none.stops, 0);
  EXPECT_EQ(none.rounds_lost, 0);
  EXPECT_FALSE(none.last_stop_round) << "-1 is no stop";
  // A rank that has not read the job's history yet (or has no checkpoint directory) says -1: not known.
  const auto unread = parse_prometheus_text(
      "ppu_stops -1\nppu_rounds_lost -1\nppu_last_stop_round -1\nppu_last_stop_resumed_round -1\n");
  EXPECT_FALSE(aggregate_job_metrics({unread}).stops) << "-1 stops is no figure";
  EXPECT_EQ(aggregate_job_metrics({unread, rank1}).stops, 1);
}

}  // namespace
}  // namespace ppu::op
