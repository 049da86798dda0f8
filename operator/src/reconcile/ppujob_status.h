// PPUJobStatus: a PPUJob's `status`, typed as the CRD's status schema defines it
// (manifests/crd/ppu.dev_ppujobs.yaml), with to_json/from_json that map it to that JSON and back
// exactly: every field the schema holds is a member, a field absent from the object is absent
// here (nullopt, or an empty condition list that was never there) and stays absent when written,
// so to_json(from_json(j)) == j for any status the API server stores, and the status the
// reconciler writes differs from the one it read only in what a policy changed. Keys outside the
// schema (the API server prunes them) are kept as read at the top level. A value of the wrong
// type, or a phase the CRD does not list, throws (nlohmann::json's type_error, or
// std::invalid_argument naming the field): the API server validates these, so only a broken
// test object has them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace ppu::op {

using json = nlohmann::json;

// status.phase. The words are job_constants.h's phase::k*.
enum class JobPhase { Pending, Running, Restarting, Succeeded, Failed, Suspended };
const char* to_string(JobPhase p);
std::optional<JobPhase> parse_phase(const std::string& s);  // nullopt: not a phase the CRD lists

// One of status.conditions: metav1.Condition as the CRD keeps it (type, status, reason,
// message and lastTransitionTime required; observedGeneration optional).
struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
  std::optional<int64_t> observed_generation;

  bool is_true() const { return status == "True"; }
};

// status.result: the ranks' own final figures (docs/OPERATOR.md, "Final status").
struct JobResult {
  std::optional<int64_t> outer_round;
  std::optional<std::string> eval_loss;   // decimal string
  std::optional<std::string> perplexity;  // decimal string
  std::optional<int64_t> steps;
  std::optional<int64_t> tokens;                // summed over the ranks
  std::optional<std::string> duration_seconds;  // the longest rank, decimal string
  std::optional<int64_t> last_checkpoint_round;
  std::optional<std::string> parameter_checksum;
  std::optional<int64_t> ranks_reported;
};

// status.export: where the model of spec.export was written.
struct ExportedModel {
  std::optional<std::string> path;  // relative to the checkpoint volume's root
  std::optional<std::string> claim_name;
  std::optional<int64_t> round;  // the checkpoint round the model was read from
  std::optional<std::string> format;
  std::optional<std::string> dtype;
};

// One of status.recoveringRanks (recovery live): a rank whose pod the operator is replacing, and
// the uid of the pod it counted as lost ("" when the pod vanished unseen). It makes the count of
// status.recoveries exactly once per lost pod whatever the caches show (policy_recovery.cpp).
// Written when the loss is counted (absent in entries an older operator wrote): when, which loss
// of this rank within spec.runPolicy.recoveryWindowSeconds it is, and, when its replacement backs
// off (recovery_pacing.h), the time before which it is not created. forceDeletedFrom names the
// node the lost pod was force-deleted from (node_health.h), once it was.
struct RecoveringRank {
  int64_t rank = 0;
  std::string pod_uid;
  std::optional<std::string> lost_time;       // RFC 3339
  std::optional<int64_t> attempt;             // 1: the rank's first loss within the window
  std::optional<std::string> recreate_after;  // RFC 3339
  std::optional<std::string> force_deleted_from;
};

// One of status.recentRecoveries (recovery live): a rank recovery counted at `time`. The list
// holds those within spec.runPolicy.recoveryWindowSeconds (all when 0), oldest first, at most
// recovery_pacing.h's kRecoveryHistoryMax: the budget and the back-off are counted from it.
struct RecoveryRecord {
  int64_t rank = 0;
  std::string time;  // RFC 3339
};

// status.perplexity is x-kubernetes-int-or-string: the operator writes a decimal string, an
// integer someone else wrote stays an integer.
using IntOrString = std::variant<int64_t, std::string>;

struct PPUJobStatus {
  std::optional<JobPhase> phase;  // nullopt: a job no pass has seen yet
  std::vector<Condition> conditions;
  // The object has a conditions list even when it is empty (so an empty list stays one).
  // set_condition() sets it; conditions is written when this is set or it is not empty.
  bool conditions_listed = false;
  std::optional<std::string> reason;  // why the job cannot proceed, or why it Failed
  std::optional<std::string> message;
  std::optional<int64_t> ready_ranks;
  std::optional<int64_t> active_ranks;
  std::optional<int64_t> failed_ranks;
  std::optional<std::string> ready_string;  // "ready/replicas"
  std::optional<int64_t> restart_count;
  std::optional<std::string> next_restart_time;  // RFC 3339
  // recovery live: single rank pods recreated (not gang restarts), those being replaced now, the
  // recoveries of the current window (recovery_pacing.h), and from the ranks' metrics the
  // smallest live group and slice coverage (a decimal string in [0,1]).
  std::optional<int64_t> recoveries;
  std::optional<std::vector<RecoveringRank>> recovering_ranks;
  std::optional<std::vector<RecoveryRecord>> recent_recoveries;
  std::optional<int64_t> live_ranks;
  std::optional<std::string> min_slice_coverage;
  std::optional<int64_t> last_checkpoint_round;
  std::optional<int64_t> outer_round;
  // Progress from the ranks' metrics while the job runs: the slowest rank's inner step of the
  // configured total, its percentage (0-100, rounded down) and the seconds the slowest rank
  // still needs at its measured rate; Succeeded: 100 and 0.
  std::optional<int64_t> step;
  std::optional<int64_t> steps;
  std::optional<int64_t> progress_percentage;
  std::optional<int64_t> estimated_remaining_seconds;
  std::optional<IntOrString> perplexity;
  std::optional<JobResult> result;
  std::optional<ExportedModel> model_export;   // status.export
  std::optional<std::string> start_time;       // RFC 3339
  std::optional<std::string> completion_time;  // RFC 3339
  std::optional<int64_t> observed_generation;
  json unknown = json::object();  // top-level keys outside the schema, as read

  const Condition* condition(const std::string& type) const;
  // Sets condition `type` to `cond_status` with reason `why` and message `text` (appended when
  // new); keeps its lastTransitionTime when its status is unchanged.
  void set_condition(const std::string& type, const std::string& cond_status, const std::string& why,
                     const std::string& text, int64_t now, int64_t generation);
  void remove_condition(const std::string& type);
};

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
void to_json(json& j, const PPUJobStatus& s);
void from_json(const json& j, PPUJobStatus& s);  // null reads as the empty status

}  // namespace ppu::op
