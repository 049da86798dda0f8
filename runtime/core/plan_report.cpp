#include "core/plan_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/cost_model.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "core/wire_plan.h"

namespace ppu {

namespace {
std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string bytes(double b) { return fmt("%8.2f GB", b / 1e9) + fmt(" (%7.2f GiB)", b / (1024.0 * 1024 * 1024)); }
}  // namespace

nlohmann::json plan_report(const Config& config, const PlanOptions& options) {
  const int K = config.ranks;
  validate_config(config, K);
  const SlicePlan plan = SlicePlan::from_config(config, K, 0);
  const StreamingSchedule schedule(config, config.model);
  const auto& m = config.model;
  const int64_t B = config.inner.batch_size, S = m.seq_len;
  const StepFlops f = step_flops(m, B, S, plan);
  const MemoryBreakdown mem = estimate_memory(config, plan, schedule.largest_fragment_numel());
  const MemoryBreakdown host =
      estimate_memory(config, plan, schedule.largest_fragment_numel(), OuterStatePlacement::Host);
  const double total = plan.total_parameters();
  const double bps = config.network.bandwidth_gb_per_s * 1e9;
  const bool bf16 = config.train.dtype == Dtype::Bf16;

  // Bytes per synchronisation: DDP all-reduces gradients every step; the low-communication
  // methods all-reduce deltas of one fragment per sync and of every fragment once per round.
  // per_*_bytes is the message (M·b); wire_*_bytes what one rank sends (and receives) for it
  // with the runtime's all-reduce layout, the number ppu-train's summary reports.
  double per_sync_bytes, per_round_bytes, amortised_step_seconds, wire_sync_bytes = 0, wire_round_bytes = 0;
  double wire_run_bytes = 0;  // over train.steps: every scheduled sync, plus outer.final_sync's averages
  const int64_t T = config.train.steps;
  const WirePlan wire = wire_plan(config);
  const WireDtype wire_dtype = wire.dtype;
  const int64_t row = wire.row_length;
  if (config.method == Method::Ddp) {
    per_sync_bytes = per_round_bytes = (bf16 ? 2 : 4) * total;
    wire_sync_bytes = wire_round_bytes = wire_layout(plan.total_parameters(), K, wire_dtype, row).bytes_per_rank(K);
    wire_run_bytes = wire_round_bytes * T;
  } else {
    per_round_bytes = delta_bytes(plan.total_parameters(), config.outer.delta_dtype, m.d_model);
    per_sync_bytes = delta_bytes(schedule.largest_fragment_numel(), config.outer.delta_dtype, m.d_model);
    for (const auto& fr : schedule.fragments()) {
      const double w = wire_layout(fr.numel, K, wire_dtype, row).bytes_per_rank(K);
      wire_round_bytes += w;
      wire_sync_bytes = std::max(wire_sync_bytes, w);
    }
    for (size_t fi = 0; fi < schedule.fragments().size(); ++fi) {
      const int64_t syncs = schedule.scheduled_syncs(static_cast<int>(fi), T);
      wire_run_bytes += syncs * wire_layout(schedule.fragments()[fi].numel, K, wire_dtype, row).bytes_per_rank(K);
    }
    if (config.outer.final_sync == FinalSync::Average)  // one exchange per fragment with trailing progress
      for (int fi : schedule.unsynced_at_end(T))
        wire_run_bytes += wire_layout(schedule.fragments()[fi].numel, K, wire_dtype, row).bytes_per_rank(K);
  }
  if (config.network.message_bytes > 0) {  // an override of M scales everything with it
    const double scale = config.network.message_bytes / per_round_bytes;
    per_sync_bytes *= scale;
    wire_sync_bytes *= scale;
    wire_round_bytes *= scale;
    wire_run_bytes *= scale;
    per_round_bytes = config.network.message_bytes;
  }
  const int H = wire.steps_per_sync;
  auto seconds = [&](double bytes) { return bps > 0 ? bytes / bps : 0.0; };
  amortised_step_seconds = seconds(wire_round_bytes) / H;

  nlohmann::json fragments = nlohmann::json::array();
  for (size_t i = 0; i < schedule.fragments().size(); ++i) {
    const auto& fr = schedule.fragments()[i];
    fragments.push_back(
        {{"name", fr.name}, {"params", fr.numel}, {"sync_offset", schedule.offset(static_cast<int>(i))}});
  }

  nlohmann::json r = {
      {"model",
       {{"preset", m.preset},
        {"layers", m.layers},
        {"d_model", m.d_model},
        {"heads", m.heads},
        {"vocab", m.vocab},
        {"seq_len", m.seq_len}}},
      {"method", method_name(config.method)},
      {"ranks", K},
      {"dtype", choice_name(config.train.dtype)},
      {"slicing",
       {{"mode", slice_mode_name(plan.mode())}, {"slices", plan.slices()}, {"jacobian", choice_name(plan.jacobian())}}},
      {"trainable_params", plan.trainable_parameters()},
      {"total_params", plan.total_parameters()},
      {"rho_attn", plan.rho_attn()},
      {"rho_out", plan.rho_out()},
      {"rho_mlp", plan.rho_mlp()},
      {"rho_mlp_input", plan.rho_mlp_input()},
      {"steps", T},
      // Tokens the whole job trains on: K ranks x batch x seq_len per step (the paper's budgets).
      {"tokens_per_run", static_cast<double>(T) * K * B * S},
      {"memory_bytes",
       {{"weights", mem.weights},
        {"gradients", mem.gradients},
        {"inner_optimizer", mem.inner_optimizer},
        {"outer_optimizer", mem.outer_optimizer},
        {"offloaded", mem.offloaded},
        {"total", mem.total()}}},
      // What ppu-train allocates (θ and momentum of every parameter in host memory): the
      // summary's state_bytes, measured from its tensors, equals this key by key.
      {"runtime_memory_bytes",
       {{"weights", host.weights},
        {"gradients", host.gradients},
        {"inner_optimizer", host.inner_optimizer},
        {"outer_optimizer", host.outer_optimizer},
        {"offloaded", host.offloaded},
        {"total", host.total()}}},
      {"flops_per_step",
       {{"forward", f.forward},
        {"backward", f.backward},
        {"backward_full", f.backward_full},
        {"executed", f.executed()},
        {"full", f.full()},
        {"batch", B},
        {"seq_len", S}}},
      {"flops_per_token", f.executed() / (B * S)},
      {"flops_ratio", f.executed() / f.full()},
      {"bytes_per_sync", per_sync_bytes},
      {"bytes_per_round", per_round_bytes},
      {"bandwidth_gb_per_s", config.network.bandwidth_gb_per_s},
      {"delta_dtype", choice_name(wire_dtype)},
      {"collective", choice_name(config.network.collective)},
      {"bytes_sent_per_sync", wire_sync_bytes},
      {"bytes_received_per_sync", wire_sync_bytes},
      {"bytes_sent_per_round", wire_round_bytes},
      {"bytes_received_per_round", wire_round_bytes},
      {"bytes_sent_per_step_amortised", wire_round_bytes / H},
      {"bytes_sent_per_run", wire_run_bytes},
      {"bytes_received_per_run", wire_run_bytes},
      {"wire_bytes_per_element", wire_round_bytes / total},
      {"comm_seconds_per_sync", seconds(wire_sync_bytes)},
      {"comm_seconds_per_round", seconds(wire_round_bytes)},
      {"comm_seconds_per_step_amortised", amortised_step_seconds},
      {"sync_every", H},
      {"fragments", fragments},
  };

  if (!options.bandwidths_gb_per_s.empty()) {
    WallClockInputs in;
    in.step_seconds_full = options.step_seconds;
    in.flops_ratio = f.executed() / f.full();
    in.ddp_message_bytes = config.network.message_bytes > 0 ? config.network.message_bytes : 2 * total;
    in.lowcomm_message_bytes = config.network.message_bytes > 0 ? config.network.message_bytes : per_round_bytes;
    in.ranks = K;
    in.lowcomm_wire_bytes = wire_round_bytes;
    if (config.method == Method::Ddp) in.ddp_wire_bytes = wire_round_bytes;
    in.sync_every = config.outer.sync_every;
    in.ddp_steps = options.ddp_steps > 0 ? options.ddp_steps : static_cast<double>(config.train.steps);
    in.token_ratio = options.token_ratio;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& p : simulate_wall_clock(in, options.bandwidths_gb_per_s))
      rows.push_back({{"bandwidth_gb_per_s", p.bandwidth_gb_per_s},
                      {"ddp_step_seconds", p.ddp_step_seconds},
                      {"ddp_hours", p.ddp_hours},
                      {"lowcomm_step_seconds", p.lowcomm_step_seconds},
                      {"lowcomm_hours", p.lowcomm_hours},
                      {"speedup", p.speedup()}});
    r["wall_clock"] = {{"step_seconds_full", in.step_seconds_full},
                       {"ddp_steps", in.ddp_steps},
                       {"token_ratio", in.token_ratio},
                       {"points", rows}};
  }
  return r;
}

std::string format_plan(const nlohmann::json& r) {
  std::ostringstream os;
  const auto& m = r["model"];
  os << "model      " << m["preset"].get<std::string>() << ": " << m["layers"] << " layers, d=" << m["d_model"] << ", "
     << m["heads"] << " heads, vocab " << m["vocab"] << ", seq " << m["seq_len"] << "\n";
  os << "method     " << r["method"].get<std::string>() << ", K=" << r["ranks"] << " ranks, slicing "
     << r["slicing"]["mode"].get<std::string>() << " N=" << r["slicing"]["slices"]
     << (r["slicing"]["jacobian"] == "full" ? "" : ", jacobian " + r["slicing"]["jacobian"].get<std::string>()) << "\n";
  os << "run        " << r["steps"] << " steps, " << fmt("%.2f B tokens", r["tokens_per_run"].get<double>() / 1e9)
     << "\n";
  const double total = r["total_params"], trainable = r["trainable_params"];
  os << "params     total " << fmt("%.3f B", total / 1e9) << ", trainable per rank " << fmt("%.3f B", trainable / 1e9)
     << fmt(" (%.1f%%)", 100 * trainable / total) << "\n";
  const std::string dtype = r.value("dtype", std::string("fp32"));
  os << "memory per rank (state, excluding activations; " << dtype
     << (dtype == "bf16" ? ", fp32 masters of trainable slices" : "") << ")\n";
  for (const char* k : {"weights", "gradients", "inner_optimizer", "outer_optimizer", "offloaded", "total"})
    os << "  " << k << std::string(18 - std::string(k).size(), ' ') << bytes(r["memory_bytes"][k]) << "\n";
  os << "  (ppu-train keeps theta and outer momentum of every parameter in host memory: "
     << bytes(r["runtime_memory_bytes"]["offloaded"].get<double>() +
              r["runtime_memory_bytes"]["outer_optimizer"].get<double>())
     << ")\n";
  const auto& f = r["flops_per_step"];
  os << "FLOPs per step (batch " << f["batch"] << " x seq " << f["seq_len"] << ")\n"
     << "  forward           " << fmt("%.4g", f["forward"]) << "\n"
     << "  backward          " << fmt("%.4g", f["backward"]) << "\n"
     << "  backward (full)   " << fmt("%.4g", f["backward_full"]) << "\n"
     << "  executed / full   " << fmt("%.4f", r["flops_ratio"])
     << fmt("  (%.1f%% saved)", 100 * (1 - r["flops_ratio"].get<double>())) << "\n"
     << "  per token         " << fmt("%.4g", r["flops_per_token"]) << "\n";
  os << "communication (" << r["collective"].get<std::string>() << " reduce-scatter + all-gather in "
     << r["delta_dtype"].get<std::string>() << ", T = bytes sent / B, B = " << fmt("%g", r["bandwidth_gb_per_s"])
     << " GB/s)\n"
     << "  message per sync  " << bytes(r["bytes_per_sync"]) << "\n"
     << "  sent per sync     " << bytes(r["bytes_sent_per_sync"]) << " per rank (received the same)\n"
     << "  sent per round    " << bytes(r["bytes_sent_per_round"])
     << fmt(" (%.3f bytes per parameter)", r["wire_bytes_per_element"]) << "\n"
     << "  seconds per sync  " << fmt("%.4f", r["comm_seconds_per_sync"]) << "\n"
     << "  seconds per round " << fmt("%.4f", r["comm_seconds_per_round"]) << " (every " << r["sync_every"]
     << " steps)\n"
     << "  amortised per step" << fmt(" %.5f", r["comm_seconds_per_step_amortised"]) << "\n";
  os << "fragments  " << r["fragments"].size() << " (largest synced on device)\n";
  if (r.contains("wall_clock")) {
    const auto& w = r["wall_clock"];
    os << "simulated wall-clock to target (full step " << fmt("%.3f s", w["step_seconds_full"]) << ", DDP steps "
       << fmt("%.0f", w["ddp_steps"]) << ", low-comm tokens x" << fmt("%.2f", w["token_ratio"]) << ")\n"
       << "  GB/s      DDP step    DDP hours   low-comm step  low-comm hours  speedup\n";
    for (const auto& p : w["points"])
      os << fmt("  %-8g", p["bandwidth_gb_per_s"]) << fmt("  %8.3f s", p["ddp_step_seconds"])
         << fmt("  %9.2f", p["ddp_hours"]) << fmt("   %10.4f s", p["lowcomm_step_seconds"])
         << fmt("  %12.2f", p["lowcomm_hours"]) << fmt("  %6.2fx", p["speedup"]) << "\n";
  }
  return os.str();
}

}  // namespace ppu
