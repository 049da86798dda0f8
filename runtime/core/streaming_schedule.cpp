#include "core/streaming_schedule.h"

#include <algorithm>

namespace ppu {

namespace {

void add_whole(Fragment& f, int index, const ParamInfo& p) {
  f.pieces.push_back({{}, index});
  f.numel += p.numel();
}

std::vector<Fragment> by_layers(const ModelSpec& model, int layers_per_fragment) {
  const auto layout = parameter_layout(model);
  if (layers_per_fragment <= 0) {
    Fragment all{"all", {}};
    for (size_t i = 0; i < layout.size(); ++i) add_whole(all, static_cast<int>(i), layout[i]);
    return {all};
  }
  std::vector<Fragment> out;
  for (int first = 0; first < model.layers; first += layers_per_fragment) {
    const int last = std::min(model.layers, first + layers_per_fragment) - 1;
    Fragment f{"layers." + std::to_string(first) + "-" + std::to_string(last), {}};
    for (size_t i = 0; i < layout.size(); ++i)
      if (layout[i].layer >= first && layout[i].layer <= last) add_whole(f, static_cast<int>(i), layout[i]);
    out.push_back(f);
  }
  Fragment emb{"embeddings", {}};
  for (size_t i = 0; i < layout.size(); ++i)
    if (layout[i].layer < 0) add_whole(emb, static_cast<int>(i), layout[i]);
  out.push_back(emb);
  return out;
}

std::vector<Fragment> by_slices(const ModelSpec& model, int slices) {
  const auto layout = parameter_layout(model);
  std::vector<Fragment> out;
  for (int n = 0; n < slices; ++n) {
    Fragment f{"slice." + std::to_string(n), {}};
    for (size_t i = 0; i < layout.size(); ++i) {
      const auto& p = layout[i];
      if (p.role != ParamRole::MlpUp && p.role != ParamRole::MlpDown) continue;
      const int dim = p.role == ParamRole::MlpUp ? 0 : 1;
      const int64_t extent = p.shape[dim];
      FragmentPiece piece{{dim, n * extent / slices, (n + 1) * extent / slices}, static_cast<int>(i)};
      f.pieces.push_back(piece);
      f.numel += p.numel() / extent * (piece.end - piece.begin);
    }
    out.push_back(f);
  }
  Fragment emb{"embeddings", {}}, attn{"attention", {}};
  for (size_t i = 0; i < layout.size(); ++i) {
    const auto& p = layout[i];
    if (p.role == ParamRole::MlpUp || p.role == ParamRole::MlpDown) continue;
    add_whole(p.layer < 0 ? emb : attn, static_cast<int>(i), p);
  }
  out.push_back(emb);
  out.push_back(attn);
  return out;
}

}  // namespace

StreamingSchedule::StreamingSchedule(const Config& config, const ModelSpec& model)
    : sync_every_(config.outer.sync_every) {
  if (!config.streaming()) {
    fragments_ = by_layers(model, 0);
  } else if (config.method == Method::Ppu && config.outer.grouping == Grouping::Slices) {
    fragments_ = by_slices(model, config.effective_slices());
  } else {
    const int group = config.outer.layers_per_fragment > 0 ? config.outer.layers_per_fragment : 3;
    fragments_ = by_layers(model, group);
  }
}

int StreamingSchedule::offset(int fragment) const {
  const auto count = static_cast<int64_t>(fragments_.size());
  // Fragment 0 syncs first, at H/F steps; the last one at a full H, so after each round
  // boundary (s % H == 0) the fragments have been synced in order.
  return static_cast<int>(((fragment + 1) * static_cast<int64_t>(sync_every_) / count) % sync_every_);
}

std::vector<int> StreamingSchedule::due(int64_t completed_steps) const {
  std::vector<int> out;
  const int count = static_cast<int>(fragments_.size());
  for (int f = 0; f < count; ++f)
    if (completed_steps > 0 && completed_steps % sync_every_ == offset(f)) out.push_back(f);
  return out;
}

std::vector<int> StreamingSchedule::unsynced_at_end(int64_t total_steps) const {
  std::vector<int> out;
  const int count = static_cast<int>(fragments_.size());
  for (int f = 0; f < count; ++f)
    if (total_steps % sync_every_ != offset(f)) out.push_back(f);
  return out;
}

int64_t StreamingSchedule::scheduled_syncs(int fragment, int64_t total_steps) const {
  const int64_t off = offset(fragment);
  const int64_t first = off == 0 ? sync_every_ : off;
  return total_steps >= first ? (total_steps - first) / sync_every_ + 1 : 0;
}

int64_t StreamingSchedule::largest_fragment_numel() const {
  int64_t n = 0;
  for (const auto& f : fragments_) n = std::max(n, f.numel);
  return n;
}

}  // namespace ppu
