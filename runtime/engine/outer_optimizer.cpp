#include "engine/outer_optimizer.h"

#include <chrono>

#include "engine/delta_exchange.h"

namespace ppu {

namespace {

torch::Tensor region(const torch::Tensor& t, const FragmentPiece& piece) {
  return piece.dim < 0 ? t : t.narrow(piece.dim, piece.begin, piece.end - piece.begin);
}

// The part of `piece` this rank trains, as a range along the piece's own region; empty when
// the rank trains none of it. Slices and by-slice pieces run along the same dimension.
bool trainable_part(const ParamSlice& slice, const FragmentPiece& piece, int& dim, int64_t& begin, int64_t& len) {
  if (!slice.sliced()) {
    dim = -1;
    return true;
  }
  dim = slice.dim;
  const int64_t lo = piece.dim < 0 ? 0 : piece.begin;
  const int64_t hi = piece.dim < 0 ? slice.param.shape[dim] : piece.end;
  const int64_t b = std::max(lo, slice.begin), e = std::min(hi, slice.end);
  if (e <= b) return false;
  begin = b - lo;
  len = e - b;
  return true;
}

}  // namespace

OuterOptimizer::OuterOptimizer(const OuterConfig& config, Transformer& model, const StreamingSchedule& schedule,
                               Collectives& collectives)
    : config_(config), model_(model), schedule_(schedule), collectives_(collectives) {
  for (const auto& w : model.weights()) {
    global_.push_back(w.detach().to(torch::kCPU, torch::kFloat32, false, /*copy=*/true));
    momentum_.emplace_back();
  }
}

SyncResult OuterOptimizer::sync(int fragment) {
  auto pending = begin(fragment, false);
  return finish(pending);
}

OuterOptimizer::InFlight OuterOptimizer::begin(int fragment, bool keep_local_progress) {
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  const auto& pieces = schedule_.fragments().at(fragment).pieces;
  const auto& slices = model_.plan().params();
  InFlight sync;
  sync.fragment = fragment;

  // Line 11: this rank's delta, zero on frozen elements.
  std::vector<torch::Tensor> deltas;
  for (const auto& piece : pieces) {
    const auto local = region(model_.weights()[piece.param_index], piece).to(torch::kCPU, torch::kFloat32);
    const auto global = region(global_[piece.param_index], piece);
    auto delta = torch::zeros_like(global);
    int dim;
    int64_t begin = 0, len = 0;
    if (trainable_part(slices[piece.param_index], piece, dim, begin, len)) {
      if (dim < 0) delta.copy_(local - global);
      else delta.narrow(dim, begin, len).copy_(local.narrow(dim, begin, len) - global.narrow(dim, begin, len));
    }
    deltas.push_back(delta.reshape({-1}));
    if (keep_local_progress) sync.sent.push_back(local.clone());
  }
  sync.flat = torch::cat(deltas);

  // Line 13, first half: SUM over ranks, in the background.
  auto exchange = start_delta_sum(collectives_, sync.flat, config_.delta_dtype, model_.spec().d_model);
  sync.wait = exchange.finish;
  sync.result.bytes = exchange.bytes;
  sync.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sync;
}

SyncResult OuterOptimizer::finish(InFlight& sync) {
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  sync.wait();
  const auto& pieces = schedule_.fragments().at(sync.fragment).pieces;
  const auto& slices = model_.plan().params();
  int64_t offset = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto& piece = pieces[k];
    auto global = region(global_[piece.param_index], piece);
    const int64_t n = global.numel();
    // Line 13, second half: element-wise 1/m (m is constant within a parameter).
    auto delta = sync.flat.narrow(0, offset, n).view(global.sizes()).div_(slices[piece.param_index].owners);
    offset += n;

    // Line 14: the outer step on the pseudo-gradient g = −Δ.
    if (config_.optimizer == "nesterov") {
      auto& m = momentum_[piece.param_index];
      if (!m.defined()) m = torch::zeros_like(global_[piece.param_index]);
      auto buf = region(m, piece);
      auto g = -delta;
      buf.mul_(config_.momentum).add_(g);
      global.sub_(g.add(buf, config_.momentum), config_.lr);
    } else {
      global.add_(delta);
    }
    // θ_k ← θ for the fragment (plus what θ_k learned while the exchange was in flight).
    auto local = region(model_.weights()[piece.param_index], piece);
    if (sync.sent.empty()) {
      local.copy_(global);
    } else {
      local.copy_(global + (local.to(torch::kCPU, torch::kFloat32) - sync.sent[k]));
    }
  }
  sync.result.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sync.result;
}

int64_t OuterOptimizer::momentum_bytes() const {
  int64_t b = 0;
  for (const auto& m : momentum_)
    if (m.defined()) b += m.nbytes();
  return b;
}

int64_t OuterOptimizer::global_bytes() const {
  int64_t b = 0;
  for (const auto& g : global_) b += g.nbytes();
  return b;
}

void OuterOptimizer::save(torch::serialize::OutputArchive& archive) const {
  for (size_t i = 0; i < global_.size(); ++i) {
    archive.write("global." + std::to_string(i), global_[i]);
    // A fragment not yet synchronised has no momentum: stored as an empty tensor.
    archive.write("momentum." + std::to_string(i), momentum_[i].defined() ? momentum_[i] : torch::empty({0}));
  }
}

void OuterOptimizer::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < global_.size(); ++i) {
    torch::Tensor g, m;
    archive.read("global." + std::to_string(i), g);
    archive.read("momentum." + std::to_string(i), m);
    if (!g.defined() || g.sizes() != global_[i].sizes())
      throw std::runtime_error("checkpoint global parameter " + std::to_string(i) + " has the wrong shape");
    global_[i].copy_(g);
    momentum_[i] = m.defined() && m.numel() > 0 ? m.clone() : torch::Tensor();
  }
}

}  // namespace ppu
