// Algorithm 1 across ranks (Gloo, one thread per rank): count-vector normalisation and the
// equivalences that pin the implementation to DiLoCo, Streaming DiLoCo and DDP.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/config.h"
#include "core/streaming_schedule.h"
#include "engine/collectives.h"
#include "engine/outer_optimizer.h"
#include "engine/transformer.h"
#include "rank_threads.h"

using namespace ppu;
using ppu::testing::run_ranks;
using ppu::testing::train_job;

namespace {

Config tiny_job(const std::vector<std::string>& overrides) {
  std::vector<std::string> all = {"model.preset=tiny", "model.seq_len=32", "train.steps=12", "train.eval_every=0",
                                  "train.eval_batches=1", "train.log_every=100", "inner.batch_size=2",
                                  "inner.warmup_steps=2", "outer.sync_every=4", "outer.layers_per_fragment=1",
                                  "data.synthetic_train_tokens=40000", "data.synthetic_val_tokens=4000", "ranks=4"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return parse_config("", all);
}

}  // namespace

TEST(Distributed, CountNormalisationAveragesOverTheOwnersOfEachElement) {
  // K = 4, N = 2: slice 0 is owned by ranks {0, 2}, slice 1 by {1, 3}; the rest by all four.
  // Rank k moves every element it trains by (k + 1); frozen elements stay put. The applied
  // update ("average", i.e. θ += Δ) must be the mean over the owners: slice n moves by
  // ((n + 1) + (n + 3)) / 2 = n + 2, everything else by (1 + 2 + 3 + 4) / 4 = 2.5.
  const Config c = tiny_job({"slicing.mode=mlp+heads", "slicing.slices=2", "outer.optimizer=average", "method=diloco"});
  Config ppu = c;
  ppu.method = Method::Ppu;
  ppu.outer.layers_per_fragment = 0;  // one fragment: every element in one sync
  const StreamingSchedule schedule(ppu, ppu.model);
  std::vector<std::vector<torch::Tensor>> before(4), after(4);
  run_ranks(4, [&](int r, const RunEnv& env) {
    torch::NoGradGuard no_grad;
    Collectives col({r, 4, env.master_addr, env.master_port}, std::chrono::seconds(60));
    Transformer model(ppu.model, SlicePlan::from_config(ppu, 4, r), 0);
    OuterOptimizer outer(c.outer, model, schedule, col);
    for (const auto& w : model.weights()) before[r].push_back(w.clone());
    for (const auto& t : model.trainable()) t.add_(static_cast<float>(r + 1));
    outer.sync(0);
    for (const auto& g : outer.global()) after[r].push_back(g.clone());
  });
  const SlicePlan plan0 = SlicePlan::from_config(ppu, 4, 0);
  for (size_t i = 0; i < plan0.params().size(); ++i) {
    const auto& sl = plan0.params()[i];
    const auto moved = after[0][i] - before[0][i];
    for (int r = 1; r < 4; ++r) EXPECT_TRUE(torch::equal(after[r][i], after[0][i])) << "ranks disagree on " << sl.param.name;
    if (!sl.sliced()) {
      EXPECT_TRUE(torch::allclose(moved, torch::full_like(moved, 2.5), 0, 1e-5)) << sl.param.name;
      continue;
    }
    const int64_t extent = sl.param.shape[sl.dim];
    for (int n = 0; n < 2; ++n) {
      const auto part = moved.narrow(sl.dim, n * extent / 2, extent / 2);
      EXPECT_TRUE(torch::allclose(part, torch::full_like(part, n + 2.0), 0, 1e-5)) << sl.param.name << " slice " << n;
    }
  }
}

TEST(Distributed, PpuWithOneSliceIsBitIdenticalToStreamingDiLoCo) {
  const auto ppu = train_job(tiny_job({"method=ppu", "slicing.mode=mlp", "slicing.slices=1"}), 4);
  const auto sd = train_job(tiny_job({"method=streaming-diloco"}), 4);
  EXPECT_EQ(ppu.summaries[0]["param_checksum"], sd.summaries[0]["param_checksum"]);
  EXPECT_EQ(ppu.params, sd.params);
  EXPECT_GT(ppu.summaries[0]["bytes_sent"].get<double>(), 0);
}

TEST(Distributed, InnerSgdOneStepOuterLrOneEqualsDdp) {
  // DiLoCo with H = 1, inner SGD, outer SGD lr 1 without momentum: θ + mean(−lr g_k) = DDP.
  const std::vector<std::string> sgd = {"inner.optimizer=sgd", "inner.lr=0.05", "inner.weight_decay=0",
                                        "inner.grad_clip=0", "inner.schedule=constant", "inner.warmup_steps=0"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), sgd.begin(), sgd.end());
    return tiny_job(extra);
  };
  const auto diloco = train_job(with({"method=diloco", "outer.sync_every=1", "outer.lr=1", "outer.momentum=0"}), 4);
  const auto ddp = train_job(with({"method=ddp"}), 4);
  ASSERT_EQ(diloco.params.size(), ddp.params.size());
  double max_diff = 0, max_moved = 0;
  const auto init = train_job(with({"method=ddp", "inner.lr=1e-30"}), 1).params;
  for (size_t i = 0; i < ddp.params.size(); ++i) {
    max_diff = std::max<double>(max_diff, std::abs(diloco.params[i] - ddp.params[i]));
    max_moved = std::max<double>(max_moved, std::abs(ddp.params[i] - init[i]));
  }
  EXPECT_LT(max_diff, 2e-5) << "float-reduction tolerance";
  EXPECT_GT(max_moved, 1e-3) << "the runs must actually train";
}

TEST(Distributed, SameConfigAndSeedGiveTheSameChecksum) {
  const Config c = tiny_job({"slicing.mode=mlp+heads", "slicing.slices=2", "outer.delta_dtype=fp32"});
  const auto a = train_job(c, 4), b = train_job(c, 4);
  EXPECT_EQ(a.summaries[0]["param_checksum"], b.summaries[0]["param_checksum"]);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(a.summaries[r]["param_checksum"], a.summaries[0]["param_checksum"]);
  const auto other_seed = train_job(tiny_job({"slicing.mode=mlp+heads", "slicing.slices=2", "train.seed=1"}), 4);
  EXPECT_NE(other_seed.summaries[0]["param_checksum"], a.summaries[0]["param_checksum"]);
}

TEST(Distributed, CompressedDeltasStayCloseToFp32AndSendFewerBytes) {
  const auto fp32 = train_job(tiny_job({"slicing.slices=2"}), 4);
  for (const char* dtype : {"bf16", "int8"}) {
    const auto lossy = train_job(tiny_job({"slicing.slices=2", std::string("outer.delta_dtype=") + dtype}), 4);
    double max_diff = 0;
    for (size_t i = 0; i < fp32.params.size(); ++i)
      max_diff = std::max<double>(max_diff, std::abs(lossy.params[i] - fp32.params[i]));
    EXPECT_LT(max_diff, 2e-2) << dtype;
    EXPECT_GT(max_diff, 0) << dtype << " should not be lossless";
    EXPECT_LT(lossy.summaries[0]["bytes_sent"].get<double>(), 0.6 * fp32.summaries[0]["bytes_sent"].get<double>())
        << dtype;
  }
}

TEST(Distributed, EverySlicingModeLowersTheLoss) {
  for (const char* mode : {"none", "mlp", "mlp+heads"}) {
    const auto job = train_job(tiny_job({std::string("slicing.mode=") + mode, "slicing.slices=2", "train.steps=40",
                                         "inner.lr=3e-3", "data.synthetic_support=4"}),
                               2);
    const auto& s = job.summaries[0];
    EXPECT_LT(s["eval_loss"].get<double>(), std::log(256.0) - 0.3) << mode;
  }
}

TEST(Distributed, OverlappedSyncsKeepRanksConsistentAndStillTrain) {
  // Streaming DiLoCo's merge (α = 0.5 by default) keeps half of the τ local steps, so this
  // short run uses a learning rate and corpus on which both variants clearly learn.
  const std::vector<std::string> learnable = {"slicing.slices=2", "train.steps=24", "inner.lr=3e-3", "data.synthetic_support=4"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), learnable.begin(), learnable.end());
    return tiny_job(extra);
  };
  const auto plain = train_job(with({}), 4);
  const auto overlapped = train_job(with({"outer.overlap_steps=2"}), 4);
  for (int r = 1; r < 4; ++r)
    EXPECT_EQ(overlapped.summaries[r]["param_checksum"], overlapped.summaries[0]["param_checksum"]) << r;
  EXPECT_NE(overlapped.summaries[0]["param_checksum"], plain.summaries[0]["param_checksum"]);
  EXPECT_EQ(overlapped.summaries[0]["bytes_sent"], plain.summaries[0]["bytes_sent"]);
  EXPECT_EQ(overlapped.summaries[0]["bytes_received"], plain.summaries[0]["bytes_received"]);
  EXPECT_LT(overlapped.summaries[0]["eval_loss"].get<double>(), std::log(256.0) - 0.3);
  // Waiting: the overlapped run hides part of each exchange behind τ steps.
  EXPECT_GE(overlapped.summaries[0]["sync_seconds"].get<double>(), overlapped.summaries[0]["network_wait_seconds"].get<double>());
}
