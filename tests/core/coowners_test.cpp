#include <gtest/gtest.h>

#include "core/coowners.h"
#include "core/slice_plan.h"

using namespace ppu;

// K = 4, N = 2: ranks 0 and 2 train slice 0, ranks 1 and 3 slice 1 (SlicePlan's rank mod N).
TEST(Coowners, TheSameRuleAsTheSlicePlan) {
  const auto tiny = *model_preset("tiny");
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      const SlicePlan pa(tiny, SliceMode::Mlp, 8, 4, a), pb(tiny, SliceMode::Mlp, 8, 4, b);
      EXPECT_EQ(same_slice(a, b, 4), pa.slice_index() == pb.slice_index()) << a << " " << b;
    }
}

TEST(Coowners, SourceIsTheLowestLiveCoownerThatIsNotANewcomer) {
  EXPECT_EQ(coowner_source(2, {0, 1, 2, 3}, {2}, 2), 0);
  EXPECT_EQ(coowner_source(0, {0, 1, 2, 3}, {0}, 2), 2);
  EXPECT_EQ(coowner_source(3, {0, 1, 2, 3, 5, 7}, {3}, 2), 1);
  // Two replacements of one slice at once: neither gives the other fresh state.
  EXPECT_EQ(coowner_source(1, {0, 1, 2, 3}, {1, 3}, 2), -1);
  // The slice's only other owner is missing.
  EXPECT_EQ(coowner_source(2, {1, 2, 3}, {2}, 2), -1);
  // N = 1 (DiLoCo, slicing none): every rank trains everything.
  EXPECT_EQ(coowner_source(0, {0, 1, 2, 3}, {0}, 1), 1);
}

TEST(Coowners, StandInIsTheLowestLiveCoownerElseTheLowestMember) {
  EXPECT_EQ(stand_in(3, {0, 1, 2}, 2), 1);
  EXPECT_EQ(stand_in(0, {1, 2, 3}, 2), 2);
  EXPECT_EQ(stand_in(0, {1, 3}, 2), 1);  // slice 0 has no live owner
  EXPECT_EQ(stand_in(2, {}, 2), -1);
}

TEST(Coowners, EverySliceOwnedAsksForAMemberOfEachSlice) {
  EXPECT_TRUE(every_slice_owned({0, 1}, 2));
  EXPECT_TRUE(every_slice_owned({2, 3}, 2));
  EXPECT_FALSE(every_slice_owned({0, 2}, 2));  // slice 1 (ranks 1, 3) has nobody
  EXPECT_FALSE(every_slice_owned({}, 2));
  EXPECT_TRUE(every_slice_owned({3}, 1));  // N = 1: every rank trains everything
  EXPECT_FALSE(every_slice_owned({1, 2, 3}, 4));
}
