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
  const ModelSpec m = tiny();                             // 4 heads of 16
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

TEST(SlicePlan, HeadsOnlySlicesQkvByHeadGroupAndTrainsMlpsWhole) {
  const ModelSpec m = tiny();                          // 4 heads of 16
  const SlicePlan plan(m, SliceMode::Heads, 8, 4, 6);  // slice 2
  for (const char* name : {"blocks.0.attn.wq.weight", "blocks.0.attn.wk.weight", "blocks.0.attn.wv.weight"}) {
    const auto& p = plan.find(name);
    EXPECT_EQ(p.dim, 0);
    EXPECT_EQ(p.begin, 32);  // head 2
    EXPECT_EQ(p.end, 48);
    EXPECT_EQ(p.owners, 2);
  }
  for (const char* name : {"blocks.0.mlp.up.weight", "blocks.0.mlp.down.weight", "blocks.0.attn.wo.weight"}) {
    EXPECT_FALSE(plan.find(name).sliced()) << name;
    EXPECT_EQ(plan.find(name).owners, 8) << name;
  }
  EXPECT_DOUBLE_EQ(plan.rho_attn(), 0.25);
  EXPECT_DOUBLE_EQ(plan.rho_mlp(), 1.0);
  EXPECT_DOUBLE_EQ(plan.rho_mlp_input(), 1.0);
  const int64_t d = m.d_model, L = m.layers;
  EXPECT_EQ(plan.trainable_parameters(), plan.total_parameters() - 3 * d * d * L * 3 / 4);
  // N must divide the heads, not the MLP width alone.
  EXPECT_THROW(SlicePlan(m, SliceMode::Heads, 8, 8, 0), ConfigError);
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
    [[maybe_unused]] const SlicePlan refused(tiny(), SliceMode::Mlp, 6, 4, 0);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("K=6"), std::string::npos);
  }
  EXPECT_THROW(SlicePlan(tiny(), SliceMode::MlpHeads, 8, 8, 0), ConfigError);  // 8 does not divide 4 heads
  EXPECT_THROW(SlicePlan(tiny(), SliceMode::Mlp, 4, 2, 4), ConfigError);       // rank out of range
}

TEST(SlicePlan, MlpHeadsWoSlicesWoColumnsByTheSameHeadGroup) {
  const ModelSpec m = tiny();  // 4 heads of 16
  for (int rank = 0; rank < 4; ++rank) {
    const SlicePlan plan(m, SliceMode::MlpHeadsWo, 4, 2, rank);
    const auto& q = plan.find("blocks.0.attn.wq.weight");
    const auto& o = plan.find("blocks.0.attn.wo.weight");
    EXPECT_EQ(o.dim, 1);  // W_O's input features are the concatenated head outputs
    EXPECT_EQ(o.begin, q.begin);
    EXPECT_EQ(o.end, q.end);
    EXPECT_EQ(o.owners, 2);
    EXPECT_DOUBLE_EQ(plan.rho_out(), 0.5);
  }
  const SlicePlan heads(m, SliceMode::MlpHeads, 4, 2, 0), wo(m, SliceMode::MlpHeadsWo, 4, 2, 0);
  EXPECT_EQ(heads.trainable_parameters() - wo.trainable_parameters(), int64_t{m.layers} * m.d_model * m.d_model / 2);
}

TEST(SlicePlan, HorizontalTrainsWholeMlpsOfOneLayerGroup) {
  ModelSpec m = tiny();
  m.layers = 4;
  const int K = 4, N = 2;
  std::vector<int> owners_seen(m.layers, 0);
  for (int rank = 0; rank < K; ++rank) {
    const SlicePlan plan(m, SliceMode::Horizontal, K, N, rank);
    for (int l = 0; l < m.layers; ++l) {
      const std::string p = "blocks." + std::to_string(l) + ".mlp.";
      const auto& up = plan.find(p + "up.weight");
      const auto& down = plan.find(p + "down.weight");
      const bool mine = l / (m.layers / N) == rank % N;
      EXPECT_EQ(up.frozen(), !mine) << rank << " " << l;
      EXPECT_EQ(down.frozen(), !mine) << rank << " " << l;
      EXPECT_EQ(up.trainable_numel(), mine ? up.param.numel() : 0);
      EXPECT_EQ(up.owners, K / N);
      EXPECT_EQ(down.owners, K / N);
      owners_seen[l] += mine;
      EXPECT_FALSE(plan.find("blocks." + std::to_string(l) + ".attn.wq.weight").sliced());
    }
    // As many trainable parameters as 1/N MLP slicing.
    EXPECT_EQ(plan.trainable_parameters(), SlicePlan(m, SliceMode::Mlp, K, N, rank).trainable_parameters());
    EXPECT_DOUBLE_EQ(plan.rho_mlp(), 0.5);
  }
  for (int c : owners_seen) EXPECT_EQ(c, K / N);  // the count vector: K/N owners per layer's MLP
  EXPECT_THROW(SlicePlan(tiny(), SliceMode::Horizontal, 4, 4, 0), ConfigError);  // 4 does not divide 2 layers
}

TEST(SlicePlan, JacobianVariantsChangeTheBackwardNotWhatIsTrained) {
  const SlicePlan full(tiny(), SliceMode::Mlp, 4, 4, 1), slice(tiny(), SliceMode::Mlp, 4, 4, 1, Jacobian::Slice),
      random(tiny(), SliceMode::Mlp, 4, 4, 1, Jacobian::SliceRandom);
  EXPECT_EQ(slice.trainable_parameters(), full.trainable_parameters());
  EXPECT_EQ(random.trainable_parameters(), full.trainable_parameters());
  EXPECT_DOUBLE_EQ(full.rho_mlp_input(), 1.0);
  EXPECT_DOUBLE_EQ(slice.rho_mlp_input(), 0.25);
  EXPECT_DOUBLE_EQ(random.rho_mlp_input(), 0.5);
}
