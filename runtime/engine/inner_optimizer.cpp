#include "engine/inner_optimizer.h"

#include "core/lr_schedule.h"

namespace ppu {

InnerOptimizer::InnerOptimizer(const InnerConfig& config, int64_t total_steps, const std::vector<torch::Tensor>& trainable)
    : config_(config), total_steps_(total_steps), params_(trainable) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : trainable) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  if (config.optimizer == "sgd") {
    auto options = [&](double wd) { return std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(config.lr).weight_decay(wd)); };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(config.weight_decay));
    groups.emplace_back(no_decay, options(0.0));
    optimizer_ = std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(config.lr));
  } else {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(config.lr)
                                                              .betas({config.beta1, config.beta2})
                                                              .eps(config.eps)
                                                              .weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(config.weight_decay));
    groups.emplace_back(no_decay, options(0.0));
    optimizer_ = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(config.lr));
  }
}

double InnerOptimizer::step(int64_t step) {
  if (config_.grad_clip > 0) torch::nn::utils::clip_grad_norm_(params_, config_.grad_clip);
  const double lr = inner_learning_rate(config_, step, total_steps_);
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  optimizer_->step();
  zero_grad();
  return lr;
}

void InnerOptimizer::zero_grad() {
  // Drop the buffers rather than zero them: between steps no gradient memory is held.
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

int64_t InnerOptimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& [key, state] : optimizer_->state()) {
    if (auto* adam = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
      bytes += adam->exp_avg().nbytes() + adam->exp_avg_sq().nbytes();
      if (adam->max_exp_avg_sq().defined()) bytes += adam->max_exp_avg_sq().nbytes();
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      if (sgd->momentum_buffer().defined()) bytes += sgd->momentum_buffer().nbytes();
    }
  }
  return bytes;
}

void InnerOptimizer::save(torch::serialize::OutputArchive& archive) const { optimizer_->save(archive); }
void InnerOptimizer::load(torch::serialize::InputArchive& archive) { optimizer_->load(archive); }

}  // namespace ppu
