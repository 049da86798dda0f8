// CostModel: the paper's analytic model of one rank's cost (Appendix C FLOPs, §3.1 memory
// components, §3.1/Appendix B communication, Figure 2 wall-clock simulation). Pure arithmetic,
// used by `ppu-plan`, by the trainer's FLOPs accounting and by tests. No LibTorch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/slice_plan.h"

namespace ppu {

struct StepFlops {
  double forward = 0;          // Appendix C forward, incl. embedding and softmax terms
  double backward = 0;         // backward with rho_attn and rho_mlp of this rank
  double backward_full = 0;    // the same backward with rho = 1
  double backward_matmul = 0;  // the matmul part of `backward` only (what a MAC counter sees)
  double forward_matmul = 0;   // the matmul part of `forward`
  double executed() const { return forward + backward; }
  double full() const { return forward + backward_full; }
};

// FLOPs of one inner step on `batch` sequences of `seq_len` tokens (Appendix C.2). rho_out
// (W_O's weight-gradient fraction, Appendix A.2's ablation) splits Appendix C's "2 + 2" W_O
// terms into 2 + 2·rho_out; rho_mlp_input (Appendix D's detached Jacobian) scales the MLP's
// input-Jacobian term 4·B·S·H·D_ff. Both are 1 for the method as published.
StepFlops step_flops(const ModelSpec& model, int64_t batch, int64_t seq_len, double rho_attn, double rho_mlp,
                     double rho_out = 1.0, double rho_mlp_input = 1.0);
// The same for the fractions of `plan` (every slicing mode and Jacobian variant).
StepFlops step_flops(const ModelSpec& model, int64_t batch, int64_t seq_len, const SlicePlan& plan);

// Memory by the paper's five components, in bytes, for one rank (§3.1 "Memory Usage").
struct MemoryBreakdown {
  double weights = 0;          // compute-precision weights (+ fp32 master of trainable slices in bf16)
  double gradients = 0;        // grad buffers of trainable slices only
  double inner_optimizer = 0;  // AdamW moments of trainable slices only (fp32)
  double outer_optimizer = 0;  // outer momentum (fp32) on the device: the fragment being synced
  double offloaded = 0;        // global fp32 parameters brought back for the fragment being synced
  double total() const { return weights + gradients + inner_optimizer + outer_optimizer + offloaded; }
};

// Where the outer state is counted.
//  - Device (§3.1, Table 1): a GPU rank keeps θ and the outer momentum in host memory and
//    brings only the fragment being synced to the device: outer_optimizer and offloaded are
//    that fragment's momentum and parameters.
//  - Host (what ppu-train allocates, and its summary's state_bytes measures from the tensors
//    that exist): θ and the momentum of every parameter, fp32, once every fragment has synced
//    (momentum is allocated at a fragment's first outer step; Nesterov only).
// weights, gradients and inner_optimizer are the same in both.
enum class OuterStatePlacement { Device, Host };

// `largest_fragment` = parameters of the largest streaming fragment (all parameters without streaming).
MemoryBreakdown estimate_memory(const Config& config, const SlicePlan& plan, int64_t largest_fragment,
                                OuterStatePlacement placement = OuterStatePlacement::Device);

// Bandwidth-optimal ring all-reduce: T = 2 (K-1)/K * M / B (seconds; B in bytes/s; B = 0 => 0).
double ring_allreduce_seconds(double message_bytes, int ranks, double bytes_per_second);

// Bytes one rank contributes to a synchronisation of `elements` values in `delta_dtype`.
double delta_bytes(int64_t elements, WireDtype delta_dtype, int64_t row_length);

// How the runtime's all-reduce (runtime/engine/ring_allreduce) lays out `elements` values for
// `ranks` ranks: K equal chunks of whole codec blocks (int8: `row_length` values per fp32
// scale; fp32/bf16: blocks of 1), the tail zero-padded. Both the ring and the direct schedule
// send every chunk payload once in the reduce-scatter and once in the all-gather, so a rank
// sends and receives exactly 2(K-1) chunk payloads per all-reduce. The runtime sizes its
// buffers with this function, and ppu-plan predicts bytes with it.
struct WireLayout {
  int64_t block = 1;                         // values per codec block
  int64_t chunk_elements = 0;                // values per chunk (a multiple of block)
  int64_t chunk_bytes = 0;                   // encoded bytes of one chunk on the wire
  int64_t padded_elements(int ranks) const;  // K chunks
  int64_t bytes_per_rank(int ranks) const;   // sent (= received) per rank per all-reduce: 2(K-1) chunks
};
WireLayout wire_layout(int64_t elements, int ranks, WireDtype dtype, int64_t row_length);

// Figure 2: simulated wall-clock to a target loss under limited bandwidth.
struct WallClockPoint {
  double bandwidth_gb_per_s;
  double ddp_step_seconds, ddp_hours;          // max(compute, comm), every step
  double lowcomm_step_seconds, lowcomm_hours;  // compute + comm / H, needs token_ratio x the steps
  double speedup() const { return ddp_hours / lowcomm_hours; }
};
struct WallClockInputs {
  double step_seconds_full;      // measured or given compute time of a full-backward step
  double flops_ratio;            // executed / full FLOPs of the low-comm method's step
  double ddp_message_bytes;      // gradient bytes per DDP step
  double lowcomm_message_bytes;  // delta bytes per outer round (all fragments)
  int ranks;
  int sync_every;
  double ddp_steps;    // steps DDP needs to reach the target
  double token_ratio;  // low-comm tokens / DDP tokens to the same loss (paper: 44B/26B)
  // Bytes one rank sends per DDP step / per outer round (wire_layout); 0 = the ideal ring's
  // 2(K-1)/K of the message. Communication time is these bytes over the per-link bandwidth.
  double ddp_wire_bytes = 0;
  double lowcomm_wire_bytes = 0;
};
std::vector<WallClockPoint> simulate_wall_clock(const WallClockInputs& in,
                                                const std::vector<double>& bandwidths_gb_per_s);

}  // namespace ppu
