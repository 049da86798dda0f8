// Every metric the operator exports, one line each: M(constant, "name"). operator_metrics.cpp
// registers them (with their help text); ppu-contract lists them for Python (the dashboards'
// generator); docs/METRICS.md documents them. ppu_job_* are per PPUJob (labels namespace, job),
// aggregated from the ranks' metrics (core/job_contract.h); ppu_operator_* are the operator's own.
#pragma once

// clang-format off
#define PPU_OPERATOR_METRICS(M)                                              \
  M(kReconciles,              "ppu_operator_reconciles_total")               \
  M(kReconcileErrors,         "ppu_operator_reconcile_errors_total")         \
  M(kWorkqueueDepth,          "ppu_operator_workqueue_depth")                \
  M(kReconcileDuration,       "ppu_operator_reconcile_duration_seconds")     \
  M(kJobsByPhase,             "ppu_operator_jobs")                           \
  M(kJobExports,              "ppu_operator_job_exports")                    \
  M(kJobsWaitingForAdmission, "ppu_operator_jobs_waiting_for_admission")     \
  M(kGangRestarts,            "ppu_operator_gang_restarts_total")            \
  M(kPodForceDeletions,       "ppu_operator_pod_force_deletions_total")      \
  M(kRecoveryBackoffs,        "ppu_operator_recovery_backoffs_total")        \
  M(kJobStateBytes,           "ppu_job_state_bytes")                         \
  M(kJobFlopsExecuted,        "ppu_job_flops_executed")                      \
  M(kJobFlopsFullBackward,    "ppu_job_flops_full_backward")                 \
  M(kJobFlopsSavedRatio,      "ppu_job_flops_saved_ratio")                   \
  M(kJobEvalPerplexity,       "ppu_job_eval_perplexity")                     \
  M(kJobLoss,                 "ppu_job_loss")                                \
  M(kJobOuterRound,           "ppu_job_outer_round")                         \
  M(kJobTokensPerSecond,      "ppu_job_tokens_per_second")                   \
  M(kJobRanksReady,           "ppu_job_ranks_ready")                         \
  M(kJobReplicas,             "ppu_job_replicas")                            \
  M(kJobRestarts,             "ppu_job_restarts")                            \
  M(kJobRecoveries,           "ppu_job_recoveries")                          \
  M(kJobLiveRanks,            "ppu_job_live_ranks")                          \
  M(kJobMinSliceCoverage,     "ppu_job_min_slice_coverage")                  \
  M(kJobProgressRatio,        "ppu_job_progress_ratio")                      \
  M(kJobRemainingSeconds,     "ppu_job_remaining_seconds")                   \
  M(kJobRoundsLost,           "ppu_job_rounds_lost")                         \
  M(kJobStops,                "ppu_job_stops")
// clang-format on

namespace ppu::op::metric_name {
#define PPU_DECLARE_OPERATOR_METRIC(constant, name) inline constexpr const char* constant = name;
PPU_OPERATOR_METRICS(PPU_DECLARE_OPERATOR_METRIC)
#undef PPU_DECLARE_OPERATOR_METRIC
}  // namespace ppu::op::metric_name
