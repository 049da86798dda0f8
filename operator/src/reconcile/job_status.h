// Reading pods the way the controller needs them: whether a rank pod is active, done, lost or
// failed with an exit code that must not be retried (2 = configuration error, 4 = no checkpoint
// or data: docs/METRICS.md). The PPUJob's own status is ppujob_status.h.
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

// The exit code of the pod's (first) terminated container; nullopt when none terminated
// (evicted before starting, node lost, still running).
std::optional<int> exit_code(const json& pod);

// A container of the pod terminated with exit code 2 or 4.
std::optional<FatalExit> fatal_exit(const json& pod);
// The scheduler found no node for the pod: its PodScheduled condition is False with reason
// Unschedulable. `message` is the scheduler's ("0/3 nodes are available: 3 Insufficient cpu. ..."),
// `since` the condition's lastTransitionTime in Unix seconds when it is readable.
struct Unscheduled {
  std::string message;
  std::optional<int64_t> since;
};
std::optional<Unscheduled> why_unschedulable(const json& pod);

// Why a pod counts as failed ("Evicted", "NodeLost", "Error: exit code 1", ...), for events.
std::string failure_reason(const json& pod);

}  // namespace ppu::op
