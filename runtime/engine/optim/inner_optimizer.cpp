#include "engine/optim/inner_optimizer.h"

#include <cmath>
#include <string>
#include <type_traits>

#include <torch/version.h>

#include "common/fnv1a.h"
#include "core/lr_schedule.h"
#include "engine/comm/collectives.h"
#include "engine/optim/fused_adamw.h"

namespace ppu {

#if TORCH_VERSION_MAJOR >= 2
namespace {
template <class Key>
Key optimizer_state_key(c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) return c10::str(impl);
  else return impl;
}
}  // namespace
#endif

InnerOptimizer::InnerOptimizer(const InnerConfig& config, int64_t total_steps,
                               const std::vector<torch::Tensor>& trainable, const std::vector<bool>& decay_mask,
                               const std::vector<torch::Tensor>& masters)
    : config_(config), total_steps_(total_steps), params_(masters.empty() ? trainable : masters) {
  TORCH_CHECK(decay_mask.empty() || decay_mask.size() == trainable.size(), "InnerOptimizer: one decay flag per tensor");
  TORCH_CHECK(masters.empty() || masters.size() == trainable.size(), "InnerOptimizer: one master per trainable tensor");
  if (!masters.empty()) leaves_ = trainable;
  for (size_t i = 0; i < leaves_.size(); ++i) master_index_[params_[i].unsafeGetTensorImpl()] = static_cast<int64_t>(i);
  std::vector<torch::Tensor> decay, no_decay;
  for (size_t i = 0; i < params_.size(); ++i) {
    TORCH_CHECK(
        leaves_.empty() || (params_[i].sizes() == leaves_[i].sizes() && params_[i].scalar_type() == torch::kFloat32),
        "InnerOptimizer: master ", i, " must be fp32 of its tensor's shape");
    const bool decays = decay_mask.empty() ? params_[i].dim() >= 2 : decay_mask[i];
    (decays ? decay : no_decay).push_back(params_[i]);
  }
  if (config.optimizer == InnerOptimizerKind::Sgd) {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(config.lr).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!decay.empty()) groups.emplace_back(decay, options(config.weight_decay));
    if (!no_decay.empty()) groups.emplace_back(no_decay, options(0.0));
    optimizer_ = std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(config.lr));
  } else {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(config.lr).betas({config.beta1, config.beta2}).eps(config.eps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!decay.empty()) groups.emplace_back(decay, options(config.weight_decay));
    if (!no_decay.empty()) groups.emplace_back(no_decay, options(0.0));
    optimizer_ = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(config.lr));
  }
}

double InnerOptimizer::step(int64_t step) {
  const double lr = inner_learning_rate(config_, step, total_steps_);
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(optimizer_.get());
  if (!leaves_.empty()) {
    // Mixed precision: clip by the norm of the bf16 gradients (accumulated in fp32), then
    // give each master its leaf's gradient as fp32 just before its update.
    grad_scale_ = 1.0;
    if (config_.grad_clip > 0) {
      double sq = 0;
      for (const auto& l : leaves_)
        if (l.grad().defined()) sq += std::pow(l.grad().to(torch::kFloat32).norm().item<double>(), 2);
      const double coef = config_.grad_clip / (std::sqrt(sq) + 1e-6);  // as clip_grad_norm_
      if (coef < 1) grad_scale_ = coef;
    }
    if (adamw) {
      fused_step(*adamw);
    } else {
      for (size_t i = 0; i < leaves_.size(); ++i) master_grad(i);
      optimizer_->step();
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < leaves_.size(); ++i) leaves_[i].copy_(params_[i]);
    }
    zero_grad();
    return lr;
  }
  if (adamw) {
    // The clipping factor goes into the AdamW pass instead of a pass of its own over every gradient.
    clip_scale_ = config_.grad_clip > 0 ? clip_factor(params_, config_.grad_clip) : 1.0f;
    fused_step(*adamw);
  } else {
    if (config_.grad_clip > 0) torch::nn::utils::clip_grad_norm_(params_, config_.grad_clip);
    optimizer_->step();
  }
  zero_grad();
  return lr;
}

// clip_grad_norm_'s factor, computed as it does (the 2-norm of the per-tensor norms, then
// max_norm / (norm + 1e-6) clamped to at most 1, in the gradients' dtype), without scaling the
// gradients: min(1, that) is what its mul_ multiplies every gradient element by.
float InnerOptimizer::clip_factor(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().norm(2));
  if (norms.empty()) return 1.0f;
  const auto total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
  return torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0).item<float>();
}

// Master i's gradient: leaf i's bf16 gradient as fp32, times the clipping factor.
bool InnerOptimizer::master_grad(size_t i) {
  const auto& g = leaves_[i].grad();
  if (!g.defined()) return false;
  auto g32 = g.to(torch::kFloat32, false, /*copy=*/true).contiguous();
  if (grad_scale_ != 1.0) g32.mul_(grad_scale_);
  params_[i].mutable_grad() = g32;
  return true;
}

// torch::optim::AdamW's update, one pass per parameter (engine/optim/fused_adamw.h), on the optimiser's
// own state objects; a parameter whose layout the fused loop does not take goes through the
// same arithmetic as LibTorch's tensor operations.
void InnerOptimizer::fused_step(torch::optim::AdamW& adamw) {
  torch::NoGradGuard no_grad;
  auto& states = adamw.state();
  for (auto& group : adamw.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!o.amsgrad(), "InnerOptimizer: amsgrad is not used");
    for (auto& p : group.params()) {
      // Mixed precision: one parameter's fp32 gradient at a time, dropped after its update.
      int64_t leaf = -1;
      if (!leaves_.empty()) {
        leaf = master_index_.at(p.unsafeGetTensorImpl());
        if (!master_grad(static_cast<size_t>(leaf))) continue;
      }
      if (!p.grad().defined()) continue;
#if TORCH_VERSION_MAJOR >= 2  // the state map's key: a TensorImpl* in recent 2.x, its address as a string before
      const auto key = optimizer_state_key<std::decay_t<decltype(states)>::key_type>(p.unsafeGetTensorImpl());
#else
      const auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
#endif
      auto it = states.find(key);
      if (it == states.end()) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
        it = states.emplace(key, std::move(fresh)).first;
      }
      auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
      st.step(st.step() + 1);
      auto grad = p.grad().contiguous();
      auto m = st.exp_avg(), v = st.exp_avg_sq();
      // Mixed precision: master_grad already applied the clipping factor.
      const float scale = leaves_.empty() ? clip_scale_ : 1.0f;
      const AdamWHyper h{o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(), st.step(),
                         scale};
      if (!fused_adamw_step(p, grad, m, v, h) && !fused_adamw_step_cuda(p, grad, m, v, h)) {
        if (scale != 1.0f) grad = grad * scale;
        // Same update as torch::optim::AdamW::step, as tensor operations.
        const double bc1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
        const double bc2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
        if (h.weight_decay != 0) p.mul_(1 - h.lr * h.weight_decay);
        m.mul_(h.beta1).add_(grad, 1 - h.beta1);
        v.mul_(h.beta2).addcmul_(grad, grad, 1 - h.beta2);
        p.addcdiv_(m, (v.sqrt() / std::sqrt(bc2)).add_(h.eps), -h.lr / bc1);
      }
      if (leaf >= 0) {  // the bf16 working weight is the rounded master
        leaves_[leaf].copy_(p);
        p.mutable_grad() = torch::Tensor();
      }
    }
  }
}

void InnerOptimizer::zero_grad() {
  // Drop the buffers rather than zero them: between steps no gradient memory is held.
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  for (auto& p : leaves_) p.mutable_grad() = torch::Tensor();
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

namespace {

// An optimiser of `adam`'s kind over `groups` with `defaults` (AdamWOptions or SGDOptions).
std::unique_ptr<torch::optim::Optimizer> same_kind(bool adam,
                                                   const std::vector<torch::optim::OptimizerParamGroup>& groups,
                                                   const torch::optim::OptimizerOptions& defaults) {
  if (adam)
    return std::make_unique<torch::optim::AdamW>(groups, static_cast<const torch::optim::AdamWOptions&>(defaults));
  return std::make_unique<torch::optim::SGD>(groups, static_cast<const torch::optim::SGDOptions&>(defaults));
}

}  // namespace

ArchiveWriter InnerOptimizer::writer(TensorCopy copy) const {
  if (copy == TensorCopy::Shared) return [this](torch::serialize::OutputArchive& a) { optimizer_->save(a); };
  // LibTorch's serialiser writes the state it finds by reference, keyed by the parameters: a
  // second optimiser over the same groups, holding copies of the state, writes the same archive
  // with the copies in it. Only the copies are made here; that optimiser is built by the writer.
  using State = std::decay_t<decltype(optimizer_->state())>;
  struct Snapshot {
    bool adam;
    std::vector<torch::optim::OptimizerParamGroup> groups;
    std::unique_ptr<torch::optim::OptimizerOptions> defaults;
    State state;
  };
  const bool adam = dynamic_cast<torch::optim::AdamW*>(optimizer_.get()) != nullptr;
  auto snapshot =
      std::make_shared<Snapshot>(Snapshot{adam, optimizer_->param_groups(), optimizer_->defaults().clone(), State{}});
  for (const auto& [key, state] : optimizer_->state()) {
    if (adam) {
      const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
      auto c = std::make_unique<torch::optim::AdamWParamState>();
      c->step(s.step());
      c->exp_avg(as_saved(s.exp_avg(), copy));
      c->exp_avg_sq(as_saved(s.exp_avg_sq(), copy));
      if (s.max_exp_avg_sq().defined()) c->max_exp_avg_sq(as_saved(s.max_exp_avg_sq(), copy));
      snapshot->state[key] = std::move(c);
    } else {
      auto c = std::make_unique<torch::optim::SGDParamState>();
      c->momentum_buffer(as_saved(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer(), copy));
      snapshot->state[key] = std::move(c);
    }
  }
  return [snapshot](torch::serialize::OutputArchive& a) {
    auto optimizer = same_kind(snapshot->adam, snapshot->groups, *snapshot->defaults);
    for (const auto& [key, state] : snapshot->state) optimizer->state()[key] = state->clone();  // the copies, shared
    optimizer->save(a);
  };
}
void InnerOptimizer::load(torch::serialize::InputArchive& archive) { optimizer_->load(archive); }

ArchiveWriter InnerOptimizer::fresh_writer() const {
  // A second optimiser of the same kind over the same groups has no state until it steps.
  const bool adam = dynamic_cast<torch::optim::AdamW*>(optimizer_.get()) != nullptr;
  std::shared_ptr<const torch::optim::OptimizerOptions> defaults;
  if (adam) defaults = std::make_shared<torch::optim::AdamWOptions>(config_.lr);
  else defaults = std::make_shared<torch::optim::SGDOptions>(config_.lr);
  auto groups = std::make_shared<const std::vector<torch::optim::OptimizerParamGroup>>(optimizer_->param_groups());
  return [adam, groups, defaults](torch::serialize::OutputArchive& a) { same_kind(adam, *groups, *defaults)->save(a); };
}

torch::optim::AdamWParamState* InnerOptimizer::adamw_state(size_t i) const {
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(optimizer_.get());
  if (!adamw) return nullptr;
  auto& states = adamw->state();
#if TORCH_VERSION_MAJOR >= 2
  const auto key = optimizer_state_key<std::decay_t<decltype(states)>::key_type>(params_[i].unsafeGetTensorImpl());
#else
  const auto key = c10::guts::to_string(params_[i].unsafeGetTensorImpl());
#endif
  const auto it = states.find(key);
  return it == states.end() ? nullptr : static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

void InnerOptimizer::share_state(Collectives& collectives, int root, bool adopt) {
  torch::NoGradGuard no_grad;
  const bool adam = dynamic_cast<torch::optim::AdamW*>(optimizer_.get()) != nullptr;
  // Root's sizes: its tensor count and their elements in all (each has two moments).
  int64_t elements = 0;
  for (const auto& p : params_) elements += p.numel();
  auto sizes = torch::tensor({adam ? static_cast<int64_t>(params_.size()) : 0, adam ? elements : 0}, torch::kInt64);
  collectives.broadcast(sizes, root);
  const auto count = sizes[0].item<int64_t>();
  const auto total = sizes[1].item<int64_t>();
  if (count == 0) return;
  const bool sending = collectives.rank() == root;
  auto steps = torch::zeros({count}, torch::kInt64);
  auto moments = torch::zeros({2 * total}, torch::kFloat32);
  if (sending) {
    int64_t at = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      const int64_t n = params_[i].numel();
      if (const auto* st = adamw_state(i)) {
        steps[static_cast<int64_t>(i)] = st->step();
        moments.narrow(0, at, n).copy_(st->exp_avg().reshape({-1}));
        moments.narrow(0, total + at, n).copy_(st->exp_avg_sq().reshape({-1}));
      }
      at += n;
    }
  }
  collectives.broadcast(steps, root);
  collectives.broadcast(moments, root);
  if (!adopt || sending) return;
  TORCH_CHECK(adam && count == static_cast<int64_t>(params_.size()) && total == elements,
              "InnerOptimizer::share_state: the source's state has ", count, " tensors of ", total,
              " elements, this rank's ", params_.size(), " of ", elements, " (not a co-owner of its slice)");
  auto& states = dynamic_cast<torch::optim::AdamW&>(*optimizer_).state();
  int64_t at = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    const int64_t n = p.numel();
#if TORCH_VERSION_MAJOR >= 2
    const auto key = optimizer_state_key<std::decay_t<decltype(states)>::key_type>(p.unsafeGetTensorImpl());
#else
    const auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
#endif
    const auto step = steps[static_cast<int64_t>(i)].item<int64_t>();
    states.erase(key);
    if (step > 0) {
      auto st = std::make_unique<torch::optim::AdamWParamState>();
      auto like = [&](int64_t from) {
        return moments.narrow(0, from, n).view(p.sizes()).to(p.device(), p.scalar_type(), false, /*copy=*/true);
      };
      st->exp_avg(like(at));
      st->exp_avg_sq(like(total + at));
      st->step(step);
      states.emplace(key, std::move(st));
    }
    at += n;
  }
}

uint64_t InnerOptimizer::state_digest() const {
  uint64_t h = kFnv1a64Offset;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto* st = adamw_state(i);
    const int64_t step = st ? st->step() : 0;
    h = fnv1a64(&step, sizeof step, h);
    if (!st) continue;
    for (const auto& t : {st->exp_avg(), st->exp_avg_sq()}) {
      const auto host = t.to(torch::kCPU).contiguous();
      h = fnv1a64(host.data_ptr(), host.nbytes(), h);
    }
  }
  return h;
}

}  // namespace ppu
