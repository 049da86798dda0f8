// StreamingSchedule: how parameters are grouped into fragments for the outer synchronisation
// and at which inner steps each fragment is synchronised.
//  - grouping "layers" (paper default): fragments of `layers_per_fragment` consecutive blocks,
//    plus one fragment for the embeddings and the final norm; 0 => a single fragment (DiLoCo).
//  - grouping "slices" (Appendix A.1): one fragment per MLP slice across all layers, one for the
//    embeddings/final norm, one for attention and norms. A fragment is then a set of
//    (parameter, row/column range) pieces.
// With F fragments and H = sync_every, fragment f is synchronised after completed inner steps s
// with s % H == offset(f), offset(f) = ((f + 1) * H / F) % H: staggered evenly, so every
// fragment syncs exactly once per H steps. No fragment gets an outer step outside this
// schedule: at the last step only the fragments due there sync; the others are the
// `unsynced_at_end` set, which the trainer finishes as outer.final_sync says (a plain
// average of their trailing deltas, or nothing). No LibTorch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/slice_plan.h"
#include "core/tensor_region.h"

namespace ppu {

// A region of parameter `param_index` that a fragment synchronises.
struct FragmentPiece : TensorRegion {
  int param_index = 0;
};

struct Fragment {
  std::string name;  // "layers.0-2", "embeddings", "slice.1", "attention"
  std::vector<FragmentPiece> pieces;
  int64_t numel = 0;
};

class StreamingSchedule {
 public:
  StreamingSchedule(const Config& config, const ModelSpec& model);

  const std::vector<Fragment>& fragments() const { return fragments_; }
  int sync_every() const { return sync_every_; }
  // Step (in completed inner steps, mod H) at which fragment f is synchronised.
  int offset(int fragment) const;
  // Fragments whose outer step is scheduled after `completed_steps` inner steps.
  std::vector<int> due(int64_t completed_steps) const;
  // Fragments with local progress past their last scheduled sync when training stops after
  // `total_steps` steps: every fragment not due at total_steps.
  std::vector<int> unsynced_at_end(int64_t total_steps) const;
  // Number of scheduled outer steps of `fragment` in steps 1..total_steps.
  int64_t scheduled_syncs(int fragment, int64_t total_steps) const;
  int64_t largest_fragment_numel() const;

 private:
  std::vector<Fragment> fragments_;
  int sync_every_;
};

}  // namespace ppu
