#include "reconcile/ppujob_status.h"

#include <algorithm>
#include <stdexcept>

#include "kube/rfc3339.h"
#include "reconcile/job_constants.h"

namespace ppu::op {

namespace {

constexpr std::pair<JobPhase, const char*> kPhaseWords[] = {
    {JobPhase::Pending, phase::kPending},       {JobPhase::Running, phase::kRunning},
    {JobPhase::Restarting, phase::kRestarting}, {JobPhase::Succeeded, phase::kSucceeded},
    {JobPhase::Failed, phase::kFailed},         {JobPhase::Suspended, phase::kSuspended},
};

// The schema's top-level keys; everything else goes to PPUJobStatus::unknown.
constexpr const char* kStatusKeys[] = {
    "phase",
    "conditions",
    "reason",
    "message",
    "readyRanks",
    "activeRanks",
    "failedRanks",
    "readyString",
    "restartCount",
    "nextRestartTime",
    "recoveries",
    "recoveringRanks",
    "recentRecoveries",
    "liveRanks",
    "minSliceCoverage",
    "lastCheckpointRound",
    "outerRound",
    "perplexity",
    "result",
    "export",
    "startTime",
    "completionTime",
    "observedGeneration",
    "step",
    "steps",
    "progressPercentage",
    "estimatedRemainingSeconds",
};

// A present, non-null key read as T (throws nlohmann's type_error on another type).
template <class T>
void read(const json& j, const char* key, std::optional<T>& out) {
  out.reset();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  out = it->template get<T>();
}

template <class T>
void write(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

const json& object_or_empty(const json& j, const char* what) {
  static const json empty = json::object();
  if (j.is_null()) return empty;
  if (!j.is_object()) throw std::invalid_argument(std::string(what) + ": not an object");
  return j;
}

}  // namespace

const char* to_string(JobPhase p) {
  for (const auto& [ph, word] : kPhaseWords)
    if (ph == p) return word;
  return "?";
}

std::optional<JobPhase> parse_phase(const std::string& s) {
  for (const auto& [ph, word] : kPhaseWords)
    if (s == word) return ph;
  return std::nullopt;
}

const Condition* PPUJobStatus::condition(const std::string& type) const {
  for (const auto& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

void PPUJobStatus::set_condition(const std::string& type, const std::string& cond_status, const std::string& why,
                                 const std::string& text, int64_t now, int64_t generation) {
  conditions_listed = true;
  Condition cond{type, cond_status, why, text, format_rfc3339(now), generation};
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status == cond_status && !c.last_transition_time.empty()) cond.last_transition_time = c.last_transition_time;
    c = cond;
    return;
  }
  conditions.push_back(cond);
}

void PPUJobStatus::remove_condition(const std::string& type) {
  conditions.erase(
      std::remove_if(conditions.begin(), conditions.end(), [&](const Condition& c) { return c.type == type; }),
      conditions.end());
}

PPUJobStatus status_of(const json& job) {
  auto it = job.find("status");
  if (it == job.end()) return PPUJobStatus{};
  return it->get<PPUJobStatus>();
}

void to_json(json& j, const Condition& c) {
  j = json{{"type", c.type},
           {"status", c.status},
           {"reason", c.reason},
           {"message", c.message},
           {"lastTransitionTime", c.last_transition_time}};
  write(j, "observedGeneration", c.observed_generation);
}

void from_json(const json& j, Condition& c) {
  const json& o = object_or_empty(j, "status.conditions[]");
  c.type = o.value("type", std::string());
  c.status = o.value("status", std::string());
  c.reason = o.value("reason", std::string());
  c.message = o.value("message", std::string());
  c.last_transition_time = o.value("lastTransitionTime", std::string());
  read(o, "observedGeneration", c.observed_generation);
}

void to_json(json& j, const RecoveringRank& r) {
  j = json{{"rank", r.rank}, {"podUID", r.pod_uid}};
  write(j, "lostTime", r.lost_time);
  write(j, "attempt", r.attempt);
  write(j, "recreateAfter", r.recreate_after);
  write(j, "forceDeletedFrom", r.force_deleted_from);
}

void from_json(const json& j, RecoveringRank& r) {
  const json& o = object_or_empty(j, "status.recoveringRanks[]");
  r.rank = o.value("rank", int64_t{0});
  r.pod_uid = o.value("podUID", std::string());
  read(o, "lostTime", r.lost_time);
  read(o, "attempt", r.attempt);
  read(o, "recreateAfter", r.recreate_after);
  read(o, "forceDeletedFrom", r.force_deleted_from);
}

void to_json(json& j, const RecoveryRecord& r) { j = json{{"rank", r.rank}, {"time", r.time}}; }

void from_json(const json& j, RecoveryRecord& r) {
  const json& o = object_or_empty(j, "status.recentRecoveries[]");
  r.rank = o.value("rank", int64_t{0});
  r.time = o.value("time", std::string());
}

void to_json(json& j, const JobResult& r) {
  j = json::object();
  write(j, "outerRound", r.outer_round);
  write(j, "evalLoss", r.eval_loss);
  write(j, "perplexity", r.perplexity);
  write(j, "steps", r.steps);
  write(j, "tokens", r.tokens);
  write(j, "durationSeconds", r.duration_seconds);
  write(j, "lastCheckpointRound", r.last_checkpoint_round);
  write(j, "parameterChecksum", r.parameter_checksum);
  write(j, "ranksReported", r.ranks_reported);
}

void from_json(const json& j, JobResult& r) {
  const json& o = object_or_empty(j, "status.result");
  read(o, "outerRound", r.outer_round);
  read(o, "evalLoss", r.eval_loss);
  read(o, "perplexity", r.perplexity);
  read(o, "steps", r.steps);
  read(o, "tokens", r.tokens);
  read(o, "durationSeconds", r.duration_seconds);
  read(o, "lastCheckpointRound", r.last_checkpoint_round);
  read(o, "parameterChecksum", r.parameter_checksum);
  read(o, "ranksReported", r.ranks_reported);
}

void to_json(json& j, const ExportedModel& x) {
  j = json::object();
  write(j, "path", x.path);
  write(j, "claimName", x.claim_name);
  write(j, "round", x.round);
  write(j, "format", x.format);
  write(j, "dtype", x.dtype);
}

void from_json(const json& j, ExportedModel& x) {
  const json& o = object_or_empty(j, "status.export");
  read(o, "path", x.path);
  read(o, "claimName", x.claim_name);
  read(o, "round", x.round);
  read(o, "format", x.format);
  read(o, "dtype", x.dtype);
}

void to_json(json& j, const PPUJobStatus& s) {
  j = json::object();
  if (s.unknown.is_object())
    for (const auto& [k, v] : s.unknown.items()) j[k] = v;
  if (s.phase) j["phase"] = to_string(*s.phase);
  if (s.conditions_listed || !s.conditions.empty()) j["conditions"] = s.conditions;
  write(j, "reason", s.reason);
  write(j, "message", s.message);
  write(j, "readyRanks", s.ready_ranks);
  write(j, "activeRanks", s.active_ranks);
  write(j, "failedRanks", s.failed_ranks);
  write(j, "readyString", s.ready_string);
  write(j, "restartCount", s.restart_count);
  write(j, "nextRestartTime", s.next_restart_time);
  write(j, "recoveries", s.recoveries);
  write(j, "recoveringRanks", s.recovering_ranks);
  write(j, "recentRecoveries", s.recent_recoveries);
  write(j, "liveRanks", s.live_ranks);
  write(j, "minSliceCoverage", s.min_slice_coverage);
  write(j, "lastCheckpointRound", s.last_checkpoint_round);
  write(j, "outerRound", s.outer_round);
  write(j, "step", s.step);
  write(j, "steps", s.steps);
  write(j, "progressPercentage", s.progress_percentage);
  write(j, "estimatedRemainingSeconds", s.estimated_remaining_seconds);
  if (s.perplexity) std::visit([&](const auto& v) { j["perplexity"] = v; }, *s.perplexity);
  write(j, "result", s.result);
  write(j, "export", s.model_export);
  write(j, "startTime", s.start_time);
  write(j, "completionTime", s.completion_time);
  write(j, "observedGeneration", s.observed_generation);
}

void from_json(const json& j, PPUJobStatus& s) {
  const json& o = object_or_empty(j, "status");
  s = PPUJobStatus{};
  if (auto it = o.find("phase"); it != o.end() && !it->is_null()) {
    const auto word = it->get<std::string>();
    s.phase = parse_phase(word);
    if (!s.phase) throw std::invalid_argument("status.phase: '" + word + "' is not a PPUJob phase");
  }
  if (auto it = o.find("conditions"); it != o.end() && !it->is_null()) {
    s.conditions = it->get<std::vector<Condition>>();
    s.conditions_listed = true;
  }
  read(o, "reason", s.reason);
  read(o, "message", s.message);
  read(o, "readyRanks", s.ready_ranks);
  read(o, "activeRanks", s.active_ranks);
  read(o, "failedRanks", s.failed_ranks);
  read(o, "readyString", s.ready_string);
  read(o, "restartCount", s.restart_count);
  read(o, "nextRestartTime", s.next_restart_time);
  read(o, "recoveries", s.recoveries);
  read(o, "recoveringRanks", s.recovering_ranks);
  read(o, "recentRecoveries", s.recent_recoveries);
  read(o, "liveRanks", s.live_ranks);
  read(o, "minSliceCoverage", s.min_slice_coverage);
  read(o, "lastCheckpointRound", s.last_checkpoint_round);
  read(o, "outerRound", s.outer_round);
  read(o, "step", s.step);
  read(o, "steps", s.steps);
  read(o, "progressPercentage", s.progress_percentage);
  read(o, "estimatedRemainingSeconds", s.estimated_remaining_seconds);
  if (auto it = o.find("perplexity"); it != o.end() && !it->is_null()) {
    if (it->is_string()) s.perplexity = it->get<std::string>();
    else if (it->is_number_integer()) s.perplexity = it->get<int64_t>();
    else throw std::invalid_argument("status.perplexity: neither an integer nor a string");
  }
  read(o, "result", s.result);
  read(o, "export", s.model_export);
  read(o, "startTime", s.start_time);
  read(o, "completionTime", s.completion_time);
  read(o, "observedGeneration", s.observed_generation);
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    if (std::none_of(std::begin(kStatusKeys), std::end(kStatusKeys), [&](const char* key) { return k == key; }))
      s.unknown[k] = it.value();
  }
}

}  // namespace ppu::op
