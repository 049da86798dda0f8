#include "engine/train/summary.h"

#include <cmath>

#include "engine/obs/device_memory.h"

namespace ppu {

StateBytes measured_state(const Transformer& model, const InnerOptimizer& inner, const OuterOptimizer* outer,
                          int64_t grad_bytes) {
  StateBytes s;
  for (const auto& w : model.weights()) s.weights += w.nbytes();
  for (const auto& m : model.masters()) s.weights += m.nbytes();  // bf16: fp32 masters of trainable slices
  s.gradients = grad_bytes;
  s.inner_optimizer = inner.state_bytes();
  if (outer) {
    s.outer_optimizer = outer->momentum_bytes();
    s.offloaded = outer->global_bytes();
  }
  return s;
}

StateBytes full_training_state(const StateBytes& measured, const Transformer& model, const SlicePlan& plan,
                               int64_t grad_bytes) {
  StateBytes s = measured;
  const bool bf16 = model.mixed_precision();
  const double total = plan.total_parameters() * 4.0, trainable = plan.trainable_parameters() * 4.0;
  if (bf16) s.weights += total - trainable;  // every parameter would have an fp32 master
  s.gradients = grad_bytes > 0 ? (bf16 ? total / 2 : total) : 0;
  s.inner_optimizer = trainable > 0 ? s.inner_optimizer * total / trainable : 0;
  return s;
}

double floor_perplexity(const data::TokenDataset& dataset) {
  return dataset.entropy_rate_nats ? std::exp(*dataset.entropy_rate_nats) : 0;
}

RunSummary summarise(const SummarySources& run, const RunEnd& end, std::vector<float>* final_params) {
  const auto& c = run.config;
  const auto& p = run.progress;
  const StateBytes s = measured_state(run.model, run.inner, run.ddp ? nullptr : &run.outer, end.grad_bytes);
  const StateBytes full = full_training_state(s, run.model, run.plan, end.grad_bytes);
  auto bytes = [](const StateBytes& b) {
    return StateBytesSummary{b.weights, b.gradients, b.inner_optimizer, b.outer_optimizer, b.offloaded, b.total()};
  };
  RunSummary r;
  r.rank = run.rendezvous.rank;
  r.world_size = run.rendezvous.world_size;
  r.method = method_name(c.method);
  r.slicing = {slice_mode_name(run.plan.mode()), run.plan.slices(), choice_name(run.plan.jacobian())};
  r.steps = p.step;
  r.final_loss = end.final_loss;
  r.eval_loss = end.eval_loss;
  r.eval_perplexity = std::exp(end.eval_loss);
  if (floor_perplexity(run.dataset) > 0) r.eval_perplexity_floor = floor_perplexity(run.dataset);
  r.tokens = p.tokens;
  r.flops_executed = p.flops;
  r.flops_full_backward = p.flops_full;
  r.flops_saved_fraction = p.flops_full > 0 ? 1 - p.flops / p.flops_full : 0;
  r.state_bytes = bytes(s);
  r.state_bytes_full_training = bytes(full);
  r.trainable_params = run.plan.trainable_parameters();
  r.total_params = run.plan.total_parameters();
  r.outer_rounds = p.rounds;
  r.last_checkpoint_round = p.last_checkpoint_round;
  r.bytes_sent = p.bytes_sent;
  r.bytes_received = p.bytes_received;
  r.bytes_allreduced = p.bytes_sent;
  r.network_wait_seconds = p.network_wait_seconds;
  r.sync_seconds = p.sync_seconds;
  r.param_checksum = end.param_checksum;
  r.seconds = end.seconds;
  r.eval_seconds = end.eval_seconds;
  r.eval_batches_evaluated = end.eval_batches_evaluated;
  r.eval_tokens =
      run.dataset.eval_tokens(c.inner.batch_size, c.model.seq_len, static_cast<uint64_t>(c.train.eval_batches));
  r.val_tokens = run.dataset.val.size();
  r.data_sampling = choice_name(c.data.sampling);
  r.eval_parameters = "global";
  r.final_sync = choice_name(run.ddp ? FinalSync::None : c.outer.final_sync);
  r.step_seconds = end.step_seconds;
  r.inner_step_seconds_median = end.inner_step_seconds_median;
  r.inner_step_phases_median = end.inner_step_phases_median;
  r.recovery = run.recovery;
  r.recovery.live_ranks = run.collectives.world_size();
  r.recovery.min_slice_coverage = run.outer.min_coverage();
  if (run.device.is_cuda()) {
    // Only on CUDA, so CPU summaries keep their keys; peak is since the process started.
    const auto m = cuda_memory(run.device.index());
    r.device = run.device.str();
    r.cuda_memory_bytes = CudaMemorySummary{m.allocated, m.reserved, m.peak};
  }
  if (final_params) {
    final_params->clear();
    for (const auto& g : end.global) {
      const auto flat = g.detach().to(torch::kCPU, torch::kFloat32).contiguous().view({-1});
      final_params->insert(final_params->end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
    }
  }
  return r;
}

}  // namespace ppu
