// Interruptions: what each notice or loss cost a job, in outer rounds (summary
// recovery.interruptions and recovery.rounds_lost, metric ppu_rounds_lost, PPUJob
// status.roundsLost; docs/RECOVERY.md, "What an interruption costs"). Pure.
//  - A stop of the whole job (kind notice: it stopped on a notice; fallback: live recovery gave
//    up; restart: every rank ended otherwise, killed or crashed) costs the rounds between the round
//    the job had reached and the round the next run resumed from (0 when there is no checkpoint).
//    The job's reached round, its rounds lost so far and its last stops travel in the checkpoint
//    directory's reached note (JobHistory), rewritten at every round boundary, so that a run that
//    resumes knows what the stop before it cost and what every earlier one did.
//  - A loss or notice the live group trained on through (kind: the fault's, or preempted) costs
//    no round; its rounds_degraded counts the rounds finished while any of its ranks was missing,
//    until every one of them was back (LiveInterruptions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_summary.h"

namespace ppu {

namespace interruption_kind {
inline constexpr const char* kNotice = "notice";
inline constexpr const char* kFallback = "fallback";
inline constexpr const char* kRestart = "restart";
}  // namespace interruption_kind

// The job's history as the checkpoint directory keeps it (kReachedNote).
struct JobHistory {
  int64_t reached_round = 0;        // the last round boundary a run of the job passed
  int64_t rounds_lost = 0;          // summed over every stop of the whole job so far
  int64_t stop_count = 0;           // stops of the whole job so far
  std::vector<Interruption> stops;  // the last kMaxStopsKept of them, oldest first
  static constexpr std::size_t kMaxStopsKept = 32;
};
nlohmann::json to_note(const JobHistory& h);
JobHistory from_note(const nlohmann::json& note);  // throws nlohmann::json::exception when malformed

// The stop that preceded a run starting at `resumed_round` (0: from scratch), as `kind`, given
// the history the run before it left (nullopt: none, a job's first run, which records no stop).
// Returns the history with that stop appended and counted; it cost the rounds the job had
// reached past `resumed_round` (0 when it stopped at the checkpoint it resumes from).
JobHistory after_stop(const std::optional<JobHistory>& before, int64_t resumed_round, const std::string& kind);

// The live group's own losses and notices, each with the rounds it left the job degraded.
class LiveInterruptions {
 public:
  // Ranks lost (or let go) in `round`, as `kind`: one interruption, no round lost.
  void lost(RecoverySummary& summary, int64_t round, const std::string& kind, const std::vector<int>& ranks);
  // A round boundary finished with `missing` job ranks out of the group: counted against every
  // interruption still open that one of them belongs to; one whose ranks are all back closes.
  void round_end(RecoverySummary& summary, const std::vector<int>& missing);

 private:
  std::vector<std::size_t> open_;  // indices into summary.interruptions
};

}  // namespace ppu
