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
    for (int f : s.due(step)) {
      syncs[f]++;
      steps.insert(step);
    }
  for (int f = 0; f < 3; ++f) EXPECT_EQ(syncs[f], 3) << f;
  EXPECT_EQ(steps.size(), 9u);                // staggered: no two fragments at the same step
  EXPECT_EQ(s.due(10), std::vector<int>{2});  // the last fragment closes the round
}

TEST(StreamingSchedule, TheLastStepSyncsOnlyWhatIsScheduledThere) {
  // H = 10, 3 fragments at offsets 3, 6, 0. Training that stops at T = 17 (17 mod 10 = 7) has
  // no fragment due: the fragments last synced at 13, 16 and 10 all have trailing progress, and
  // none of them may take an outer step at 17.
  const Config c = parse_config("model: {preset: tiny}\nouter: {sync_every: 10, layers_per_fragment: 1}\n");
  const StreamingSchedule s(c, c.model);
  EXPECT_EQ(s.offset(0), 3);
  EXPECT_EQ(s.offset(1), 6);
  EXPECT_EQ(s.offset(2), 0);
  EXPECT_TRUE(s.due(17).empty());
  EXPECT_EQ(s.unsynced_at_end(17), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s.due(16), std::vector<int>{1});
  EXPECT_EQ(s.unsynced_at_end(16), (std::vector<int>{0, 2}));  // fragment 1 ends exactly on its sync
  EXPECT_EQ(s.unsynced_at_end(20), (std::vector<int>{0, 1}));  // the paper's T mod H = 0: 8 of 9 at scale
  for (int f = 0; f < 3; ++f) {
    int64_t counted = 0;
    for (int64_t step = 1; step <= 37; ++step)
      for (int g : s.due(step)) counted += g == f;
    EXPECT_EQ(s.scheduled_syncs(f, 37), counted) << f;
  }
}

TEST(StreamingSchedule, PaperScheduleLeavesEightFragmentsWithTrailingSteps) {
  // 24 layers in groups of 3 plus embeddings, H = 100, 50000 steps: only the embeddings
  // fragment (offset 0) is due at the last step; the others last synced 12..89 steps before.
  const Config c = parse_config("model: {preset: gpt3-xl}\nranks: 32\n");
  const StreamingSchedule s(c, c.model);
  const auto unsynced = s.unsynced_at_end(50000);
  ASSERT_EQ(unsynced.size(), 8u);
  for (int f : unsynced) {
    const int64_t trailing = 50000 % 100 - s.offset(f) + 100;
    EXPECT_GE(trailing, 12) << f;
    EXPECT_LE(trailing, 89) << f;
  }
  EXPECT_EQ(s.due(50000), std::vector<int>{8});
}

TEST(StreamingSchedule, DiLoCoHasOneFragment) {
  const Config c = parse_config("model: {preset: tiny}\nmethod: diloco\n");
  const StreamingSchedule s(c, c.model);
  ASSERT_EQ(s.fragments().size(), 1u);
  EXPECT_EQ(s.due(100), std::vector<int>{0});
  EXPECT_TRUE(s.due(50).empty());
  EXPECT_TRUE(s.unsynced_at_end(1000).empty());
  EXPECT_EQ(s.unsynced_at_end(1050), std::vector<int>{0});
}

TEST(StreamingSchedule, BySlicesGroupsMlpSlicesAcrossLayers) {
  const Config c =
      parse_config("model: {preset: tiny}\nranks: 4\nslicing: {mode: mlp, slices: 4}\nouter: {grouping: slices}\n");
  const StreamingSchedule s(c, c.model);
  ASSERT_EQ(s.fragments().size(), 6u);  // 4 slices + embeddings + attention/norms (Appendix A.1)
  const int64_t mlp_per_slice = 2 * 2 * 64 * 256 / 4;
  EXPECT_EQ(s.fragments()[1].numel, mlp_per_slice);
  EXPECT_EQ(s.fragments()[1].pieces[0].begin, 64);
}
