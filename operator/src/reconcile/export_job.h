// The export of a Succeeded PPUJob's model (spec.export), as objects: the batch/v1 Job
// <job>-export that runs `ppu-export --checkpoint /checkpoints --out /checkpoints/<path>` once
// (--checkpoint s3://... when the ranks write there),
// from spec.image, with the rank pods' volumes, security contexts and scheduling (object_builder's
// functions, not copies), and the NetworkPolicy <job>.export that admits no ingress to its pod.
// Pure functions. The Job is owned by the PPUJob, so garbage collection removes it with the job;
// the model it writes lies on the checkpoint volume, and nothing here ever deletes it.
#pragma once

#include <string>

#include "reconcile/job_spec.h"

namespace ppu::op {

inline constexpr const char* kExportContainer = contract::kExportBinary;
// On the Job: the settings it exports with (export_settings); a Job for other settings is replaced.
inline constexpr const char* kExportSettingsAnnotation = "ppu.dev/export-settings";
// Pod failures the Job retries (crash, eviction). Exit codes 2 and 4 (usage, no valid checkpoint)
// fail it at once through its podFailurePolicy: a retry cannot fix them.
inline constexpr int kExportBackoffLimit = 2;

// The settings that decide which model is written: "format=hf,dtype=fp32,path=model".
std::string export_settings(const ExportSpec& e);
// The model's directory inside the pod: /checkpoints/<path>.
std::string export_out_dir(const ExportSpec& e);
// Whether spec.checkpoint outlives the rank pods: a claimName, or a volumeSource other than
// emptyDir and ephemeral (which go with the pod). The CRD rejects spec.export otherwise.
bool checkpoint_volume_persists(const JobSpec& j);
// The checkpoint volume's PersistentVolumeClaim (claimName or volumeSource.persistentVolumeClaim), "" if none.
std::string checkpoint_claim_name(const JobSpec& j);

// Requires j.model_export. ppu-export's arguments: --checkpoint /checkpoints, or the training
// section's s3:// checkpoint.dir with its --s3-* settings; --out /checkpoints/<path>.
json export_args(const JobSpec& j);
// Requires j.model_export. spec.checkpointSecret's keys in its environment. Resources: spec.export.resources, else the
// ranks' cpu and memory requests and limits only (a GPU or other device the ranks asked for is not needed to convert).
json build_export_job(const JobSpec& j);
// Selects the export pod (label ppu.dev/export=<job>) with policy type Ingress and no rule.
json build_export_network_policy(const JobSpec& j);

}  // namespace ppu::op
