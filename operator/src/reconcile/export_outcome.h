// Reading an export back (export_job.h): the state of its batch/v1 Job (condition Complete or
// Failed set True by the Job controller), and what ppu-export said in its pod's termination
// message: on success its export result (core/export_result.h, parse_export_result), on failure
// its error line (or, if it died without writing one, the tail of its log).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/export_result.h"

namespace ppu::op {

using json = nlohmann::json;

enum class ExportState { Running, Succeeded, Failed };
ExportState export_state(const json& job);
// "<reason>: <message>" of the Job's Failed condition ("" when there is none).
std::string export_job_failure(const json& job);

// What an export pod's container said as it ended.
struct ExportPodReport {
  int exit_code = 0;
  std::string message;  // its termination message
};
// The newest (by creationTimestamp) of `pods` in phase `phase` whose container terminated.
std::optional<ExportPodReport> last_export_report(const std::vector<json>& pods, const std::string& phase);
// One of `pods` is still Pending or Running and not being deleted: its end has not reached the
// cache yet, though its Job may already say Complete or Failed (two watches, no common order).
bool export_pod_unsettled(const std::vector<json>& pods);
// The Job's status.completionTime (Unix seconds), if set.
std::optional<int64_t> export_completion_time(const json& job);

}  // namespace ppu::op
