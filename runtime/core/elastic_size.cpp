#include "core/elastic_size.h"

#include <algorithm>

#include "core/config.h"
#include "core/coowners.h"

namespace ppu {

int required_ranks(const Config& config, int slots) {
  return config.network.min_ranks > 0 ? std::min(config.network.min_ranks, slots) : slots;
}

int clamp_desired(int desired, int required, int slots) { return std::clamp(desired, required, slots); }

Shrink shrink_to(const std::vector<int>& members, int desired, int slices) {
  Shrink out;
  std::vector<int> staying;
  for (int m : members) (m >= desired ? out.leavers : staying).push_back(m);
  if (out.leavers.empty()) return out;
  if (!every_slice_owned(staying, slices)) {
    std::string missing;
    for (int s = 0; s < std::max(slices, 1); ++s)
      if (std::none_of(staying.begin(), staying.end(), [&](int m) { return same_slice(m, s, slices); }))
        missing += (missing.empty() ? "" : ",") + std::to_string(s);
    out.refused = "slice(s) [" + missing +
                  "] would have no member left without rank(s) in slots >= " + std::to_string(desired) +
                  " (a slot below it is missing): the shrink waits until it is filled again";
    out.leavers.clear();
  }
  return out;
}

}  // namespace ppu
