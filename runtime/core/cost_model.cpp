#include "core/cost_model.h"

#include <algorithm>

namespace ppu {

StepFlops step_flops(const ModelSpec& model, int64_t batch, int64_t seq_len, double rho_attn, double rho_mlp,
                     double rho_out, double rho_mlp_input) {
  const double B = batch, S = seq_len, H = model.d_model, L = model.layers, F = model.mlp_hidden(), V = model.vocab;
  const double emb = B * S * H;
  const double attn_scores = 4 * B * S * S * H;  // QK^T and AV
  const double mha = 8 * B * S * H * H + attn_scores;
  const double ffn = 4 * B * S * H * F;
  const double out_proj = 2 * B * S * H * V;
  const double out = out_proj + 3 * B * S * V;

  // Appendix C: (10 + 6 rho_attn) B S H^2 = Q/K/V input Jacobian 6, their weight gradients
  // 6 rho_attn, W_O input Jacobian 2 and W_O weight gradient 2 (here 2 rho_out).
  auto mha_bwd = [&](double rho, double rho_o) {
    return 8 * B * S * S * H + (8 + 6 * rho + 2 * rho_o) * B * S * H * H;
  };
  auto ffn_bwd = [&](double rho, double rho_in) { return 4 * rho_in * B * S * H * F + 4 * rho * B * S * H * F; };

  StepFlops f;
  f.forward = emb + L * (mha + ffn) + out;
  f.forward_matmul = L * (mha + ffn) + out_proj;
  const double layers = L * (mha_bwd(rho_attn, rho_out) + ffn_bwd(rho_mlp, rho_mlp_input));
  f.backward = 2 * emb + layers + 2 * out;
  f.backward_full = 2 * emb + L * (mha_bwd(1, 1) + ffn_bwd(1, 1)) + 2 * out;
  f.backward_matmul = layers + 2 * out_proj;
  return f;
}

StepFlops step_flops(const ModelSpec& model, int64_t batch, int64_t seq_len, const SlicePlan& plan) {
  return step_flops(model, batch, seq_len, plan.rho_attn(), plan.rho_mlp(), plan.rho_out(), plan.rho_mlp_input());
}

MemoryBreakdown estimate_memory(const Config& config, const SlicePlan& plan, int64_t largest_fragment,
                                OuterStatePlacement placement) {
  const double total = plan.total_parameters();
  const double trainable = plan.trainable_parameters();
  const bool bf16 = config.train.dtype == Dtype::Bf16;
  MemoryBreakdown m;
  // bf16: bf16 working weights of every parameter plus fp32 masters of the trainable slices.
  m.weights = bf16 ? 2 * total + 4 * trainable : 4 * total;
  m.gradients = (bf16 ? 2 : 4) * trainable;
  m.inner_optimizer = config.inner.optimizer == InnerOptimizerKind::AdamW ? 8 * trainable : 0;
  if (config.method != Method::Ddp) {
    const double on_device =
        placement == OuterStatePlacement::Host || !config.streaming() ? total : static_cast<double>(largest_fragment);
    m.outer_optimizer = config.outer.optimizer == OuterOptimizerKind::Nesterov ? 4 * on_device : 0;
    m.offloaded = 4 * on_device;
  }
  return m;
}

double ring_allreduce_seconds(double message_bytes, int ranks, double bytes_per_second) {
  if (bytes_per_second <= 0 || ranks <= 1) return 0;
  return 2.0 * (ranks - 1) / ranks * message_bytes / bytes_per_second;
}

double delta_bytes(int64_t elements, WireDtype delta_dtype, int64_t row_length) {
  if (delta_dtype == WireDtype::Bf16) return 2.0 * elements;
  if (delta_dtype == WireDtype::Int8) {
    const int64_t rows = row_length > 0 ? (elements + row_length - 1) / row_length : 1;
    return 1.0 * elements + 4.0 * rows;  // one fp32 scale per row
  }
  return 4.0 * elements;
}

int64_t WireLayout::padded_elements(int ranks) const { return std::max(1, ranks) * chunk_elements; }

int64_t WireLayout::bytes_per_rank(int ranks) const { return ranks > 1 ? 2 * int64_t{ranks - 1} * chunk_bytes : 0; }

WireLayout wire_layout(int64_t elements, int ranks, WireDtype dtype, int64_t row_length) {
  const bool int8 = dtype == WireDtype::Int8;
  WireLayout w;
  w.block = int8 ? std::max<int64_t>(1, row_length) : 1;
  const int64_t K = std::max(1, ranks);
  const int64_t per_chunk_blocks = (elements + K * w.block - 1) / (K * w.block);
  w.chunk_elements = per_chunk_blocks * w.block;
  const int64_t value_bytes = int8 ? 1 : dtype == WireDtype::Bf16 ? 2 : 4;
  w.chunk_bytes = value_bytes * w.chunk_elements + (int8 ? 4 * per_chunk_blocks : 0);
  return w;
}

std::vector<WallClockPoint> simulate_wall_clock(const WallClockInputs& in, const std::vector<double>& bandwidths) {
  std::vector<WallClockPoint> points;
  for (double gb : bandwidths) {
    const double bps = gb * 1e9;
    WallClockPoint p{gb, 0, 0, 0, 0};
    auto wire_seconds = [&](double wire, double message) {
      return wire > 0 ? (bps > 0 ? wire / bps : 0) : ring_allreduce_seconds(message, in.ranks, bps);
    };
    const double ddp_comm = wire_seconds(in.ddp_wire_bytes, in.ddp_message_bytes);
    p.ddp_step_seconds = std::max(in.step_seconds_full, ddp_comm);
    p.ddp_hours = p.ddp_step_seconds * in.ddp_steps / 3600;
    const double round_comm = wire_seconds(in.lowcomm_wire_bytes, in.lowcomm_message_bytes);
    p.lowcomm_step_seconds = in.step_seconds_full * in.flops_ratio + round_comm / in.sync_every;
    p.lowcomm_hours = p.lowcomm_step_seconds * in.ddp_steps * in.token_ratio / 3600;
    points.push_back(p);
  }
  return points;
}

}  // namespace ppu
