// JobSpec: a PPUJob's spec read into plain values, with the CRD's defaults applied again (the
// operator must behave the same on objects created before a default existed): the fields and
// their defaults are the lists below, which ppu-crd also renders into the CRD, so the two are
// one. Also the names every object of a job gets: <job> (Service, NetworkPolicy), <job>-config (ConfigMap),
// <job>-rank-<k> (pods), for spec.export <job>-export (batch/v1 Job) and <job>.export (its NetworkPolicy), and with
// training.network.recovery live <job>-rendezvous (the store's pod and Service, rendezvous.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/export_result.h"
#include "core/job_contract.h"
#include "reconcile/api_fields.h"
#include "reconcile/job_constants.h"

namespace ppu::op {

using json = nlohmann::json;

inline constexpr const char* kJobLabel = "ppu.dev/job";
inline constexpr const char* kRankLabel = "ppu.dev/rank";
// The slice a rank pod trains (rank mod N, the runtime's SlicePlan), on jobs whose slices have
// several owners: what spreads a live job's co-owners over nodes (object_builder.h).
inline constexpr const char* kSliceLabel = "ppu.dev/slice";
inline constexpr const char* kConfigKey = "config.yaml";
// An elastic job's desired size (spec.replicas) in its ConfigMap, read by its rendezvous store
// (`ppu-rendezvous --desired-file`) from the volume at kDesiredRanksPath.
inline constexpr const char* kDesiredRanksKey = "desired-ranks";
// The same size on the store's pod, set once its ConfigMap has it: a change to the pod has the
// kubelet refresh the pod's ConfigMap volume at once instead of at its next periodic sync (about
// a minute).
inline constexpr const char* kDesiredRanksAnnotation = "ppu.dev/desired-ranks";
inline constexpr const char* kConfigDir = "/etc/ppu";
inline constexpr const char* kDesiredRanksPath = "/etc/ppu/desired-ranks";
inline constexpr const char* kConfigPath = "/etc/ppu/config.yaml";
inline constexpr const char* kCheckpointPath = "/checkpoints";
// spec.data.mountPath's default (the CRD's, rendered from here by ppu-crd).
inline constexpr const char* kDataPath = "/data";
// On the export Job's pod, instead of ppu.dev/job (which would make it one of the job's rank
// pods to the Service and the job's NetworkPolicy): the PPUJob's name.
inline constexpr const char* kExportLabel = "ppu.dev/export";

// clang-format off
// The spec fields the operator reads into values, one line each (reconcile/api_fields.h): the
// members, parse_job's reading and the CRD's schema of these fields, defaults included (ppu-crd).
// The rest of spec (the pods' corev1 passthrough fields, spec.training) is read from JobSpec::spec.
//
// spec.runPolicy. recovery live (recovery_pacing.h): single ranks recreated within
// recoveryWindowSeconds (0: the job's lifetime) before the next loss fails the job; a rank lost
// again within the window waits recoveryBackoffSeconds, doubled each further loss, at most
// recoveryBackoffMaxSeconds.
#define PPU_RUN_POLICY_FIELDS(F) \
  F(int,                    backoff_limit,                "backoffLimit",              3,            "minimum: 0", "Gang restarts allowed before the job is Failed (BackoffLimitExceeded).") \
  F(int,                    max_recoveries,               "maxRecoveries",             10,           "minimum: 0", "training.network.recovery live: loss events (rank pods lost within 60 s of an event's first loss are one event: a node's ranks, a drain) whose ranks are recreated alone within recoveryWindowSeconds; past it the job falls back to a gang restart from its latest checkpoint (event RecoveryLimitExceeded), which backoffLimit bounds. It stops a rank that can never stay up from being recreated for ever. Size it to the events expected per window (status.recoveries counts pods, over the job's lifetime).") \
  F(int64_t,                recovery_window_seconds,      "recoveryWindowSeconds",     3600,         "format: int64, minimum: 0", "training.network.recovery live: the sliding window over which maxRecoveries and each rank's back-off are counted (status.recentRecoveries); 0 counts over the job's lifetime.") \
  F(int64_t,                recovery_backoff_seconds,     "recoveryBackoffSeconds",    10,           "format: int64, minimum: 0, maximum: 86400", "training.network.recovery live: a rank lost again within recoveryWindowSeconds is recreated this long after its loss, doubled for each further loss of that rank (its first loss is recreated at once); 0 turns the back-off off.") \
  F(int64_t,                recovery_backoff_max_seconds, "recoveryBackoffMaxSeconds", 300,          "format: int64, minimum: 0, maximum: 86400", "training.network.recovery live: the cap of a rank's recreation back-off.") \
  F(std::optional<int64_t>, active_deadline_seconds,      "activeDeadlineSeconds",     std::nullopt, "format: int64, minimum: 1", "Fail the job (DeadlineExceeded) when it has been active this long.") \
  F(std::optional<int64_t>, ttl_seconds_after_finished,   "ttlSecondsAfterFinished",   std::nullopt, "minimum: 0", "Delete the PPUJob this long after it Succeeded or Failed.") \
  F(std::string,            clean_pod_policy,             "cleanPodPolicy",            clean_pod_policy::kRunning, "enum: [All, Running, None]", "Pods to delete when the job finishes (All, only Running ones, None).") \
  F(bool,                   suspend,                      "suspend",                   false,        "", "true deletes the pods and marks the job Suspended; false recreates them.")

// spec.export: the model ppu-export writes onto the checkpoint volume once the job Succeeded.
// format and dtype are ppu-export's choices (core/export_result.h; CrdDocument.ExportChoicesArePpuExportsOwn).
// resources null: the ranks' cpu and memory (export_job.h).
#define PPU_EXPORT_SPEC_FIELDS(F) \
  F(std::string, format,                  "format",                export_choice::kHf,   "enum: [hf, ppu]", "hf: a Hugging Face model directory (config.json, model.safetensors, tokenizer, model card) that transformers and vLLM load; ppu: ppu-export's own layout") \
  F(std::string, dtype,                   "dtype",                 export_choice::kFp32, "enum: [fp32, bf16]", "weights' dtype; bf16 is rounded from the fp32 global parameters") \
  F(std::string, path,                    "path",                  "model", "minLength: 1, maxLength: 253", "the model's directory, relative to the checkpoint volume's root (in pods: /checkpoints/<path>)") \
  F(int64_t,     active_deadline_seconds, "activeDeadlineSeconds", 3600,    "format: int64, minimum: 1", "The export Job fails (ExportFailed) when it has run this long.") \
  F(json,        resources,               "resources",             json(),  "type: object, properties: {limits: {type: object, x-kubernetes-preserve-unknown-fields: true}, requests: {type: object, x-kubernetes-preserve-unknown-fields: true}}", "corev1 ResourceRequirements of the export container; default the ranks' cpu and memory (no GPU).")

// spec.elastic (docs/RESIZE.md): a live job whose size may change while it runs. Its pods' WORLD_SIZE
// is maxReplicas (its slots); spec.replicas, within [minReplicas, maxReplicas], is how many slots
// are filled, and `kubectl scale ppj` (the scale subresource) changes it at the job's next round
// boundary: new slots join as replacements do, the highest retire (exit 0).
#define PPU_ELASTIC_SPEC_FIELDS(F) \
  F(int, min_replicas, "minReplicas", 1, "required: true, format: int32, minimum: 1, maximum: 4096", "The fewest ranks the job trains with as a whole (the runtime's network.min_ranks): fewer is a degraded job; ranks missing above it (Pending, being replaced) are not. A multiple of training.slicing.slices.") \
  F(int, max_replicas, "maxReplicas", 1, "required: true, format: int32, minimum: 1, maximum: 4096", "The job's slots: every pod's WORLD_SIZE, the largest spec.replicas. A multiple of training.slicing.slices.")
// clang-format on

struct RunPolicy {
  PPU_RUN_POLICY_FIELDS(PPU_DECLARE_FIELD)
};
struct ExportSpec {
  PPU_EXPORT_SPEC_FIELDS(PPU_DECLARE_FIELD)
};
struct ElasticSpec {
  PPU_ELASTIC_SPEC_FIELDS(PPU_DECLARE_FIELD)
};

// clang-format off
// spec's own fields. masterPort: the rendezvous port of the runtime's contract.
#define PPU_JOB_SPEC_FIELDS(F) \
  F(int,                       replicas,     "replicas",    1,                           "required: true, format: int32, minimum: 1, maximum: 4096", "K, the number of ranks (one pod each). Must be a multiple of training.slicing.slices; with spec.elastic, within [minReplicas, maxReplicas] and mutable while the job runs (kubectl scale ppj).") \
  F(std::optional<ElasticSpec>, elastic,     "elastic",     std::nullopt,                "", "A live job that may be resized while it runs (docs/RESIZE.md): its pods' WORLD_SIZE is maxReplicas, spec.replicas ranks of it are filled, and a change of spec.replicas within the range takes effect at a round boundary. Needs training.network.recovery live.") \
  F(std::string,               image,        "image",       "",                          "required: true, minLength: 1", "Container image that provides `ppu-train`.") \
  F(int,                       master_port,  "masterPort",  contract::kRendezvousPort,   "minimum: 1, maximum: 65535", "MASTER_PORT of the c10d TCPStore on rank 0.") \
  F(int,                       metrics_port, "metricsPort", 9100,                        "minimum: 1, maximum: 65535", "Port of each rank's /metrics (set as PPU_METRICS_PORT and as the container port named metrics).") \
  F(std::optional<std::string>, checkpoint_secret, "checkpointSecret", std::nullopt,      "minLength: 1, maxLength: 253", "A Secret of the job's namespace whose keys become the environment of the rank pods and of the export Job (envFrom): AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, if any, AWS_SESSION_TOKEN, for checkpoints in S3-compatible storage (training.checkpoint.dir s3://BUCKET/PREFIX, the service in training.checkpoint.s3_endpoint; docs/OBJECT_STORAGE.md). With an s3:// checkpoint.dir the ranks write there instead of the checkpoint volume, and the export Job reads from there.") \
  F(std::optional<ExportSpec>, model_export, "export",      std::nullopt,                "", "Export the trained model when the job Succeeds: the operator runs `ppu-export` once, as the batch/v1 Job <job>-export from spec.image with the ranks' volumes and security contexts, and it writes the model of the latest checkpoint to `path` on the checkpoint volume. Condition Exported (column EXPORT) and status.export report it. Deleting the PPUJob deletes that Job, never the model.") \
  F(RunPolicy,                 run_policy,   "runPolicy",   RunPolicy{},                 "", "")
// clang-format on

// spec.training.network.recovery: what a lost rank costs (docs/OPERATOR.md, "Live recovery").
// Gang: every rank stops and the gang restarts; Live: the other ranks go on and only the lost
// rank's pod is recreated, against a rendezvous store that lives outside the ranks. The
// runtime's own choice (core/config.h), read with its names and default.
using Recovery = ppu::Recovery;

// Kueue's labels on a job (docs/OPERATOR.md, "Queueing with Kueue").
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";

struct JobSpec {
  std::string ns, name, uid;
  int64_t generation = 0;
  PPU_JOB_SPEC_FIELDS(PPU_DECLARE_FIELD)  // model_export nullopt: spec.export absent, nothing is exported
  // spec.training as the ranks will parse it (render_training_config: the ConfigMap's text);
  // nullopt when it does not parse (the CRD's rules refuse most such sections at admission). The
  // one source of every training setting the operator acts on (recovery, slices, notice_s).
  std::optional<Config> training;
  Recovery recovery = Recovery::Gang;  // training's network.recovery; the runtime's default without one
  // Kueue: the labels kueue.x-k8s.io/queue-name (a LocalQueue of the job's namespace) and
  // kueue.x-k8s.io/priority-class (a WorkloadPriorityClass); empty when absent.
  std::string queue_name, priority_class;
  json spec;  // the raw spec, for passthrough fields (resources, volumes, scheduling, training)
};

PPU_FIELD_LIST(RunPolicy, PPU_RUN_POLICY_FIELDS, true)
PPU_FIELD_LIST(ExportSpec, PPU_EXPORT_SPEC_FIELDS, true)
PPU_FIELD_LIST(ElasticSpec, PPU_ELASTIC_SPEC_FIELDS, true)
PPU_FIELD_LIST(JobSpec, PPU_JOB_SPEC_FIELDS, true)

JobSpec parse_job(const json& job);

// The job's slots, every pod's WORLD_SIZE: spec.elastic.maxReplicas, else spec.replicas.
int slots(const JobSpec& j);
// The fewest ranks the job trains with as a whole: spec.elastic.minReplicas, else spec.replicas.
int required_replicas(const JobSpec& j);

std::string service_name(const JobSpec& j);
std::string config_map_name(const JobSpec& j);
std::string pod_name(const JobSpec& j, int rank);
std::string network_policy_name(const JobSpec& j);  // <job>
std::string export_job_name(const JobSpec& j);      // <job>-export
// <job>.export: with a dot, which no PPUJob that can run has in its name (its pods' hostnames
// <job>-rank-<k> are DNS labels), so no job's own NetworkPolicy <job> can take this name.
std::string export_network_policy_name(const JobSpec& j);
// <namespace>-<job>-<first 8 characters of the uid>: unique per job object, stable across restarts.
std::string run_id(const JobSpec& j);
// <job>-rendezvous: the pod and the Service of the live-recovery store.
std::string rendezvous_name(const JobSpec& j);
// The store the ranks rendezvous at: rank 0 (<job>-rank-0.<job>.<ns>.svc, spec.masterPort) with
// recovery gang; the rendezvous Service (<job>-rendezvous.<ns>.svc, contract::kRendezvousPort)
// with recovery live.
std::string master_addr(const JobSpec& j);
// training.checkpoint.dir names an S3 location (s3://...): the ranks and the export Job use it
// instead of the checkpoint volume at /checkpoints.
bool checkpoints_in_object_storage(const JobSpec& j);
// Where the ranks' checkpoints are: training.checkpoint.dir when in S3, else /checkpoints.
std::string checkpoint_location(const JobSpec& j);
int master_port(const JobSpec& j);
// Rank encoded in a pod's ppu.dev/rank label; nullopt when absent or malformed.
std::optional<int> pod_rank(const json& pod);

}  // namespace ppu::op
