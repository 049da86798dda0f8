// TensorRegion: part of a parameter tensor — a contiguous range [begin, end) along one
// dimension, or the whole tensor (dim kWhole). The one way a rank's trainable slice (SlicePlan),
// a streaming fragment's piece (StreamingSchedule) and a weight's trainable view
// (engine/model/partial_linear) name part of a tensor, with the one rule for where two such parts meet.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace ppu {

struct TensorRegion {
  static constexpr int kWhole = -1;
  int dim = kWhole;
  int64_t begin = 0, end = 0;  // along dim; unused when whole

  bool whole() const { return dim == kWhole; }
  int64_t length() const { return end - begin; }
};

// Where `part`, a range along part.dim (not whole), meets `region` of the same tensor, whose
// size along part.dim is `extent`; `region` is whole or runs along the same dimension.
struct RegionOverlap {
  int64_t in_region = 0;  // offset of the overlap from region's start, along part.dim
  int64_t in_part = 0;    // offset of the overlap from part's start
  int64_t length = 0;
};
// nullopt when they do not meet.
inline std::optional<RegionOverlap> overlap(const TensorRegion& region, const TensorRegion& part, int64_t extent) {
  const int64_t lo = region.whole() ? 0 : region.begin;
  const int64_t hi = region.whole() ? extent : region.end;
  const int64_t b = std::max(lo, part.begin), e = std::min(hi, part.end);
  if (e <= b) return std::nullopt;
  return RegionOverlap{b - lo, b - part.begin, e - b};
}

}  // namespace ppu
