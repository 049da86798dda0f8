#include "reconcile/export_job.h"

#include "core/job_contract.h"
#include "kube/kube_words.h"
#include "kube/typed_object.h"
#include "reconcile/object_builder.h"
#include "reconcile/spec_passthrough_keys.h"

namespace ppu::op {

namespace {

// requests and limits reduced to cpu and memory; null when nothing is left.
json cpu_and_memory(const json& resources) {
  json out = json::object();
  for (const char* part : {"requests", "limits"}) {
    if (!resources.is_object() || !resources.contains(part) || !resources[part].is_object()) continue;
    for (const char* r : {"cpu", "memory"})
      if (resources[part].contains(r)) out[part][r] = resources[part][r];
  }
  return out.empty() ? json() : out;
}

}  // namespace

std::string export_settings(const ExportSpec& e) {
  return "format=" + e.format + ",dtype=" + e.dtype + ",path=" + e.path;
}

std::string export_out_dir(const ExportSpec& e) { return std::string(kCheckpointPath) + "/" + e.path; }

bool checkpoint_volume_persists(const JobSpec& j) {
  const json c = j.spec.value(passthrough::kCheckpoint, json::object());
  if (!c.is_object()) return false;
  if (c.contains("claimName")) return true;
  const json v = c.value("volumeSource", json::object());
  // An empty volumeSource is an emptyDir too (object_builder's fallback).
  return v.is_object() && !v.empty() && !v.contains("emptyDir") && !v.contains("ephemeral");
}

std::string checkpoint_claim_name(const JobSpec& j) {
  const json c = j.spec.value(passthrough::kCheckpoint, json::object());
  if (!c.is_object()) return "";
  if (c.contains("claimName") && c["claimName"].is_string()) return c["claimName"];
  const json v = c.value("volumeSource", json::object());
  if (v.is_object() && v.contains("persistentVolumeClaim") && v["persistentVolumeClaim"].is_object())
    return v["persistentVolumeClaim"].value("claimName", std::string());
  return "";
}

// ppu-export's arguments: the checkpoints where the ranks wrote them (the volume, or the S3
// location with the training section's service settings), the model onto the volume.
json export_args(const JobSpec& j) {
  const ExportSpec& e = j.model_export.value();
  json args = json::array({"--checkpoint", checkpoint_location(j)});
  if (checkpoints_in_object_storage(j)) {
    const CheckpointConfig& c = j.training->checkpoint;
    if (!c.s3_endpoint.empty()) args.insert(args.end(), {"--s3-endpoint", c.s3_endpoint});
    if (!c.s3_region.empty()) args.insert(args.end(), {"--s3-region", c.s3_region});
    if (!c.s3_path_style) args.push_back("--s3-virtual-hosted");
  }
  args.insert(args.end(), {"--out", export_out_dir(e), "--format", e.format, "--dtype", e.dtype});
  return args;
}

json build_export_job(const JobSpec& j) {
  const ExportSpec& e = j.model_export.value();
  const JobVolumes v = job_volumes(j);
  json container = {{"name", kExportContainer},
                    {"image", j.image},
                    {"command", json::array({contract::kExportBinary})},
                    {"args", export_args(j)},
                    {"volumeMounts", v.mounts},
                    {"terminationMessagePath", contract::kTerminationLog},
                    {"terminationMessagePolicy", kTerminationMessagePolicy},
                    {"securityContext", container_security_context(j)}};
  const json resources =
      e.resources.is_object() ? e.resources : cpu_and_memory(j.spec.value(passthrough::kResources, json()));
  if (resources.is_object()) container["resources"] = resources;
  if (const json from = checkpoint_secret_env(j); !from.empty()) container["envFrom"] = from;
  if (j.spec.contains(passthrough::kImagePullPolicy))
    container["imagePullPolicy"] = j.spec[passthrough::kImagePullPolicy];

  json pod = pod_settings(j);
  pod["restartPolicy"] = "Never";  // podFailurePolicy needs it; the Job makes a new pod per retry
  pod["containers"] = json::array({container});
  pod["volumes"] = v.volumes;

  json md = object_metadata(j, export_job_name(j));
  md["annotations"] = {{kExportSettingsAnnotation, export_settings(e)}};
  namespace ec = contract::exit_code;
  json failure_policy = {
      {"rules", json::array({{{"action", "FailJob"},
                              {"onExitCodes",
                               {{"containerName", kExportContainer},
                                {"operator", "In"},
                                {"values", json::array({ec::kConfigError, ec::kDataError})}}}},
                             // Evicted or preempted: not the export's fault, not a retry used up.
                             {{"action", "Ignore"},
                              {"onPodConditions", json::array({{{"type", kube_condition::kDisruptionTarget},
                                                                {"status", condition_status::kTrue}}})}}})}};
  return typed_object(ResourceKind::Job,
                      {{"metadata", md},
                       {"spec",
                        {{"backoffLimit", kExportBackoffLimit},
                         {"activeDeadlineSeconds", e.active_deadline_seconds},
                         {"podFailurePolicy", failure_policy},
                         {"template", {{"metadata", {{"labels", {{kExportLabel, j.name}}}}}, {"spec", pod}}}}}});
}

json build_export_network_policy(const JobSpec& j) {
  // No ingress rule at all: ppu-export listens on nothing and nobody needs to reach it. (An empty
  // `ingress: []` means the same but the server drops it, and the stored spec would differ.)
  return typed_object(
      ResourceKind::NetworkPolicy,
      {{"metadata", object_metadata(j, export_network_policy_name(j))},
       {"spec",
        {{"podSelector", {{"matchLabels", {{kExportLabel, j.name}}}}}, {"policyTypes", json::array({"Ingress"})}}}});
}

}  // namespace ppu::op
