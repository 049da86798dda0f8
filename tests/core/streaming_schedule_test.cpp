#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/streaming_schedule.h"

using namespace ppu;

TEST(StreamingSchedule, PaperGroupingIsEightGroupsOfThreePlusEmbeddings) {
  const Config c = parse_config("model: {preset: gpt3-xl}\nranks: 32\n");
  const StreamingSchedule s(c, c.model);
  ASSERT_EQ(s.fragments().size(), 9u);
  EXPECT_EQ(s.fragments()[0].name, "layers.0-2");
  EXPECT_EQ(s.fragments()[8].name, "embeddings");
  int64_t total = 0;
  for (const auto& f : s.fragments()) total += f.numel;
  EXPECT_EQ(total, total_parameters(c.model));
}

TEST(StreamingSchedule, EveryFragmentSyncsOncePerRoundAtStaggeredSteps) {
  const Config c = parse_config("model: {preset: tiny}\nouter: {sync_every: 10, layers_per_fragment: 1}\n");
  const StreamingSchedule s(c, c.model);
  ASSERT_EQ(s.fragments().size(), 3u);  // 2 layers + embeddings
  std::map<int, int> syncs;
  std::set<int64_t> steps;
  for (int64_t step = 1; step <= 30; ++step)
    for (int f : s.due(step, 1000)) {
      syncs[f]++;
      steps.insert(step);
    }
  for (int f = 0; f < 3; ++f) EXPECT_EQ(syncs[f], 3) << f;
  EXPECT_EQ(steps.size(), 9u);  // staggered: no two fragments at the same step
  EXPECT_EQ(s.due(10, 1000), std::vector<int>{2});  // the last fragment closes the round
  EXPECT_EQ(s.due(17, 17).size(), 3u);              // final flush
}

TEST(StreamingSchedule, DiLoCoHasOneFragment) {
  const Config c = parse_config("model: {preset: tiny}\nmethod: diloco\n");
  const StreamingSchedule s(c, c.model);
  ASSERT_EQ(s.fragments().size(), 1u);
  EXPECT_EQ(s.due(100, 1000), std::vector<int>{0});
  EXPECT_TRUE(s.due(50, 1000).empty());
}

TEST(StreamingSchedule, BySlicesGroupsMlpSlicesAcrossLayers) {
  const Config c = parse_config("model: {preset: tiny}\nranks: 4\nslicing: {mode: mlp, slices: 4}\nouter: {grouping: slices}\n");
  const StreamingSchedule s(c, c.model);
  ASSERT_EQ(s.fragments().size(), 6u);  // 4 slices + embeddings + attention/norms (Appendix A.1)
  const int64_t mlp_per_slice = 2 * 2 * 64 * 256 / 4;
  EXPECT_EQ(s.fragments()[1].numel, mlp_per_slice);
  EXPECT_EQ(s.fragments()[1].pieces[0].begin, 64);
}
