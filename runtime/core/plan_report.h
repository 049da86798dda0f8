// PlanReport: everything `ppu-plan` prints for a config — parameters, memory by component,
// FLOPs per step and per token, the communication model and optionally the Figure 2
// wall-clock simulation — as one JSON object (ppu-plan --json) and as a table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"

namespace ppu {

struct PlanOptions {
  std::vector<double> bandwidths_gb_per_s;  // empty = no wall-clock simulation
  double step_seconds = 0;                  // compute time of a full-backward step (Figure 2)
  double ddp_steps = 0;                     // steps DDP needs to the target loss (0: train.steps)
  double token_ratio = 44.0 / 26.0;         // paper: low-comm needs 44B vs DDP's 26B tokens
};

nlohmann::json plan_report(const Config& config, const PlanOptions& options = {});
std::string format_plan(const nlohmann::json& report);

}  // namespace ppu
