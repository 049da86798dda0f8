// ElasticSize: the size of a live job that can be resized while it runs (docs/RESIZE.md). The
// job has WORLD_SIZE slots, job ranks 0 … slots−1, fixed for its life; its desired size K keeps
// slots 0 … K−1 filled and leaves the others vacant. Every member answers alike from the same
// inputs (the desired size agreed at a round boundary, the group's members):
//  - required_ranks: the fewest members the job trains with as a whole (network.min_ranks, or
//    every slot when it is 0): fewer is a degraded job, more missing is only a job not at its
//    desired size yet (a Pending pod, a replacement starting);
//  - clamp_desired: a requested size within [required_ranks, slots];
//  - shrink_to: which members leave when the job shrinks to `desired` (the slots ≥ desired), or
//    why that must wait (a slice would have no member left: slots missing below `desired`).
// Pure, no LibTorch.
#pragma once

#include <string>
#include <vector>

namespace ppu {

struct Config;

int required_ranks(const Config& config, int slots);

int clamp_desired(int desired, int required, int slots);

struct Shrink {
  std::vector<int> leavers;  // members in slots ≥ desired, ascending; empty when refused
  std::string refused;       // why they stay for now, or "" (nothing to do, or they go)
};
Shrink shrink_to(const std::vector<int>& members, int desired, int slices);

}  // namespace ppu
