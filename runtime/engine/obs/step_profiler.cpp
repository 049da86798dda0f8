#include "engine/obs/step_profiler.h"

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <utility>

namespace ppu {

namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

std::set<ActivityType> activities(const torch::Device& device) {
  std::set<ActivityType> a{ActivityType::CPU};
  if (device.is_cuda()) a.insert(ActivityType::CUDA);
  return a;
}

// A LibTorch built without Kineto (Debian's 1.13) still collects the operators but cannot
// save them: the same Chrome trace format, written here from the events (CPU operators only).
void write_operator_trace(const profiler::ProfilerResult& result, const std::string& path) {
  auto events = nlohmann::json::array();
  for (const auto& e : result.events()) {
#if TORCH_VERSION_MAJOR >= 2
    const double ts = static_cast<double>(e.startNs()) / 1e3;
    const double dur = static_cast<double>(e.durationNs()) / 1e3;
#else
    const auto ts = static_cast<double>(e.startUs());
    const auto dur = static_cast<double>(e.durationUs());
#endif
    events.push_back({{"ph", "X"},
                      {"cat", e.deviceType() == c10::DeviceType::CPU ? "cpu_op" : "kernel"},
                      {"name", e.name()},
                      {"ts", ts},
                      {"dur", dur},
                      {"pid", 0},
                      {"tid", e.startThreadId()}});
  }
  std::ofstream out(path);
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

bool lacks_kineto(const c10::Error& e) { return std::string(e.what()).find("USE_KINETO") != std::string::npos; }

}  // namespace

StepProfiler::StepProfiler(std::string dir, int64_t first_step, int steps, int rank, torch::Device device)
    : dir_(std::move(dir)), first_(first_step), last_(first_step + steps - 1), rank_(rank), device_(device) {}

StepProfiler::~StepProfiler() {
  if (!active_) return;
  try {
    stop_and_write();
  } catch (const std::exception& e) {
    spdlog::warn("profiler: trace not written: {}", e.what());
  }
}

void StepProfiler::before_step(int64_t step) {
  if (dir_.empty() || step != first_ || active_) return;
  std::filesystem::create_directories(dir_);
  const ProfilerConfig config(ProfilerState::KINETO);
  // Kineto needs its activities prepared (CUPTI set up) before the trace starts, as
  // torch.profiler does.
  profiler::prepareProfiler(config, activities(device_));
  profiler::enableProfiler(config, activities(device_));
  active_ = true;
}

void StepProfiler::after_step(int64_t step) {
  if (active_ && step >= last_) stop_and_write();
}

void StepProfiler::stop_and_write() {
  active_ = false;
  if (device_.is_cuda()) torch::cuda::synchronize(device_.has_index() ? device_.index() : -1);
  const auto result = profiler::disableProfiler();
  const auto path = (std::filesystem::path(dir_) / ("rank" + std::to_string(rank_) + "-steps" + std::to_string(first_) +
                                                    "-" + std::to_string(last_) + ".json"))
                        .string();
  try {
    result->save(path);
  } catch (const c10::Error& e) {
    if (!lacks_kineto(e)) throw;
    write_operator_trace(*result, path);
  }
  written_ = path;
  spdlog::info("profiler: steps {}-{} traced to {}", first_, last_, path);
}

}  // namespace ppu
