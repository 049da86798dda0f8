#include "core/elastic_size.h"

#include <algorithm>
#include <charconv>

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
  if (const auto unowned = unowned_slices(staying, slices); !unowned.empty()) {
    std::string missing;
    for (int s : unowned) missing += (missing.empty() ? "" : ",") + std::to_string(s);
    out.refused = "slice(s) [" + missing +
                  "] would have no member left without rank(s) in slots >= " + std::to_string(desired) +
                  " (a slot below it is missing): the shrink waits until it is filled again";
    out.leavers.clear();
  }
  return out;
}

std::optional<int> parse_desired(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  int ranks = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ranks);
  if (error != std::errc() || end != text.data() + text.size() || ranks < 1) return std::nullopt;
  return ranks;
}

}  // namespace ppu
