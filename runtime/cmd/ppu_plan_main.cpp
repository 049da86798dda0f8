// ppu-plan: prints the paper's cost model for a config (parameters, memory by component,
// FLOPs, communication, and the Figure 2 wall-clock simulation) as a table or JSON.
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/config.h"
#include "core/exit_status.h"
#include "core/plan_report.h"

namespace {

// Measures the compute time of a full-backward step with a short single-rank `ppu-train` run.
double measure_step_seconds(const std::string& config_path, const std::vector<std::string>& overrides, int steps) {
  const auto dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  auto train = dir / "ppu-train";                                                    // installed side by side
  if (!std::filesystem::exists(train)) train = dir / ".." / "engine" / "ppu-train";  // build tree
  if (!std::filesystem::exists(train))
    throw std::runtime_error("--measure-steps needs ppu-train next to ppu-plan (looked in " + dir.string() + ")");
  const auto summary =
      std::filesystem::temp_directory_path() / ("ppu-plan-measure-" + std::to_string(getpid()) + ".json");
  std::string cmd = "env -u RANK -u WORLD_SIZE '" + train.string() + "'";
  if (!config_path.empty()) cmd += " --config '" + config_path + "'";
  for (const auto& o : overrides) cmd += " --set '" + o + "'";
  cmd += " --set method=diloco --set slicing.mode=none --set checkpoint.dir= --set metrics.port=0";
  cmd += " --set train.eval_every=0 --set train.eval_batches=1 --set train.steps=" + std::to_string(steps);
  cmd += " --summary '" + summary.string() + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("measuring run failed: " + cmd);
  std::ifstream in(summary);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(summary);
  return j.at("step_seconds").get<double>();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-plan: the paper's cost model (memory, FLOPs, communication, wall-clock) for a PPU config"};
  std::string config_path;
  std::vector<std::string> overrides;
  bool json = false;
  std::vector<double> bandwidths;
  ppu::PlanOptions options;
  int measure_steps = 0;
  app.add_option("--config", config_path, "YAML training config (configs/*.yaml)")->check(CLI::ExistingFile);
  app.add_option("--set", overrides, "override a config key: dotted.key=value (repeatable)");
  app.add_flag("--json", json, "print one JSON object instead of a table");
  app.add_option("--bandwidths", bandwidths, "per-link GB/s values for the Figure 2 simulation")->delimiter(',');
  app.add_option("--step-seconds", options.step_seconds, "compute time of one full-backward step (Figure 2)");
  app.add_option("--measure-steps", measure_steps,
                 "measure the step time with a short ppu-train run of this many steps");
  app.add_option("--ddp-steps", options.ddp_steps, "steps DDP needs to reach the target loss (default train.steps)");
  app.add_option("--token-ratio", options.token_ratio,
                 "tokens the low-comm method needs relative to DDP (paper: 44/26)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ppu::usage_exit_code(app.exit(e));
  }
  try {
    const ppu::Config config = ppu::load_config(config_path, overrides);
    if (!bandwidths.empty()) {
      if (measure_steps > 0) options.step_seconds = measure_step_seconds(config_path, overrides, measure_steps);
      if (options.step_seconds <= 0)
        throw ppu::ConfigError("--bandwidths needs --step-seconds > 0 or --measure-steps > 0");
      options.bandwidths_gb_per_s = bandwidths;
    }
    const auto report = ppu::plan_report(config, options);
    std::cout << (json ? report.dump(2) + "\n" : ppu::format_plan(report));
    return 0;
  } catch (const std::exception& e) {
    const auto status = ppu::exit_status_of(e);
    std::cerr << "ppu-plan: " << status.message << "\n";
    return status.code;
  }
}
