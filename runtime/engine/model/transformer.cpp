#include "engine/model/transformer.h"

#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/model_constants.h"
#include "data/counter_rng.h"
#include "engine/model/chunked_cross_entropy.h"
#include "engine/model/cpu_attention.h"
#include "engine/model/region_view.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

namespace F = torch::nn::functional;

Transformer::Transformer(const ModelSpec& spec, SlicePlan plan, uint64_t seed, torch::Device device,
                         torch::ScalarType dtype)
    : spec_(spec), plan_(std::move(plan)), layout_(parameter_layout(spec)), dtype_(dtype), seed_(seed) {
  TORCH_CHECK(dtype == torch::kFloat32 || dtype == torch::kBFloat16, "Transformer: dtype must be fp32 or bf16");
  const bool mixed = dtype == torch::kBFloat16;
  // One generator, consumed in layout order, so every rank initialises identically.
  auto gen = at::detail::createCPUGenerator(seed);
  const double residual_std = 0.02 / std::sqrt(2.0 * spec.layers);
  for (size_t i = 0; i < layout_.size(); ++i) {
    const auto& p = layout_[i];
    torch::Tensor t;
    if (p.role == ParamRole::Norm) {
      const bool is_bias = p.name.size() > 5 && p.name.compare(p.name.size() - 5, 5, ".bias") == 0;
      t = is_bias ? torch::zeros(p.shape) : torch::ones(p.shape);
    } else {
      const double std = (p.role == ParamRole::AttnOut || p.role == ParamRole::MlpDown) ? residual_std : 0.02;
      t = at::normal(0.0, std, p.shape, gen);
    }
    t = t.to(device, dtype);  // bf16: the fp32 initial values are rounded and dropped
    const auto& sl = plan_.params()[i];
    slices_.push_back(make_weight_slice(t, sl));
    if (mixed)  // the master holds the trainable range only, as fp32 of the rounded values
      masters_.push_back(slices_.back()
                             .trainable.detach()
                             .to(torch::kFloat32, false, /*copy=*/true)
                             .contiguous()
                             .requires_grad_(true));
    weights_.push_back(slices_.back().full);
    trainable_.push_back(slices_.back().trainable);
  }
  for (int l = 0; l < spec.layers; ++l) stack_qkv(l);
  init_tables(device);
  begin_step(0);
}

void Transformer::stack_qkv(int l) {
  const auto q = static_cast<size_t>(block_param_index(l, kWq));
  if (!stackable(slices_[q]) || !stackable(slices_[q + 1]) || !stackable(slices_[q + 2])) return;
  torch::NoGradGuard no_grad;
  const auto stacked = torch::cat({weights_[q], weights_[q + 1], weights_[q + 2]}, 0);
  const int64_t d = weights_[q].size(0);
  for (size_t j = 0; j < 3; ++j) {
    // Each parameter becomes its block of rows; its trainable leaf a view of that (the master,
    // bf16 only, is a separate tensor and keeps its values).
    const auto& old = slices_[q + j];
    slices_[q + j] = make_weight_slice(stacked.narrow(0, static_cast<int64_t>(j) * d, d).detach(), old);
    weights_[q + j] = slices_[q + j].full;
    trainable_[q + j] = slices_[q + j].trainable;
  }
  if (qkv_.empty()) qkv_.resize(spec_.layers);
  qkv_[l] = stacked;
}

Transformer::Transformer(const ModelSpec& spec, const std::vector<torch::Tensor>& weights, torch::Device device)
    : spec_(spec), plan_(spec, SliceMode::None, 1, 1, 0), layout_(parameter_layout(spec)) {
  TORCH_CHECK(weights.size() == layout_.size(), "Transformer view: expected ", layout_.size(), " tensors, got ",
              weights.size());
  dtype_ = weights.front().scalar_type();
  for (size_t i = 0; i < weights.size(); ++i) {
    TORCH_CHECK(weights[i].sizes() == c10::IntArrayRef(layout_[i].shape), "Transformer view: ", layout_[i].name,
                " has shape ", weights[i].sizes());
    const auto t = weights[i].detach().to(device);  // the same tensor when already there
    WeightSlice w;
    w.full = w.trainable = t;  // no requires_grad: evaluation only
    slices_.push_back(w);
    weights_.push_back(t);
    trainable_.push_back(t);
  }
  init_tables(device);
}

void Transformer::begin_step(int64_t step) {
  if (plan_.jacobian() != Jacobian::SliceRandom || plan_.slices() < 2) return;
  random_slice_.assign(spec_.layers, -1);
  const int n = plan_.slices(), own = plan_.slice_index();
  for (int l = 0; l < spec_.layers; ++l) {
    // g ~ Unif({0..N-1} \ {own}), a pure function of (seed, rank, step, layer): resumable.
    uint64_t h = data::hash_combine(data::mix64(seed_ ^ 0x6a61636f6269616eULL), static_cast<uint64_t>(plan_.rank()));
    h = data::hash_combine(data::hash_combine(h, static_cast<uint64_t>(step)), static_cast<uint64_t>(l));
    const int pick = static_cast<int>(data::uniform_below(h, static_cast<uint64_t>(n - 1)));
    random_slice_[l] = pick >= own ? pick + 1 : pick;
  }
}

int Transformer::jacobian_random_slice(int layer) const { return random_slice_.empty() ? -1 : random_slice_.at(layer); }

void Transformer::init_tables(torch::Device device) {
  const auto& spec = spec_;
  // Rotary embeddings: pairs (i, i + hd/2) rotate by pos * kRopeBase^(-2i/hd).
  const int64_t hd = spec.head_dim(), half = hd / 2;
  auto inv_freq = torch::pow(kRopeBase, -torch::arange(0, half, torch::kFloat64) * 2.0 / hd);
  auto pos = torch::arange(0, spec.seq_len, torch::kFloat64);
  auto angles = torch::outer(pos, inv_freq);           // [S, hd/2]
  auto full_angles = torch::cat({angles, angles}, 1);  // [S, hd]
  // Tables in the compute dtype (an fp32 table would promote bf16 activations to fp32).
  rope_cos_ = full_angles.cos().to(dtype_).to(device);
  rope_sin_ = full_angles.sin().to(dtype_).to(device);
  // Queries take the 1/sqrt(hd) of the scores through their rotation tables: [S, hd] multiplies
  // that are done anyway, instead of a pass over every [B, h, S, S] score.
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  rope_cos_q_ = (full_angles.cos() * scale).to(dtype_).to(device);
  rope_sin_q_ = (full_angles.sin() * scale).to(dtype_).to(device);
  // Additive causal mask, added by the scores' GEMM itself (baddbmm with beta = 1).
  causal_bias_ =
      torch::full({spec.seq_len, spec.seq_len}, -std::numeric_limits<float>::infinity()).triu(1).to(device, dtype_);
  fused_attention_ = device.is_cuda();
}

bool Transformer::fused_attention() const {
#if TORCH_VERSION_MAJOR >= 2
  return fused_attention_;
#else
  return false;  // LibTorch 1.x has no scaled_dot_product_attention
#endif
}

torch::Tensor Transformer::rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t last = x.dim() - 1, half = x.size(last) / 2;
  auto x1 = x.narrow(last, 0, half), x2 = x.narrow(last, half, half);
  auto rotated = torch::cat({-x2, x1}, last);
  return x * cos + rotated * sin;
}

torch::Tensor Transformer::project_qkv(const torch::Tensor& x, int l) const {
  if (!qkv_.empty() && qkv_[l].defined())  // one GEMM for Q, K and V
    return stacked_partial_linear(x, qkv_[l], s(l, kWq), s(l, kWk), s(l, kWv));
  return torch::cat({partial_linear(x, s(l, kWq)), partial_linear(x, s(l, kWk)), partial_linear(x, s(l, kWv))}, -1);
}

torch::Tensor Transformer::attention(const torch::Tensor& x, int l) const {
  const int64_t B = x.size(0), S = x.size(1), h = spec_.heads, hd = spec_.head_dim();
  const auto qkv = project_qkv(x, l);  // [B, S, 3·h·hd]
#if TORCH_VERSION_MAJOR >= 2
  if (fused_attention()) {
    // Flash / cuDNN kernels on CUDA: the [S, S] scores are never materialised. They work in
    // [B, S, h, hd] memory order, which is qkv's own: the rotary tables apply in that order
    // (their outputs dense [B, S, h, hd]), and q, k, v reach SDPA as [B, h, S, hd] views of it,
    // so no layout copy is made in the forward, none by the kernels, and none in the backward
    // (unbind's backward stacks the three gradients straight into qkv's layout; the output's
    // transpose is a view of the kernel's [B, S, h, hd] result). A profile of the step found
    // the heads-major copies (and the kernels' own) costing 8 % of it on an H200 (docs/GPU.md).
    const auto parts = qkv.view({B, S, 3, h, hd}).unbind(2);
    const auto cos = rope_cos_.narrow(0, 0, S).unsqueeze(1),
               sin = rope_sin_.narrow(0, 0, S).unsqueeze(1);  // [S, 1, hd]
    auto q = rotate(parts[0], cos, sin).transpose(1, 2);
    auto k = rotate(parts[1], cos, sin).transpose(1, 2);
    auto v = parts[2].transpose(1, 2);
    auto out =
        at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true).transpose(1, 2).reshape({B, S, h * hd});
    return partial_linear(out, s(l, kWo));
  }
#endif
  if (cpu_attention_supports(qkv)) {  // rotary, scores, softmax, PV and layouts in one pass per head
    auto out = causal_self_attention_cpu(qkv, h, {rope_cos_q_, rope_sin_q_, rope_cos_, rope_sin_});
    return partial_linear(out, s(l, kWo));
  }
  // Heads-major and contiguous, [B, h, S, hd], in one copy (unbind's backward stacks the three
  // gradients back in one copy too): the batched matmuls below then run on B*h contiguous
  // matrices. The queries carry 1/sqrt(hd) through their tables.
  auto parts = qkv.view({B, S, 3, h, hd}).permute({2, 0, 3, 1, 4}).contiguous().unbind(0);
  auto q = rotate(parts[0], rope_cos_q_.narrow(0, 0, S), rope_sin_q_.narrow(0, 0, S));
  auto k = rotate(parts[1], rope_cos_.narrow(0, 0, S), rope_sin_.narrow(0, 0, S));
  const auto& v = parts[2];
  // scores = causal_bias + q k^T in one GEMM per head, then softmax; [B*h, S, S].
  auto scores = torch::baddbmm(causal_bias_.narrow(0, 0, S).narrow(1, 0, S), q.view({B * h, S, hd}),
                               k.view({B * h, S, hd}).transpose(1, 2));
  auto probs = torch::softmax(scores, -1);
  auto out = torch::bmm(probs, v.view({B * h, S, hd})).view({B, h, S, hd}).transpose(1, 2).reshape({B, S, h * hd});
  return partial_linear(out, s(l, kWo));
}

torch::Tensor Transformer::mlp(const torch::Tensor& x, int l, bool product) const {
  const WeightSlice* up = &s(l, kMlpUp);
  const WeightSlice* down = &s(l, kMlpDown);
  WeightSlice up_kept, down_kept;
  if (plan_.jacobian() != Jacobian::Full && up->dim >= 0) {
    // Appendix D: only slice k (and, for slice+random, this step's g) carries dL/dx. Both
    // projections keep the same hidden features: the down-projection's input gradient is zero
    // elsewhere, so the up-projection computes its products for those features only.
    const int64_t F = spec_.mlp_hidden(), N = plan_.slices();
    std::vector<int> kept{plan_.slice_index()};
    if (jacobian_random_slice(l) >= 0) kept.push_back(jacobian_random_slice(l));
    std::sort(kept.begin(), kept.end());
    std::vector<int64_t> ranges;
    for (int n : kept) ranges.insert(ranges.end(), {n * F / N, (n + 1) * F / N});
    up_kept = *up;
    down_kept = *down;
    up_kept.input_keep = down_kept.input_keep = ranges;
    up = &up_kept;
    down = &down_kept;
  }
  auto hidden = partial_linear(x, *up);
  hidden = spec_.activation == Activation::Gelu ? torch::gelu(hidden) : torch::relu(hidden);
  return product ? partial_linear(hidden, *down) : partial_linear_backward_only(hidden, *down);
}

torch::Tensor Transformer::block(const torch::Tensor& x, int l) const {
  const auto [h, m] = block_parts(x, l, true);
  return h + m;
}

std::pair<torch::Tensor, torch::Tensor> Transformer::block_for_backward(const torch::Tensor& x, int l) const {
  return block_parts(x, l, false);
}

std::pair<torch::Tensor, torch::Tensor> Transformer::block_parts(const torch::Tensor& x, int l, bool product) const {
  const std::vector<int64_t> d{spec_.d_model};
  auto h = x + attention(torch::layer_norm(x, d, w(l, kLn1Weight), w(l, kLn1Bias), kLayerNormEps), l);
  auto m = mlp(torch::layer_norm(h, d, w(l, kLn2Weight), w(l, kLn2Bias), kLayerNormEps), l, product);
  return {h, m};
}

namespace {

// Runs `block` without keeping its activations; the backward runs it again with autograd on
// and back-propagates through it (re-entrant, as torch.utils.checkpoint does). The block's
// weight gradients accumulate into the trainable leaves during that inner backward.
// The model travels to the backward in the context's saved data (IValues only) as a capsule.
struct ModelRef : torch::CustomClassHolder {
  explicit ModelRef(const Transformer* m) : model(m) {}
  const Transformer* model;
};

struct RecomputedBlock : public torch::autograd::Function<RecomputedBlock> {
  // `model` must outlive the backward (it owns the weights the graph refers to anyway).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const Transformer* model,
                               int64_t layer) {
    ctx->save_for_backward({x});
    ctx->saved_data["model"] = c10::IValue::make_capsule(c10::make_intrusive<ModelRef>(model));
    ctx->saved_data["layer"] = layer;
    torch::NoGradGuard no_grad;
    return model->block(x, static_cast<int>(layer));
  }
  // y = h + m, so dL/dh (besides m's path) and dL/dm are both dL/dy: the two summands are the
  // roots, and the block's last product, whose output nothing reads, is not recomputed.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    const auto* model = static_cast<const ModelRef*>(ctx->saved_data["model"].toCapsule().get())->model;
    std::pair<torch::Tensor, torch::Tensor> roots;
    {
      torch::AutoGradMode enable(true);
      roots = model->block_for_backward(x, static_cast<int>(ctx->saved_data["layer"].toInt()));
    }
    torch::autograd::backward({roots.first, roots.second}, {grad_out[0], grad_out[0]});
    return {x.grad(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor Transformer::loss(const torch::Tensor& tokens) const {
  const int64_t S = tokens.size(1) - 1;
  auto inputs = tokens.narrow(1, 0, S);
  auto targets = tokens.narrow(1, 1, S);
  const auto& emb = weights_.front();
  auto x = F::embedding(inputs, emb);
  for (int l = 0; l < spec_.layers; ++l)
    x = recompute_ && torch::GradMode::is_enabled() ? RecomputedBlock::apply(x, this, int64_t{l}) : block(x, l);
  const size_t n = weights_.size();
  x = torch::layer_norm(x, {spec_.d_model}, weights_[n - 2], weights_[n - 1], kLayerNormEps);
  if (loss_chunk_ > 0)  // tied output head, chunked: the [B*S, vocab] fp32 logits never exist
    return chunked_cross_entropy(x.reshape({-1, spec_.d_model}), emb, targets.reshape({-1}), loss_chunk_);
  auto logits = torch::matmul(x, emb.t());  // tied output head
  if (logits.scalar_type() != torch::kFloat32) logits = logits.to(torch::kFloat32);
  return F::cross_entropy(logits.reshape({-1, spec_.vocab}), targets.reshape({-1}));
}

std::vector<torch::Tensor> Transformer::fp32_weights() const {
  if (masters_.empty()) return weights_;
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < weights_.size(); ++i) out.push_back(load_fp32(i, TensorRegion{}));
  return out;
}

std::optional<Transformer::MasterOverlap> Transformer::master_overlap(size_t i, const TensorRegion& region) const {
  const auto& sl = slices_[i];
  if (sl.whole()) {  // whole tensor trainable: the master is the whole tensor
    const TensorRegion all{};
    return MasterOverlap{all, region};
  }
  TORCH_CHECK(region.whole() || region.dim == sl.dim, "Transformer: region and slice along different dimensions");
  const auto o = overlap(region, sl, weights_[i].size(sl.dim));
  if (!o) return std::nullopt;
  return MasterOverlap{{sl.dim, o->in_region, o->in_region + o->length}, {sl.dim, o->in_part, o->in_part + o->length}};
}

torch::Tensor Transformer::load_fp32(size_t i, const TensorRegion& region) const {
  const auto view = region_view(weights_[i], region);
  if (masters_.empty()) return view.detach().to(torch::kFloat32);
  if (slices_[i].whole() && region.whole()) return masters_[i].detach();  // the master is the tensor
  auto out = view.detach().to(torch::kFloat32, false, /*copy=*/true);
  if (const auto o = master_overlap(i, region))
    region_view(out, o->in_region).copy_(region_view(masters_[i].detach(), o->in_master));
  return out;
}

void Transformer::store_fp32(size_t i, const TensorRegion& region, const torch::Tensor& values) {
  torch::NoGradGuard no_grad;
  region_view(weights_[i], region).copy_(values);  // bf16: round to nearest even
  if (masters_.empty()) return;
  const auto o = master_overlap(i, region);
  if (!o) return;
  const auto v = values.to(masters_[i].device());
  region_view(masters_[i], o->in_master).copy_(region_view(v, o->in_region));
}

ArchiveWriter Transformer::writer(TensorCopy copy) const {
  SavedTensors saved(copy);
  for (size_t i = 0; i < weights_.size(); ++i) {
    // A view (W_q, W_k, W_v share one buffer) is cloned: an archive stores whole storages.
    auto w = weights_[i].detach().to(torch::kCPU);
    if (w.storage().nbytes() != w.nbytes()) saved.add_own(checkpoint_key::model_weight(layout_[i].name), w.clone());
    else saved.add(checkpoint_key::model_weight(layout_[i].name), w);
  }
  for (size_t i = 0; i < masters_.size(); ++i)
    saved.add(checkpoint_key::model_master(layout_[i].name), masters_[i].detach().to(torch::kCPU));
  return std::move(saved).writer();
}

void Transformer::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < weights_.size(); ++i) {
    torch::Tensor w;
    if (!archive.try_read(checkpoint_key::model_weight(layout_[i].name), w))
      throw CheckpointError("it has no parameter " + layout_[i].name + " (written for another model?)");
    if (w.sizes() != weights_[i].sizes())
      throw CheckpointError("it does not match the model: parameter " + layout_[i].name + " has shape " +
                            c10::str(w.sizes()));
    weights_[i].copy_(w);
  }
  for (size_t i = 0; i < masters_.size(); ++i) {  // bf16: the fp32 masters, not the rounded weights
    torch::Tensor m;
    if (!archive.try_read(checkpoint_key::model_master(layout_[i].name), m) || m.sizes() != masters_[i].sizes())
      throw CheckpointError("it has no fp32 master of parameter " + layout_[i].name +
                            " (written by a run with another train.dtype?)");
    masters_[i].detach().copy_(m);
  }
}

}  // namespace ppu
