#include <gtest/gtest.h>

#include "core/config.h"
#include "core/elastic_size.h"

using namespace ppu;

TEST(ElasticSize, RequiredRanksAreMinRanksElseEverySlot) {
  Config c = parse_config("");
  EXPECT_EQ(required_ranks(c, 8), 8);
  c.network.min_ranks = 4;
  EXPECT_EQ(required_ranks(c, 8), 4);
  EXPECT_EQ(required_ranks(c, 2), 2);  // never more than the slots
}

TEST(ElasticSize, DesiredSizeIsClampedToTheRange) {
  EXPECT_EQ(clamp_desired(1, 2, 8), 2);
  EXPECT_EQ(clamp_desired(5, 2, 8), 5);
  EXPECT_EQ(clamp_desired(9, 2, 8), 8);
}

TEST(ElasticSize, DesiredSizeTextIsAWholePositiveNumber) {
  EXPECT_EQ(parse_desired("4"), 4);
  EXPECT_EQ(parse_desired("12\n"), 12);  // a ConfigMap file's newline
  EXPECT_EQ(parse_desired("  3 "), 3);
  for (const char* bad : {"", " ", "\n", "0", "-2", "+2", "2.5", "4x", "x4", "4 4", "99999999999"})
    EXPECT_FALSE(parse_desired(bad)) << "'" << bad << "'";
}

// N = 2: slots 0 and 2 own slice 0, 1 and 3 slice 1.
TEST(ElasticSize, ShrinkLetsTheSlotsAboveTheSizeGo) {
  const auto s = shrink_to({0, 1, 2, 3, 4, 5}, 4, 2);
  EXPECT_EQ(s.leavers, (std::vector<int>{4, 5}));
  EXPECT_EQ(s.refused, "");
  EXPECT_TRUE(shrink_to({0, 1, 2, 3}, 4, 2).leavers.empty());            // at its size already
  EXPECT_TRUE(shrink_to({0, 1, 3}, 4, 2).leavers.empty());               // slot 2 missing: smaller, no member above
  EXPECT_EQ(shrink_to({0, 1, 3}, 3, 2).leavers, (std::vector<int>{3}));  // slices 0 and 1 keep 0 and 1
}

TEST(ElasticSize, ShrinkWaitsWhenASliceWouldHaveNoMemberLeft) {
  // Slot 1 is missing: slot 3 is slice 1's only member, so it cannot go yet.
  const auto s = shrink_to({0, 2, 3}, 3, 2);
  EXPECT_TRUE(s.leavers.empty());
  EXPECT_NE(s.refused.find("slice(s) [1]"), std::string::npos) << s.refused;
  // Once slot 1 is back, it goes.
  EXPECT_EQ(shrink_to({0, 1, 2, 3}, 3, 2).leavers, (std::vector<int>{3}));
}

TEST(ElasticSize, MinRanksIsValidatedAgainstTheSlotsTheSlicesAndTheRecovery) {
  Config c = parse_config("slicing: {slices: 2}\n");
  c.network.min_ranks = 2;
  EXPECT_THROW(validate_config(c, 4), ConfigError);  // recovery gang
  c.network.recovery = Recovery::Live;
  EXPECT_NO_THROW(validate_config(c, 4));
  c.network.min_ranks = 1;
  try {
    validate_config(c, 4);
    FAIL() << "min_ranks below the slices was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("network.min_ranks"), std::string::npos) << e.what();
  }
  c.network.min_ranks = 6;
  EXPECT_THROW(validate_config(c, 4), ConfigError);
}
