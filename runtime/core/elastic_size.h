// ElasticSize: the size of a live job that can be resized while it runs (docs/RESIZE.md). The
// job has WORLD_SIZE slots, job ranks 0 … slots−1, fixed for its life; its desired size K keeps
// slots 0 … K−1 filled and leaves the others vacant. Every member answers alike from the same
// inputs (the desired size agreed at a round boundary, the group's members):
//  - required_ranks: the fewest members the job trains with as a whole (network.min_ranks, or
//    every slot when it is 0): fewer is a degraded job, more missing is only a job not at its
//    desired size yet (a Pending pod, a replacement starting);
//  - clamp_desired: a requested size within [required_ranks, slots];
//  - shrink_to: which members leave when the job shrinks to `desired` (the slots ≥ desired), or
//    why that must wait (a slice would have no member left: slots missing below `desired`);
//  - parse_desired: the size as the store's key, the launcher and the operator's file spell it.
// Pure, no LibTorch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

// A desired size as text: a whole decimal number of ranks, at least 1, with nothing around it
// but whitespace (a ConfigMap's file may end in a newline); none for anything else ("", "4x",
// "0", "-2", "2.5", a number past int). One rule for the store's key (the ranks), ppu-launch's
// writes and ppu-rendezvous --desired-file, so that no reader takes a size another refuses.
std::optional<int> parse_desired(std::string_view text);

}  // namespace ppu
