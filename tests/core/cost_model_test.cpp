#include <gtest/gtest.h>

#include <tuple>

#include "core/config.h"
#include "core/cost_model.h"
#include "core/plan_report.h"
#include "core/streaming_schedule.h"

using namespace ppu;

// Every bound here is exact or derived, and pure double arithmetic (no kernel, thread or CPU
// enters): a paper value is matched to the precision the paper prints (± half a unit of its last
// digit), a formula to a few double roundings.
namespace {
Config paper(const std::string& name) {
  return load_config(std::string(PPU_SOURCE_DIR) + "/configs/paper/" + name + ".yaml");
}
}  // namespace

TEST(CostModel, BackwardIsTwiceForwardWithoutSlicing) {
  const ModelSpec m = *model_preset("gpt2-124m");
  const StepFlops f = step_flops(m, 4, 256, 1.0, 1.0);
  // Appendix C: with rho = 1 the matmul part of the backward is exactly twice the forward's.
  EXPECT_DOUBLE_EQ(f.backward_matmul, 2 * f.forward_matmul);
  EXPECT_DOUBLE_EQ(f.backward, f.backward_full);
}

TEST(CostModel, PartialBackwardSavesTheParameterGradientTerms) {
  const ModelSpec m = *model_preset("gpt3-xl");
  const double B = 16, S = 1024, H = 2048, F = 4 * H, L = 24;
  const StepFlops f = step_flops(m, 16, 1024, 0.25, 0.25);
  const double saved = L * (6 * 0.75 * B * S * H * H + 4 * 0.75 * B * S * H * F);
  EXPECT_NEAR(f.backward_full - f.backward, saved, saved * 1e-12);  // ~10 double roundings: 1e-15
}

TEST(CostModel, Table1TrainableParameters) {
  const std::vector<std::pair<std::string, double>> rows = {{"mlp-2", 0.87},       {"mlp-4", 0.67},
                                                            {"mlp-8", 0.57},       {"mlp-16", 0.52},
                                                            {"mlp-heads-2", 0.72}, {"mlp-heads-4", 0.44}};
  for (const auto& [name, billions] : rows) {
    const auto r = plan_report(paper(name));
    EXPECT_NEAR(r["trainable_params"].get<double>() / 1e9, billions, 0.005) << name;  // 2 decimals
  }
  EXPECT_NEAR(plan_report(paper("streaming-diloco"))["trainable_params"].get<double>() / 1e9, 1.3, 0.05);  // 1 decimal
}

TEST(CostModel, AppendixBDdpCommunication) {
  // M = 2.6 GB, K = 32, B = 2.875 GB/s => 1.75 s per DDP step; 0.0175 s amortised over H = 100.
  // 2·(K − 1)/K·M/B = 1.7522 s: ±0.001 around it to three decimals, ±0.005 around the paper's
  // 1.75, and 0.017522 within a unit of the 4th decimal of the paper's 0.0175.
  EXPECT_NEAR(ring_allreduce_seconds(2.6e9, 32, 2.875e9), 1.752, 0.001);
  const auto ddp = plan_report(paper("ddp"));
  EXPECT_NEAR(ddp["comm_seconds_per_sync"].get<double>(), 1.75, 0.005);
  const auto ppu = plan_report(paper("mlp-4"));
  EXPECT_NEAR(ppu["comm_seconds_per_step_amortised"].get<double>(), 0.0175, 0.0001);
}

TEST(CostModel, MemoryComponentsShrinkWithSlicing) {
  const auto full = plan_report(paper("streaming-diloco"))["memory_bytes"];
  const auto quarter = plan_report(paper("mlp-heads-4"))["memory_bytes"];
  EXPECT_DOUBLE_EQ(full["weights"].get<double>() - 4 * 1.3e9 > 0, true);
  EXPECT_LT(quarter["gradients"].get<double>(), full["gradients"].get<double>() * 0.4);
  EXPECT_LT(quarter["inner_optimizer"].get<double>(), full["inner_optimizer"].get<double>() * 0.4);
  EXPECT_EQ(quarter["outer_optimizer"], full["outer_optimizer"]);  // same fragments, same outer state
  // The paper's headline: 1/4 MLPs + 1/4 heads needs ~47% less memory than full training. A band
  // of ±0.1 around it (our accounting differs from §3.1's where docs/RUNTIME.md says); the 0.4
  // above is the 1/4 trainable fraction plus the unsliced parameters' share.
  const double saving = 1 - quarter["total"].get<double>() / full["total"].get<double>();
  EXPECT_GT(saving, 0.35);
  EXPECT_LT(saving, 0.55);
}

TEST(CostModel, MixedPrecisionMemoryAndWhereTheOuterStateIsCounted) {
  // §3.1 in bf16: bf16 weights of every parameter + fp32 masters of the trainable ones, bf16
  // gradients and fp32 AdamW moments of the trainable ones only.
  for (const char* name : {"mlp-4", "mlp-heads-4", "streaming-diloco", "diloco", "ddp"}) {
    const Config c = paper(name);
    ASSERT_EQ(c.train.dtype, Dtype::Bf16) << name;
    const auto r = plan_report(c);
    const double total = r["total_params"].get<double>(), trainable = r["trainable_params"].get<double>();
    const auto &dev = r["memory_bytes"], &host = r["runtime_memory_bytes"];
    EXPECT_DOUBLE_EQ(dev["weights"].get<double>(), 2 * total + 4 * trainable) << name;
    EXPECT_DOUBLE_EQ(dev["gradients"].get<double>(), 2 * trainable) << name;
    EXPECT_DOUBLE_EQ(dev["inner_optimizer"].get<double>(), 8 * trainable) << name;
    for (const char* k : {"weights", "gradients", "inner_optimizer"}) EXPECT_EQ(dev[k], host[k]) << name << " " << k;
    // ppu-train keeps θ and the outer momentum of every parameter (host memory); §3.1's device
    // accounting only the fragment being synced (streaming) — DDP has neither.
    const bool ddp = std::string(name) == "ddp";
    EXPECT_DOUBLE_EQ(host["offloaded"].get<double>(), ddp ? 0 : 4 * total) << name;
    EXPECT_DOUBLE_EQ(host["outer_optimizer"].get<double>(), ddp ? 0 : 4 * total) << name;
    if (c.streaming()) {
      EXPECT_LT(dev["offloaded"].get<double>(), host["offloaded"].get<double>() / 5) << name;
    }
  }
  Config fp32 = paper("mlp-4");
  fp32.train.dtype = Dtype::Fp32;
  const auto r = plan_report(fp32);
  EXPECT_DOUBLE_EQ(r["memory_bytes"]["weights"].get<double>(), 4 * r["total_params"].get<double>());
  EXPECT_DOUBLE_EQ(r["memory_bytes"]["gradients"].get<double>(), 4 * r["trainable_params"].get<double>());
}

TEST(CostModel, WallClockFavoursLowCommunicationOnSlowLinks) {
  WallClockInputs in{0.44, 0.85, 2.6e9, 2.6e9, 32, 100, 10000, 44.0 / 26.0};
  const auto points = simulate_wall_clock(in, {0.5, 2.875, 1000});
  ASSERT_EQ(points.size(), 3u);
  EXPECT_NEAR(points[1].ddp_step_seconds, 1.752, 0.001);  // communication-bound
  EXPECT_GT(points[0].speedup(), points[1].speedup());    // the slower the link, the larger the win
  EXPECT_LT(points[2].speedup(), 1.0);                    // fast links: DDP's fewer tokens win
}

TEST(CostModel, BytesPerRankPerSyncDoNotGrowWithK) {
  // A regression: an all-gather once made every rank receive (K-1)·M·b. The ring/direct all-reduce
  // sends and receives 2(K-1)/K·M·b per rank, below 2·M·b for every K.
  for (const char* dtype : {"fp32", "bf16", "int8"}) {
    const double b = std::string(dtype) == "fp32" ? 4 : std::string(dtype) == "bf16" ? 2 : 1 + 4.0 / 2048;
    for (int K : {4, 8, 16, 32, 64}) {
      Config c = paper("mlp-heads-4");
      c.ranks = K;
      c.outer.delta_dtype = parse_choice<WireDtype>("outer.delta_dtype", dtype);
      c.network.message_bytes = 0;  // the model's own M, not the paper's 2.6 GB override
      const auto r = plan_report(c);
      const double per_param = r["wire_bytes_per_element"].get<double>();
      // Padding to K·block: < K·2048 = 131072 elements per fragment (int8; K for fp32/bf16) over 9
      // fragments of ≥ 65.5 M elements (the embeddings; 3 layers are 151 M): < 0.1 % of the
      // 1.3 B elements, within the 0.2 % allowed.
      EXPECT_NEAR(per_param, 2.0 * (K - 1) / K * b, 2e-3 * b) << dtype << " K=" << K;
      EXPECT_EQ(r["bytes_sent_per_round"], r["bytes_received_per_round"]);
    }
  }
  // The paper's K = 32 in int8: ~1.94 bytes per element per rank, not ~31 as by all-gather.
  Config c = paper("mlp-heads-4");
  c.outer.delta_dtype = WireDtype::Int8;
  c.network.message_bytes = 0;
  EXPECT_LT(plan_report(c)["wire_bytes_per_element"].get<double>(), 2.0);
}

TEST(CostModel, BytesPerRunCountEveryScheduledSyncAndTheFinalAverage) {
  Config c = load_config("", {"model.preset=tiny", "method=streaming-diloco", "ranks=4", "outer.sync_every=10",
                              "outer.layers_per_fragment=1", "outer.delta_dtype=int8"});
  const StreamingSchedule schedule(c, c.model);
  auto bytes = [&](int f) {
    return wire_layout(schedule.fragments()[f].numel, 4, WireDtype::Int8, c.model.d_model).bytes_per_rank(4);
  };
  for (const char* finish : {"average", "none"})
    for (int64_t T : {1, 7, 10, 23, 40}) {
      c.train.steps = T;
      c.outer.final_sync = parse_choice<FinalSync>("outer.final_sync", finish);
      double want = 0;
      for (int64_t s = 1; s <= T; ++s)
        for (int f : schedule.due(s)) want += bytes(f);
      if (std::string(finish) == "average")
        for (int f : schedule.unsynced_at_end(T)) want += bytes(f);
      EXPECT_EQ(plan_report(c)["bytes_sent_per_run"].get<double>(), want) << finish << " T=" << T;
    }
}

TEST(CostModel, AblationFlopsTerms) {
  // W_O sliced (Appendix A.2): its weight-gradient term 2 B S H^2 scales with rho_out.
  const ModelSpec m = *model_preset("gpt3-xl");
  const double B = 2, S = 128, H = 2048, F = 4 * H, L = 24;
  const StepFlops full = step_flops(m, 2, 128, 1, 1);
  const StepFlops wo = step_flops(m, 2, 128, 0.25, 0.25, 0.25, 1);
  const StepFlops heads = step_flops(m, 2, 128, 0.25, 0.25);
  EXPECT_DOUBLE_EQ(heads.backward - wo.backward, L * 2 * 0.75 * B * S * H * H);
  // Detached Jacobian (Appendix D): the MLP input Jacobian 4 B S H F scales with rho_mlp_input.
  const StepFlops detached = step_flops(m, 2, 128, 1, 0.25, 1, 0.25);
  const StepFlops mlp = step_flops(m, 2, 128, 1, 0.25);
  EXPECT_DOUBLE_EQ(mlp.backward - detached.backward, L * 4 * 0.75 * B * S * H * F);
  EXPECT_DOUBLE_EQ(detached.backward_full, full.backward_full);
  // A plan picks the right fractions for every mode.
  for (const auto& [mode, jac, rho_attn, rho_out, rho_mlp, rho_in] :
       std::vector<std::tuple<SliceMode, std::string, double, double, double, double>>{
           {SliceMode::Mlp, "full", 1, 1, 0.25, 1},
           {SliceMode::MlpHeads, "full", 0.25, 1, 0.25, 1},
           {SliceMode::MlpHeadsWo, "full", 0.25, 0.25, 0.25, 1},
           {SliceMode::Horizontal, "full", 1, 1, 0.25, 1},
           {SliceMode::Mlp, "slice", 1, 1, 0.25, 0.25},
           {SliceMode::Mlp, "slice+random", 1, 1, 0.25, 0.5}}) {
    const SlicePlan plan(m, mode, 8, 4, 5, parse_choice<Jacobian>("slicing.jacobian", jac));
    EXPECT_EQ(plan.rho_attn(), rho_attn) << slice_mode_name(mode) << " " << jac;
    EXPECT_EQ(plan.rho_out(), rho_out) << slice_mode_name(mode) << " " << jac;
    EXPECT_EQ(plan.rho_mlp(), rho_mlp) << slice_mode_name(mode) << " " << jac;
    EXPECT_EQ(plan.rho_mlp_input(), rho_in) << slice_mode_name(mode) << " " << jac;
    const StepFlops f = step_flops(m, 2, 128, plan);
    EXPECT_DOUBLE_EQ(f.backward, step_flops(m, 2, 128, rho_attn, rho_mlp, rho_out, rho_in).backward);
  }
}

TEST(CostModel, TokenBudgetsOfTable1AndFigure1b) {
  // K = 32 ranks x 16 sequences x 1024 tokens per step (§3.1): 26 B tokens for most rows, 28 B
  // for the MLP+heads rows and Figure 1b's longer Streaming DiLoCo run, 37 B for the overtrained
  // 1/8 MLPs run.
  const std::vector<std::pair<std::string, double>> budgets = {
      {"streaming-diloco", 26}, {"mlp-2", 26},       {"mlp-4", 26},       {"mlp-8", 26},
      {"mlp-16", 26},           {"mlp-heads-2", 28}, {"mlp-heads-4", 28}, {"streaming-diloco-28b", 28},
      {"mlp-8-overtrained", 37}};
  for (const auto& [name, billions] : budgets) {
    const auto r = plan_report(paper(name));
    // steps·32·16·1024 against the paper's whole billions: 26.21, 28.00 and 37.01 B, within 0.25.
    EXPECT_NEAR(r["tokens_per_run"].get<double>() / 1e9, billions, 0.25) << name;
    EXPECT_EQ(r["steps"].get<int64_t>() % paper(name).outer.sync_every, 0) << name << ": whole outer rounds";
  }
}
