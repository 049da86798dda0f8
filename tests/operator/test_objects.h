// Builders of PPUJob and Pod JSON for the pure unit tests: what the informers would hold.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

}  // namespace ppu::op::testing
