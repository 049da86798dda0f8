// PPUJobStatus: a PPUJob's `status`, typed. Its fields are the lists below, one line each
// (reconcile/api_fields.h): the struct's members, to_json/from_json and the CRD's status schema
// (rendered by ppu-crd into manifests/crd/ppu.dev_ppujobs.yaml) all come from them, so the
// status the operator writes and the schema the API server keeps cannot differ. to_json/from_json
// map the status to that JSON and back exactly: a field absent from the object is absent here
// (nullopt, or a condition list that was never there) and stays absent when written, so
// to_json(from_json(j)) == j for any status the API server stores, and the status the reconciler
// writes differs from the one it read only in what a policy changed. Keys outside the lists (the
// API server prunes them) are kept as read at the top level. A value of the wrong type, or a phase
// the CRD does not list, throws (nlohmann::json's type_error, or std::invalid_argument naming the
// field): the API server validates these, so only a broken test object has them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "reconcile/api_fields.h"
#include "reconcile/job_constants.h"

namespace ppu::op {

using json = nlohmann::json;

// status.phase; the CRD's enum is this table's words (job_constants.h's phase::k*).
enum class JobPhase { Pending, Running, Restarting, Succeeded, Failed, Suspended };
inline constexpr std::pair<JobPhase, const char*> kPhaseWords[] = {
    {JobPhase::Pending, phase::kPending},       {JobPhase::Running, phase::kRunning},
    {JobPhase::Restarting, phase::kRestarting}, {JobPhase::Succeeded, phase::kSucceeded},
    {JobPhase::Failed, phase::kFailed},         {JobPhase::Suspended, phase::kSuspended},
};
const char* to_string(JobPhase p);
std::optional<JobPhase> parse_phase(const std::string& s);  // nullopt: not a phase the CRD lists

// status.perplexity is x-kubernetes-int-or-string: the operator writes a decimal string, an
// integer someone else wrote stays an integer.
using IntOrString = std::variant<int64_t, std::string>;

// clang-format off
// One of status.conditions: metav1.Condition as the CRD keeps it.
#define PPU_CONDITION_FIELDS(F) \
  F(std::string,            type,                 "type",               {}, "required: true, maxLength: 316", "") \
  F(std::string,            status,               "status",             {}, "required: true, enum: [\"True\", \"False\", Unknown]", "") \
  F(std::optional<int64_t>, observed_generation,  "observedGeneration", {}, "format: int64, minimum: 0", "") \
  F(std::string,            last_transition_time, "lastTransitionTime", {}, "required: true, format: date-time", "") \
  F(std::string,            reason,               "reason",             {}, "required: true, maxLength: 1024", "") \
  F(std::string,            message,              "message",            {}, "required: true, maxLength: 32768", "")

// One of status.recoveringRanks (recovery live): a rank whose pod the operator is replacing, and
// the uid of the pod it counted as lost. It makes the count of status.recoveries exactly once per
// lost pod whatever the caches show (policy_recovery.cpp). lostTime, attempt and recreateAfter are
// written when the loss is counted (absent in entries an older operator wrote); recreateAfter when
// the replacement backs off (recovery_pacing.h); forceDeletedFrom once the lost pod was
// force-deleted (node_health.h).
#define PPU_RECOVERING_RANK_FIELDS(F) \
  F(int64_t,                    rank,               "rank",             {}, "required: true", "") \
  F(std::string,                pod_uid,            "podUID",           {}, "", "") \
  F(std::optional<std::string>, lost_time,          "lostTime",         {}, "format: date-time", "when the loss was counted") \
  F(std::optional<int64_t>,     attempt,            "attempt",          {}, "", "which loss of this rank within spec.runPolicy.recoveryWindowSeconds (1: the first, recreated at once)") \
  F(std::optional<std::string>, recreate_after,     "recreateAfter",    {}, "format: date-time", "the replacement is not created before this time (back-off of a rank lost again)") \
  F(std::optional<std::string>, force_deleted_from, "forceDeletedFrom", {}, "", "the NotReady, unreachable or deleted node the lost pod was force-deleted from")

// One of status.recentRecoveries (recovery live): a rank recovery counted at `time`. The list
// holds those within spec.runPolicy.recoveryWindowSeconds (all when 0), oldest first, at most
// recovery_pacing.h's kRecoveryHistoryMax: the budget and the back-off are counted from it.
#define PPU_RECOVERY_RECORD_FIELDS(F) \
  F(int64_t,     rank, "rank", {}, "required: true", "") \
  F(std::string, time, "time", {}, "required: true, format: date-time", "")

// status.result: the ranks' own final figures (docs/OPERATOR.md, "Final status").
#define PPU_JOB_RESULT_FIELDS(F) \
  F(std::optional<int64_t>,     outer_round,           "outerRound",          {}, "format: int64", "") \
  F(std::optional<std::string>, eval_loss,             "evalLoss",            {}, "", "final eval loss of the global parameters (nats/token, decimal string)") \
  F(std::optional<std::string>, perplexity,            "perplexity",          {}, "", "") \
  F(std::optional<int64_t>,     steps,                 "steps",               {}, "format: int64", "") \
  F(std::optional<int64_t>,     tokens,                "tokens",              {}, "format: int64", "tokens trained, summed over the ranks") \
  F(std::optional<std::string>, duration_seconds,      "durationSeconds",     {}, "", "wall time of the longest rank (decimal string)") \
  F(std::optional<int64_t>,     last_checkpoint_round, "lastCheckpointRound", {}, "format: int64", "") \
  F(std::optional<std::string>, parameter_checksum,    "parameterChecksum",   {}, "", "digest of the final global parameters; equal on every rank") \
  F(std::optional<int64_t>,     ranks_reported,        "ranksReported",       {}, "", "")

// status.lastStop: the job's last stop of the whole job (a notice, a gang restart, every rank
// lost) as its ranks recorded it (core/interruptions.h): what it cost in rounds.
#define PPU_JOB_STOP_FIELDS(F) \
  F(int64_t, round,         "round",        {}, "required: true, format: int64", "the outer round the job had reached when it stopped") \
  F(int64_t, resumed_round, "resumedRound", {}, "required: true, format: int64", "the round the next run resumed from (its checkpoint; 0: from scratch)") \
  F(int64_t, rounds_lost,   "roundsLost",   {}, "required: true, format: int64", "round - resumedRound: outer rounds trained again")

// status.lastResize and status.resizes: an elastic job's changes of spec.replicas as the operator
// saw them.
#define PPU_JOB_RESIZE_FIELDS(F) \
  F(std::string,            time,  "time",  {}, "required: true, format: date-time", "when the operator saw spec.replicas change") \
  F(std::optional<int64_t>, round, "round", {}, "format: int64", "status.outerRound then (the ranks take the size in at their next round boundary)") \
  F(int64_t,                from,  "from",  {}, "required: true", "the desired ranks before") \
  F(int64_t,                to,    "to",    {}, "required: true", "the desired ranks after")

// status.export: where the model of spec.export was written.
#define PPU_EXPORTED_MODEL_FIELDS(F) \
  F(std::optional<std::string>, path,       "path",      {}, "", "the model's directory relative to the checkpoint volume's root") \
  F(std::optional<std::string>, claim_name, "claimName", {}, "", "the checkpoint volume's PersistentVolumeClaim, when it is one") \
  F(std::optional<int64_t>,     round,      "round",     {}, "format: int64", "the checkpoint round the model was read from") \
  F(std::optional<std::string>, format,     "format",    {}, "", "") \
  F(std::optional<std::string>, dtype,      "dtype",     {}, "", "")
// clang-format on

struct Condition {
  PPU_CONDITION_FIELDS(PPU_DECLARE_FIELD)
  bool is_true() const { return status == condition_status::kTrue; }
};

// status.conditions: the list, and whether the object has one at all, so that an empty list
// stays one (set_condition() lists it; it is written when listed or not empty).
struct ConditionList : std::vector<Condition> {
  using std::vector<Condition>::vector;
  ConditionList() = default;
  ConditionList(std::vector<Condition> list) : std::vector<Condition>(std::move(list)) {}  // implicit on purpose
  bool listed = false;
};

struct RecoveringRank {
  PPU_RECOVERING_RANK_FIELDS(PPU_DECLARE_FIELD)
};
struct RecoveryRecord {
  PPU_RECOVERY_RECORD_FIELDS(PPU_DECLARE_FIELD)
};
struct JobResult {
  PPU_JOB_RESULT_FIELDS(PPU_DECLARE_FIELD)
};
struct ExportedModel {
  PPU_EXPORTED_MODEL_FIELDS(PPU_DECLARE_FIELD)
};
struct JobStop {
  PPU_JOB_STOP_FIELDS(PPU_DECLARE_FIELD)
};
struct JobResize {
  PPU_JOB_RESIZE_FIELDS(PPU_DECLARE_FIELD)
};

// clang-format off
// The top level of status. phase nullopt: a job no pass has seen yet. recoveries, recoveringRanks,
// recentRecoveries, liveRanks and minSliceCoverage: recovery live only. step, steps,
// progressPercentage and estimatedRemainingSeconds: progress from the ranks' metrics while the
// job runs (the slowest rank); Succeeded: steps, 100 and 0.
#define PPU_JOB_STATUS_FIELDS(F) \
  F(std::optional<JobPhase>,                    phase,                       "phase",                     {}, "", "") \
  F(ConditionList,                              conditions,                  "conditions",                {}, "x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [type]", "") \
  F(std::optional<std::string>,                 reason,                      "reason",                    {}, "", "while set: why the job cannot proceed (a PodCreationFailed reason such as PodSecurity or QuotaExceeded) or why it Failed") \
  F(std::optional<std::string>,                 message,                     "message",                   {}, "", "details of reason (the API server's message for a refusal)") \
  F(std::optional<int64_t>,                     ready_ranks,                 "readyRanks",                {}, "", "") \
  F(std::optional<int64_t>,                     active_ranks,                "activeRanks",               {}, "", "") \
  F(std::optional<int64_t>,                     failed_ranks,                "failedRanks",               {}, "", "") \
  F(std::optional<std::string>,                 ready_string,                "readyString",               {}, "", "readyRanks/replicas, for kubectl get") \
  F(std::optional<int64_t>,                     restart_count,               "restartCount",              {}, "", "") \
  F(std::optional<std::string>,                 next_restart_time,           "nextRestartTime",           {}, "format: date-time", "earliest time of the next gang creation (restart back-off)") \
  F(std::optional<int64_t>,                     recoveries,                  "recoveries",                {}, "", "training.network.recovery live: rank pods lost and recreated alone while the other ranks went on (gang restarts are restartCount)") \
  F(std::optional<std::vector<RecoveringRank>>, recovering_ranks,            "recoveringRanks",           {}, "", "recovery live: ranks whose pod is being replaced, with the uid of the pod counted as lost (empty when it vanished unseen); each lost pod counts once in recoveries") \
  F(std::optional<std::vector<RecoveryRecord>>, recent_recoveries,           "recentRecoveries",          {}, "maxItems: 1024", "recovery live: the rank recoveries counted within spec.runPolicy.recoveryWindowSeconds (all when 0), oldest first, at most 1024; maxRecoveries and the back-off are counted from them") \
  F(std::optional<int64_t>,                     desired_replicas,            "desiredReplicas",           {}, "", "spec.elastic: spec.replicas as the operator last acted on it (the ranks take it in at their next round boundary)") \
  F(std::optional<JobResize>,                   last_resize,                 "lastResize",                {}, "", "spec.elastic: the last change of spec.replicas (event Resized for each)") \
  F(std::optional<std::vector<JobResize>>,      resizes,                     "resizes",                   {}, "maxItems: 32", "spec.elastic: the job's size history, its last 32 changes of spec.replicas, oldest first (the ranks' own, round by round: their summaries' recovery.size_history)") \
  F(std::optional<int64_t>,                     live_ranks,                  "liveRanks",                 {}, "", "recovery live: ranks in the live group, the smallest ppu_live_ranks over the ranks that answered the last scrape") \
  F(std::optional<std::string>,                 min_slice_coverage,          "minSliceCoverage",          {}, "", "recovery live: the smallest ppu_min_slice_coverage (decimal string in [0,1]; 1 = every element of every slice has all its owners live)") \
  F(std::optional<int64_t>,                     last_checkpoint_round,       "lastCheckpointRound",       {}, "format: int64", "") \
  F(std::optional<int64_t>,                     rounds_lost,                 "roundsLost",                {}, "format: int64, minimum: 0", "outer rounds the job trained again after stops of the whole job (notices, gang restarts, every rank lost), over its life, as its ranks recorded them; a rank lost under recovery live costs none (the others train on)") \
  F(std::optional<int64_t>,                     stops,                       "stops",                     {}, "format: int64, minimum: 0", "stops of the whole job over its life that its ranks recorded (each one resumed after)") \
  F(std::optional<JobStop>,                     last_stop,                   "lastStop",                  {}, "", "the job's last stop of the whole job and what it cost (event RoundsLost for each)") \
  F(std::optional<int64_t>,                     outer_round,                 "outerRound",                {}, "format: int64", "") \
  F(std::optional<int64_t>,                     step,                        "step",                      {}, "format: int64", "inner steps done by the slowest rank (ppu_step), from the last scrape; train.steps once Succeeded") \
  F(std::optional<int64_t>,                     steps,                       "steps",                     {}, "format: int64", "train.steps as the ranks report it (ppu_steps_target)") \
  F(std::optional<int64_t>,                     progress_percentage,         "progressPercentage",        {}, "minimum: 0, maximum: 100", "100 * step / steps, rounded down; 100 once Succeeded") \
  F(std::optional<int64_t>,                     estimated_remaining_seconds, "estimatedRemainingSeconds", {}, "format: int64, minimum: 0", "seconds the slowest rank still needs at its measured rate (ppu_remaining_seconds; evaluations and restarts not included); 0 once Succeeded, absent once Failed") \
  F(std::optional<IntOrString>,                 perplexity,                  "perplexity",                {}, "", "eval perplexity of the global parameters (a decimal string): live from the ranks' metrics while the job runs, the ranks' final result once it Succeeded") \
  F(std::optional<JobResult>,                   result,                      "result",                    {}, "", "the ranks' own final result (their termination messages), set when every rank succeeded and reported one; condition ResultReported says whether it is there") \
  F(std::optional<ExportedModel>,               model_export,                "export",                    {}, "", "where the model of spec.export is, set when condition Exported is True") \
  F(std::optional<std::string>,                 start_time,                  "startTime",                 {}, "format: date-time", "") \
  F(std::optional<std::string>,                 completion_time,             "completionTime",            {}, "format: date-time", "") \
  F(std::optional<int64_t>,                     observed_generation,         "observedGeneration",        {}, "format: int64", "")
// clang-format on

struct PPUJobStatus {
  PPU_JOB_STATUS_FIELDS(PPU_DECLARE_FIELD)
  json unknown = json::object();  // top-level keys outside the list, as read

  const Condition* condition(const std::string& type) const;
  // Sets condition `type` to `cond_status` with reason `why` and message `text` (appended when
  // new); keeps its lastTransitionTime when its status is unchanged.
  void set_condition(const std::string& type, const std::string& cond_status, const std::string& why,
                     const std::string& text, int64_t now, int64_t generation);
  void remove_condition(const std::string& type);
};

PPU_FIELD_LIST(Condition, PPU_CONDITION_FIELDS, false)
PPU_FIELD_LIST(RecoveringRank, PPU_RECOVERING_RANK_FIELDS, false)
PPU_FIELD_LIST(RecoveryRecord, PPU_RECOVERY_RECORD_FIELDS, false)
PPU_FIELD_LIST(JobResult, PPU_JOB_RESULT_FIELDS, false)
PPU_FIELD_LIST(ExportedModel, PPU_EXPORTED_MODEL_FIELDS, false)
PPU_FIELD_LIST(JobStop, PPU_JOB_STOP_FIELDS, false)
PPU_FIELD_LIST(JobResize, PPU_JOB_RESIZE_FIELDS, false)
PPU_FIELD_LIST(PPUJobStatus, PPU_JOB_STATUS_FIELDS, false)

// The job's status ({} when it has none yet).
PPUJobStatus status_of(const json& job);

void to_json(json& j, const Condition& c);
void from_json(const json& j, Condition& c);
void to_json(json& j, const RecoveringRank& r);
void from_json(const json& j, RecoveringRank& r);
void to_json(json& j, const RecoveryRecord& r);
void from_json(const json& j, RecoveryRecord& r);
void to_json(json& j, const JobResult& r);
void from_json(const json& j, JobResult& r);
void to_json(json& j, const ExportedModel& x);
void from_json(const json& j, ExportedModel& x);
void to_json(json& j, const JobStop& x);
void from_json(const json& j, JobStop& x);
void to_json(json& j, const JobResize& x);
void from_json(const json& j, JobResize& x);
void to_json(json& j, const PPUJobStatus& s);
void from_json(const json& j, PPUJobStatus& s);  // null reads as the empty status

}  // namespace ppu::op
