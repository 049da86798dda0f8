#include "engine/optim/outer_optimizer.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <stdexcept>

#include "common/fnv1a.h"
#include "engine/comm/delta_exchange.h"
#include "engine/model/region_view.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

namespace {

// The part of `piece` this rank trains, as a region of the piece's own view; nullopt when the
// rank trains none of it. Slices and by-slice pieces run along the same dimension.
std::optional<TensorRegion> trainable_part(const ParamSlice& slice, const FragmentPiece& piece) {
  if (slice.whole()) return TensorRegion{};
  const auto o = overlap(piece, slice, slice.param.shape[slice.dim]);
  if (!o) return std::nullopt;
  return TensorRegion{slice.dim, o->in_region, o->in_region + o->length};
}

}  // namespace

OuterOptimizer::OuterOptimizer(const OuterConfig& config, Transformer& model, const StreamingSchedule& schedule,
                               Collectives& collectives, Collective collective)
    : config_(config),
      model_(model),
      schedule_(schedule),
      collectives_(collectives),
      wire_(delta_wire_plan(config, model.spec(), collective)),
      host_(config.host_state_dir) {
  for (const auto& w : model.weights()) {
    global_.push_back(host_.copy_of(w));
    momentum_.emplace_back();
  }
  feedback_.resize(schedule.fragments().size());
}

SyncResult OuterOptimizer::sync(int fragment) {
  auto pending = begin(fragment, false);
  return finish(pending);
}

SyncResult OuterOptimizer::average(int fragment) {
  auto pending = begin(fragment, false);
  pending.plain_average = true;
  return finish(pending);
}

OuterOptimizer::InFlight OuterOptimizer::begin(int fragment, bool overlapped) {
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  const auto& pieces = schedule_.fragments().at(fragment).pieces;
  const auto& slices = model_.plan().params();
  InFlight sync;
  sync.fragment = fragment;
  sync.overlapped = overlapped;

  // Line 11: this rank's delta, zero on frozen elements.
  std::vector<torch::Tensor> deltas;
  for (const auto& piece : pieces) {
    // θ_k in fp32: the master where trainable (mixed precision), else the weights themselves.
    const auto local = model_.load_fp32(piece.param_index, piece).to(torch::kCPU);
    const auto global = region_view(global_[piece.param_index], piece);
    auto delta = torch::zeros_like(global);
    if (const auto part = trainable_part(slices[piece.param_index], piece))
      region_view(delta, *part).copy_(region_view(local, *part) - region_view(global, *part));
    deltas.push_back(delta.reshape({-1}));
  }
  sync.flat = torch::cat(deltas);
  // Quorum sync: w_k Δ_k, unless every weight is 1 (then the counts normalise, as without it).
  if (std::any_of(weights_.begin(), weights_.end(), [](double w) { return w != 1.0; })) {
    sync.weights = weights_;
    const double own = weights_.at(model_.plan().rank());
    if (own != 1.0) sync.flat.mul_(own);
  }

  // Line 13, first half: SUM over ranks, in the background.
  ExchangeOptions options;
  options.dtype = wire_.dtype;
  options.row_length = wire_.row_length;
  options.schedule = wire_.schedule;
  options.feedback = config_.error_feedback ? &feedback_.at(fragment) : nullptr;
  sync.wait = start_delta_sum(collectives_, sync.flat, options);
  sync.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sync;
}

SyncResult OuterOptimizer::finish(InFlight& sync) {
  complete(sync);
  return apply(sync);
}

void OuterOptimizer::complete(InFlight& sync) {
  const auto start = std::chrono::steady_clock::now();
  const AllreduceStats stats = sync.wait();
  sync.result.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sync.result.seconds += sync.result.wait_seconds;
  sync.result.bytes_sent = stats.bytes_sent;
  sync.result.bytes_received = stats.bytes_received;
  sync.result.exchange_seconds = stats.seconds;
}

SyncResult OuterOptimizer::apply(InFlight& sync) {
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  const auto& pieces = schedule_.fragments().at(sync.fragment).pieces;
  const auto& slices = model_.plan().params();
  int64_t offset = 0;
  for (const auto& piece : pieces) {
    auto global = region_view(global_[piece.param_index], piece);
    const int64_t n = global.numel();
    // Line 13, second half: element-wise 1/m (m is constant within a parameter, unless ranks
    // are missing: then m counts the live owners of each element).
    // With quorum sync's weights, W (the owners' weights summed) in place of m.
    auto delta = sync.flat.narrow(0, offset, n).view(global.sizes());
    const bool weighted = !sync.weights.empty();
    const auto live = weighted ? weighted_owners(piece, sync.weights) : live_owners(piece);
    if (weighted) delta.div_(live.clamp_min(std::numeric_limits<float>::min()));  // Σ w Δ is 0 where W is
    else if (live.defined()) delta.div_(live.clamp_min(1));
    else delta.div_(slices[piece.param_index].owners);
    offset += n;

    // Line 14: the outer step on the pseudo-gradient g = −Δ.
    if (!sync.plain_average && config_.optimizer == OuterOptimizerKind::Nesterov) {
      auto& m = momentum_[piece.param_index];
      if (!m.defined()) m = host_.zeros(global_[piece.param_index].sizes());
      auto buf = region_view(m, piece);
      auto g = -delta;
      if (live.defined()) {  // an element without a live owner keeps its value and momentum
        const auto owned = live.gt(0);
        buf.copy_(torch::where(owned, buf.mul(config_.momentum).add(g), buf));
        global.sub_(torch::where(owned, g.add(buf, config_.momentum), torch::zeros_like(g)), config_.lr);
      } else {
        buf.mul_(config_.momentum).add_(g);
        global.sub_(g.add(buf, config_.momentum), config_.lr);
      }
    } else {  // outer.optimizer average, or a sync that only averages (plain_average)
      global.add_(delta);
    }
    // θ_k ← θ, or after an overlapped exchange Streaming DiLoCo's α·θ_k + (1−α)·θ.
    // Mixed precision: the bf16 working weights become the rounded values, the fp32 masters of
    // the trainable elements the values themselves.
    if (!sync.overlapped) {
      model_.store_fp32(piece.param_index, piece, global);
    } else {
      const double a = config_.overlap_alpha;
      const auto local = model_.load_fp32(piece.param_index, piece).to(torch::kCPU);
      model_.store_fp32(piece.param_index, piece, local.mul(a).add(global, 1 - a));
    }
  }
  sync.result.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sync.result;
}

void OuterOptimizer::set_owners(std::vector<SlicePlan> live_plans, int world_size) {
  const bool everyone = static_cast<int>(live_plans.size()) == world_size;
  live_plans_ = everyone ? std::vector<SlicePlan>{} : std::move(live_plans);
  min_coverage_ = 1;
  if (everyone) return;
  for (size_t i = 0; i < model_.plan().params().size(); ++i) {
    const auto& whole = model_.plan().params()[i];
    FragmentPiece piece;
    piece.param_index = static_cast<int>(i);
    const auto live = live_owners(piece);
    min_coverage_ = std::min(min_coverage_, live.min().item<double>() / whole.owners);
  }
}

torch::Tensor OuterOptimizer::live_owners(const FragmentPiece& piece) const {
  if (live_plans_.empty()) return {};
  auto counts = torch::zeros_like(region_view(global_[piece.param_index], piece));
  for (const auto& plan : live_plans_)
    if (const auto part = trainable_part(plan.params()[piece.param_index], piece)) region_view(counts, *part).add_(1);
  return counts;
}

torch::Tensor OuterOptimizer::weighted_owners(const FragmentPiece& piece, const std::vector<double>& weights) const {
  const auto& plans = live_plans_.empty() ? job_plans_ : live_plans_;
  if (plans.empty()) throw std::logic_error("quorum sync's weights without the job's slice plans (set_job_plans)");
  auto sums = torch::zeros_like(region_view(global_[piece.param_index], piece));
  for (const auto& plan : plans)
    if (const auto part = trainable_part(plan.params()[piece.param_index], piece))
      region_view(sums, *part).add_(weights.at(plan.rank()));
  return sums;
}

void OuterOptimizer::share_state(Collectives& collectives, int root, bool adopt) {
  torch::NoGradGuard no_grad;
  // Which parameters have momentum yet (a fragment not synchronised has none).
  auto has = torch::zeros({static_cast<int64_t>(momentum_.size())}, torch::kInt64);
  for (size_t i = 0; i < momentum_.size(); ++i) has[static_cast<int64_t>(i)] = momentum_[i].defined() ? 1 : 0;
  collectives.broadcast(has, root);
  for (size_t i = 0; i < global_.size(); ++i) {
    auto g = global_[i].contiguous();
    collectives.broadcast(g, root);
    if (!g.is_same(global_[i])) global_[i].copy_(g);
    if (has[static_cast<int64_t>(i)].item<int64_t>() == 0) {
      momentum_[i] = torch::Tensor();
      continue;
    }
    if (!momentum_[i].defined()) momentum_[i] = host_.zeros(global_[i].sizes());
    auto m = momentum_[i].contiguous();
    collectives.broadcast(m, root);
    if (!m.is_same(momentum_[i])) momentum_[i].copy_(m);
  }
  if (adopt)
    for (size_t i = 0; i < global_.size(); ++i) model_.store_fp32(i, TensorRegion{}, global_[i]);
}

int64_t OuterOptimizer::momentum_bytes() const {
  int64_t b = 0;
  for (const auto& m : momentum_)
    if (m.defined()) b += m.nbytes();
  return b;
}

uint64_t OuterOptimizer::fragment_digest(int fragment) const {
  uint64_t h = kFnv1a64Offset;
  for (const auto& piece : schedule_.fragments().at(fragment).pieces) {
    const auto theta = region_view(global_[piece.param_index], piece).contiguous();
    h = fnv1a64(theta.data_ptr(), theta.nbytes(), h);
    if (!momentum_[piece.param_index].defined()) continue;
    const auto m = region_view(momentum_[piece.param_index], piece).contiguous();
    h = fnv1a64(m.data_ptr(), m.nbytes(), h);
  }
  return h;
}

void OuterOptimizer::resync_fragment(Collectives& collectives, int fragment, int root) {
  torch::NoGradGuard no_grad;
  for (const auto& piece : schedule_.fragments().at(fragment).pieces) {
    auto theta = region_view(global_[piece.param_index], piece);
    auto t = theta.contiguous();
    collectives.broadcast(t, root);
    if (!t.is_same(theta)) theta.copy_(t);
    // Whether the fragment has momentum yet is the same on every rank (its first sync made it).
    if (!momentum_[piece.param_index].defined()) continue;
    auto m = region_view(momentum_[piece.param_index], piece);
    auto mc = m.contiguous();
    collectives.broadcast(mc, root);
    if (!mc.is_same(m)) m.copy_(mc);
  }
}

void OuterOptimizer::catch_up(int fragment, int root, bool rejoins, bool keep_work) {
  torch::NoGradGuard no_grad;
  const auto& pieces = schedule_.fragments().at(fragment).pieces;
  std::vector<torch::Tensor> old;  // a rejoining rank's θ before, to re-base its work on
  for (const auto& piece : pieces) {
    // The root has momentum (the fragment had outer steps meanwhile); a rank that sat out its
    // first one has none yet, and resync_fragment sends it to every rank that has one.
    auto& momentum = momentum_[piece.param_index];
    if (!momentum.defined()) momentum = host_.zeros(global_[piece.param_index].sizes());
    if (rejoins && keep_work) old.push_back(region_view(global_[piece.param_index], piece).clone());
  }
  resync_fragment(collectives_, fragment, root);
  if (!rejoins) return;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& piece = pieces[i];
    const auto theta = region_view(global_[piece.param_index], piece);
    if (keep_work) {
      const auto local = model_.load_fp32(piece.param_index, piece).to(torch::kCPU);
      model_.store_fp32(piece.param_index, piece, theta + (local - old[i]));
    } else {
      model_.store_fp32(piece.param_index, piece, theta);
    }
  }
}

int64_t OuterOptimizer::global_bytes() const {
  int64_t b = 0;
  for (const auto& g : global_) b += g.nbytes();
  return b;
}

ArchiveWriter OuterOptimizer::writer(TensorCopy copy) const {
  SavedTensors saved(copy);
  for (size_t i = 0; i < global_.size(); ++i) {
    const auto& name = model_.layout()[i].name;
    saved.add(checkpoint_key::outer_global(name), global_[i]);
    // A fragment not yet synchronised has no momentum: stored as an empty tensor.
    saved.add_or_empty(checkpoint_key::outer_momentum(name), momentum_[i]);
  }
  return std::move(saved).writer();
}

// Error-feedback residuals differ per rank, so they go into the rank's part of a checkpoint;
// without them a resumed run would differ from an uninterrupted one.
ArchiveWriter OuterOptimizer::feedback_writer(TensorCopy copy) const {
  SavedTensors saved(copy);
  for (size_t f = 0; f < feedback_.size(); ++f) {
    saved.add_or_empty(checkpoint_key::feedback_contribution(f), feedback_[f].contribution);
    saved.add_or_empty(checkpoint_key::feedback_result(f), feedback_[f].result);
  }
  return std::move(saved).writer();
}

void OuterOptimizer::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < global_.size(); ++i) {
    const auto& name = model_.layout()[i].name;
    torch::Tensor g, m;
    if (!archive.try_read(checkpoint_key::outer_global(name), g) ||
        !archive.try_read(checkpoint_key::outer_momentum(name), m))
      throw CheckpointError("no outer state (global θ and momentum) of parameter " + name);
    if (!g.defined() || g.sizes() != global_[i].sizes())
      throw CheckpointError("global parameter " + name + " has shape " + c10::str(g.sizes()) + ", the model's is " +
                            c10::str(global_[i].sizes()));
    if (m.defined() && m.numel() > 0 && m.sizes() != global_[i].sizes())
      throw CheckpointError("outer momentum of " + name + " has shape " + c10::str(m.sizes()) + ", the model's is " +
                            c10::str(global_[i].sizes()));
    global_[i].copy_(g);
    momentum_[i] = m.defined() && m.numel() > 0 ? host_.copy_of(m) : torch::Tensor();
  }
}

void OuterOptimizer::load_feedback(torch::serialize::InputArchive& archive) {
  for (size_t f = 0; f < feedback_.size(); ++f) {
    torch::Tensor c, r;  // absent in checkpoints written before error feedback existed
    const bool has = archive.try_read(checkpoint_key::feedback_contribution(f), c) &&
                     archive.try_read(checkpoint_key::feedback_result(f), r);
    feedback_[f] = has && c.numel() > 0 ? FeedbackState{c.clone(), r.clone()} : FeedbackState{};
  }
}

}  // namespace ppu
