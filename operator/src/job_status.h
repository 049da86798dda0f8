// Reading pods the way the controller needs them: whether a rank pod is active, done, lost or
// failed with an exit code that must not be retried (2 = configuration error, 4 = no checkpoint
// or data: docs/METRICS.md). Plus helpers to keep status.conditions in metav1.Condition shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ppu::op {

using json = nlohmann::json;

std::string pod_phase(const json& pod);
bool pod_terminating(const json& pod);  // has a deletionTimestamp
bool pod_ready(const json& pod);        // phase Running and condition Ready=True

struct FatalExit {
  int exit_code = 0;
  std::string message;  // the container's termination message (what ppu-train wrote last)
};
// The termination message of the pod's (first) terminated container, "" if none.
std::string termination_message(const json& pod);

// A container of the pod terminated with exit code 2 or 4.
std::optional<FatalExit> fatal_exit(const json& pod);
// Why a pod counts as failed ("Evicted", "NodeLost", "Error: exit code 1", ...), for events.
std::string failure_reason(const json& pod);

// Sets condition `type` in status.conditions; keeps lastTransitionTime when status is unchanged.
void set_condition(json& status, const std::string& type, const std::string& cond_status, const std::string& reason,
                   const std::string& message, int64_t now, int64_t generation);
const json* find_condition(const json& status, const std::string& type);

}  // namespace ppu::op
