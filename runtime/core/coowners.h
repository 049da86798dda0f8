// Co-owners: the job ranks that train the same slice (slice = rank mod N, core/slice_plan.h), and
// so hold inner optimiser state of the same shapes. Live recovery asks two questions of a group's
// members (job ranks, ascending) that every member must answer alike, from the same inputs:
//  - coowner_source: which live co-owner gives a replacement its inner state: the lowest member
//    of the replacement's slice that is not itself a newcomer; -1 when there is none.
//  - stand_in: which member writes a missing rank's part of a checkpoint: that same lowest live
//    co-owner (it can give the part its inner state), else the lowest member.
//  - every_slice_owned: whether each slice has a member that trains it (the job can let the
//    other ranks go, on a notice, without leaving an element with no live owner); unowned_slices:
//    the slices that have none.
// Pure, no LibTorch.
#pragma once

#include <algorithm>
#include <vector>

namespace ppu {

inline bool same_slice(int a, int b, int slices) { return slices <= 1 || a % slices == b % slices; }

inline int coowner_source(int rank, const std::vector<int>& members, const std::vector<int>& newcomers, int slices) {
  for (int m : members)  // ascending: the first match is the lowest
    if (m != rank && same_slice(m, rank, slices) && std::find(newcomers.begin(), newcomers.end(), m) == newcomers.end())
      return m;
  return -1;
}

inline int stand_in(int missing, const std::vector<int>& members, int slices) {
  const int coowner = coowner_source(missing, members, {}, slices);
  if (coowner >= 0) return coowner;
  return members.empty() ? -1 : members.front();
}

// The slices no member trains, ascending.
inline std::vector<int> unowned_slices(const std::vector<int>& members, int slices) {
  std::vector<int> unowned;
  for (int slice = 0; slice < std::max(slices, 1); ++slice)
    if (std::none_of(members.begin(), members.end(), [&](int m) { return same_slice(m, slice, slices); }))
      unowned.push_back(slice);
  return unowned;
}

inline bool every_slice_owned(const std::vector<int>& members, int slices) {
  return unowned_slices(members, slices).empty();
}

}  // namespace ppu
