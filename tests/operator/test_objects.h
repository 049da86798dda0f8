// Builders of PPUJob, Pod and export Job JSON for the pure unit tests: what the informers would hold.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export_job.h"
#include "job_spec.h"
#include "object_builder.h"

namespace ppu::op::testing {

inline json make_job(const std::string& name = "demo", int replicas = 4, json status = json::object()) {
  json job = {{"apiVersion", "ppu.dev/v1alpha1"},
              {"kind", "PPUJob"},
              {"metadata",
               {{"name", name},
                {"namespace", "ns1"},
                {"uid", "0123456789abcdef"},
                {"generation", 1},
                {"resourceVersion", "42"}}},
              {"spec",
               {{"replicas", replicas},
                {"image", "ppu:test"},
                {"training", {{"model", {{"preset", "tiny"}}}, {"slicing", {{"mode", "mlp"}, {"slices", 2}}}}},
                {"runPolicy", {{"backoffLimit", 2}, {"cleanPodPolicy", "Running"}}}}}};
  if (!status.empty()) job["status"] = status;
  return job;
}

// The pod the operator would have created for `rank`, in `phase`.
inline json make_pod(const json& job, int rank, const std::string& phase) {
  json pod = build_pod(parse_job(job), rank, 0);
  pod["metadata"]["uid"] = "pod-" + std::to_string(rank);
  pod["status"] = {{"phase", phase}};
  if (phase == "Running") pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  return pod;
}

inline json with_exit(json pod, int code, const std::string& message) {
  pod["status"]["phase"] = code == 0 ? "Succeeded" : "Failed";
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "ppu-train"}, {"state", {{"terminated", {{"exitCode", code}, {"message", message}}}}}}});
  return pod;
}

inline std::vector<json> gang(const json& job, int k, const std::string& phase) {
  std::vector<json> pods;
  for (int r = 0; r < k; ++r) pods.push_back(make_pod(job, r, phase));
  return pods;
}

// spec.export (default settings unless given) on a job whose checkpoints are on the PVC "ckpt".
inline json with_export(json job, json spec_export = json::object()) {
  job["spec"]["checkpoint"] = {{"claimName", "ckpt"}};
  job["spec"]["export"] = std::move(spec_export);
  return job;
}

// The export Job the operator would have created for `job`, as the Job controller left it:
// `condition` "" (running), "Complete" or "Failed" (with the Job controller's reason).
inline json make_export_job(const json& job, const std::string& condition = "") {
  json x = build_export_job(parse_job(job));
  x["metadata"]["uid"] = "export-uid-1";
  x["status"] = json::object();
  if (condition == "Complete") x["status"]["conditions"] = json::array({{{"type", "Complete"}, {"status", "True"}}});
  else if (condition == "Failed")
    x["status"]["conditions"] =
        json::array({{{"type", "Failed"},
                      {"status", "True"},
                      {"reason", "PodFailurePolicy"},
                      {"message", "Container ppu-export for pod ns1/x failed with exit code 4"}}});
  return x;
}

// A pod of `export_job` that ended with `exit_code` (0: Succeeded) and termination message `message`.
inline json make_export_pod(const json& export_job, int exit_code, const std::string& message,
                            const std::string& created = "2027-01-15T08:00:00Z", const std::string& name = "x-1") {
  const json& md = export_job["metadata"];
  json pod = {{"metadata",
               {{"name", md["name"].get<std::string>() + "-" + name},
                {"namespace", md["namespace"]},
                {"uid", "pod-" + name},
                {"creationTimestamp", created},
                {"labels", export_job["spec"]["template"]["metadata"]["labels"]},
                {"ownerReferences", json::array({{{"apiVersion", "batch/v1"},
                                                  {"kind", "Job"},
                                                  {"name", md["name"]},
                                                  {"uid", md["uid"]},
                                                  {"controller", true}}})}}},
              {"status",
               {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                {"containerStatuses",
                 json::array({{{"name", kExportContainer},
                               {"state", {{"terminated", {{"exitCode", exit_code}, {"message", message}}}}}}})}}}};
  return pod;
}

}  // namespace ppu::op::testing
