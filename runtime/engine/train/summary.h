// The run summary (ppu-train --summary; core/run_summary.h) of a run that has ended, built from
// its parts and its last figures, and the state bytes that both it and the per-step metrics
// report. Contracts:
//  - Every figure is this rank's except the evaluation and the checksum, which are of the
//    global parameters (the same on every rank).
//  - DDP has no outer state: its local parameters are the global ones, and no outer bytes.
//  - CUDA ranks add their device and memory; CPU summaries keep their keys.
// Reads only: the parts are given by reference and outlive the call.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/run_summary.h"
#include "core/slice_plan.h"
#include "data/data_loader.h"
#include "engine/comm/collectives.h"
#include "engine/model/transformer.h"
#include "engine/obs/rank_metrics.h"
#include "engine/optim/inner_optimizer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/train/progress.h"

namespace ppu {

// This rank's training state as held: weights (bf16: with the fp32 masters of the trainable
// slices), the last step's gradients (`grad_bytes`), the inner optimiser's state and, unless
// `outer` is null (DDP), the outer momentum and the offloaded θ.
StateBytes measured_state(const Transformer& model, const InnerOptimizer& inner, const OuterOptimizer* outer,
                          int64_t grad_bytes);

// The same state if every parameter were trainable, from the measured one.
StateBytes full_training_state(const StateBytes& measured, const Transformer& model, const SlicePlan& plan,
                               int64_t grad_bytes);

// The perplexity no model can beat on `dataset` (synthetic data), else 0.
double floor_perplexity(const data::TokenDataset& dataset);

// The parts of a run that its summary reads.
struct SummarySources {
  const Config& config;
  const RendezvousInfo& rendezvous;
  torch::Device device;
  bool ddp;
  const SlicePlan& plan;
  const data::TokenDataset& dataset;
  const Collectives& collectives;
  const Transformer& model;
  const InnerOptimizer& inner;
  const OuterOptimizer& outer;
  const RunProgress& progress;
  const RecoverySummary& recovery;
};

// The figures of a run's end, as the Run measured them.
struct RunEnd {
  std::vector<torch::Tensor> global;  // the global parameters in fp32, in layout order
  std::string param_checksum;         // of `global` (run_dataset.h: parameter_checksum)
  double final_loss = 0, eval_loss = 0;
  double seconds = 0, step_seconds = 0;  // training time (no evaluation), and per step
  double eval_seconds = 0;               // all evaluations of this process
  int64_t eval_batches_evaluated = 0;    // this rank's share of them
  int64_t grad_bytes = 0;                // the last step's gradients
  double inner_step_seconds_median = 0;
  StepPhasesSummary inner_step_phases_median;
};

// This rank's summary. `final_params`, when set, receives `end.global` flattened (tests).
RunSummary summarise(const SummarySources& run, const RunEnd& end, std::vector<float>* final_params);

}  // namespace ppu
