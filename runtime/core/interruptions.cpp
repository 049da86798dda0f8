#include "core/interruptions.h"

#include <algorithm>

namespace ppu {

nlohmann::json to_note(const JobHistory& h) {
  return {{"reached_round", h.reached_round},
          {"rounds_lost", h.rounds_lost},
          {"stop_count", h.stop_count},
          {"stops", h.stops}};
}

JobHistory from_note(const nlohmann::json& note) {
  JobHistory h;
  h.reached_round = note.at("reached_round").get<int64_t>();
  h.rounds_lost = note.at("rounds_lost").get<int64_t>();
  h.stop_count = note.at("stop_count").get<int64_t>();
  h.stops = note.at("stops").get<std::vector<Interruption>>();
  return h;
}

JobHistory after_stop(const std::optional<JobHistory>& before, int64_t resumed_round, const std::string& kind) {
  JobHistory h = before.value_or(JobHistory{});
  h.reached_round = std::max(h.reached_round, resumed_round);
  if (!before) return h;
  Interruption stop;
  stop.round = before->reached_round;
  stop.kind = kind;
  stop.resumed_round = resumed_round;
  stop.rounds_lost = std::max<int64_t>(0, before->reached_round - resumed_round);
  h.rounds_lost += stop.rounds_lost;
  ++h.stop_count;
  h.stops.push_back(stop);
  if (h.stops.size() > JobHistory::kMaxStopsKept)
    h.stops.erase(h.stops.begin(), h.stops.end() - static_cast<std::ptrdiff_t>(JobHistory::kMaxStopsKept));
  return h;
}

void LiveInterruptions::lost(RecoverySummary& summary, int64_t round, const std::string& kind,
                             const std::vector<int>& ranks) {
  Interruption event;
  event.round = round;
  event.kind = kind;
  event.ranks = ranks;
  event.resumed_round = round;  // the group trained on from where it was
  open_.push_back(summary.interruptions.size());
  summary.interruptions.push_back(std::move(event));
}

void LiveInterruptions::round_end(RecoverySummary& summary, const std::vector<int>& missing) {
  const auto still_out = [&](std::size_t i) {
    const auto& ranks = summary.interruptions[i].ranks;
    return std::any_of(ranks.begin(), ranks.end(),
                       [&](int r) { return std::find(missing.begin(), missing.end(), r) != missing.end(); });
  };
  open_.erase(std::remove_if(open_.begin(), open_.end(), [&](std::size_t i) { return !still_out(i); }), open_.end());
  for (std::size_t i : open_) ++summary.interruptions[i].rounds_degraded;
}

}  // namespace ppu
