#include <gtest/gtest.h>

#include "core/slice_plan.h"

using namespace ppu;

namespace {
ModelSpec tiny() { return *model_preset("tiny"); }
}  // namespace

TEST(SlicePlan, MlpSlicesAreDisjointAndCoverTheHiddenDimension) {
  const int K = 8, N = 4;
  std::vector<int> covered(tiny().mlp_hidden(), 0);
  for (int rank = 0; rank < K; ++rank) {
    const SlicePlan plan(tiny(), SliceMode::Mlp, K, N, rank);
    const auto& up = plan.find("blocks.0.mlp.up.weight");
    const auto& down = plan.find("blocks.0.mlp.down.weight");
    EXPECT_EQ(up.dim, 0);
    EXPECT_EQ(down.dim, 1);
    EXPECT_EQ(up.begin, down.begin);
    EXPECT_EQ(up.end, down.end);
    EXPECT_EQ(up.owners, K / N);
    EXPECT_EQ(plan.slice_index(), rank % N);
    for (int64_t i = up.begin; i < up.end; ++i) covered[i]++;
    // attention and embeddings stay trainable everywhere, counted by all K ranks
    EXPECT_FALSE(plan.find("blocks.0.attn.wq.weight").sliced());
    EXPECT_EQ(plan.find("tok_emb.weight").owners, K);
  }
  for (int c : covered) EXPECT_EQ(c, K / N);  // every element trained by exactly m = K/N ranks
}

TEST(SlicePlan, MlpHeadsSlicesQkvByHeadGroupButNotWo) {
  const ModelSpec m = tiny();  // 4 heads of 16
  const SlicePlan plan(m, SliceMode::MlpHeads, 4, 2, 3);  // slice 1
  for (const char* name : {"blocks.1.attn.wq.weight", "blocks.1.attn.wk.weight", "blocks.1.attn.wv.weight"}) {
    const auto& p = plan.find(name);
    EXPECT_EQ(p.dim, 0);
    EXPECT_EQ(p.begin, 32);  // heads 2 and 3
    EXPECT_EQ(p.end, 64);
    EXPECT_EQ(p.owners, 2);
  }
  EXPECT_FALSE(plan.find("blocks.1.attn.wo.weight").sliced());
  EXPECT_DOUBLE_EQ(plan.rho_attn(), 0.5);
  EXPECT_DOUBLE_EQ(plan.rho_mlp(), 0.5);
}

TEST(SlicePlan, ModeNoneTrainsEverything) {
  const SlicePlan plan(tiny(), SliceMode::None, 4, 4, 2);
  EXPECT_EQ(plan.slices(), 1);
  EXPECT_EQ(plan.trainable_parameters(), plan.total_parameters());
  for (const auto& p : plan.params()) EXPECT_EQ(p.owners, 4);
}

TEST(SlicePlan, TrainableCountFollowsTheFormula) {
  const ModelSpec m = tiny();
  const int64_t d = m.d_model, L = m.layers;
  const SlicePlan plan(m, SliceMode::MlpHeads, 4, 4, 0);
  const int64_t mlp = 8 * d * d * L, qkv = 3 * d * d * L;
  EXPECT_EQ(plan.trainable_parameters(), plan.total_parameters() - mlp * 3 / 4 - qkv * 3 / 4);
}

TEST(SlicePlan, RejectsInvalidCombinationsNamingValues) {
  try {
    SlicePlan(tiny(), SliceMode::Mlp, 6, 4, 0);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("K=6"), std::string::npos);
  }
  EXPECT_THROW(SlicePlan(tiny(), SliceMode::MlpHeads, 8, 8, 0), ConfigError);  // 8 does not divide 4 heads
  EXPECT_THROW(SlicePlan(tiny(), SliceMode::Mlp, 4, 2, 4), ConfigError);       // rank out of range
}
