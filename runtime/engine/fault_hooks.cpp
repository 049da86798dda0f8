#include "engine/fault_hooks.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/env.h"
#include "core/exit_status.h"

namespace ppu {

namespace {
// A hung thread or a stalled write, for good.
[[noreturn]] void stall_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
}  // namespace

FaultHooks::FaultHooks(int job_rank, bool replacement) : rank_(job_rank) {
  if (const char* dir = std::getenv("PPU_TEST_FAULT_TRIGGER"); dir && *dir) {
    trigger_ = std::string(dir) + "/hang-" + std::to_string(job_rank);
    stall_trigger_ = std::string(dir) + "/stall-checkpoint-" + std::to_string(job_rank);
  }
  try {
    pause_ms_ = env_int("PPU_TEST_STEP_PAUSE_MS", 0);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  if (pause_ms_ < 0)
    throw ConfigError("PPU_TEST_STEP_PAUSE_MS=" + std::to_string(pause_ms_) + " is not a number of milliseconds");
  const char* spec = std::getenv("PPU_TEST_FAULT");
  if (!spec || replacement) return;
  std::stringstream all(spec);
  for (std::string item; std::getline(all, item, ',');) {
    std::stringstream parts(item);
    std::string kind, rank, step, ms;
    const bool timed = std::getline(parts, kind, ':') && (kind == "late" || kind == "slow");  // with <ms>
    const bool known = kind == "hang" || kind == "flip" || kind == "stop" || kind == "stall-checkpoint" ||
                       kind == "die-forming" || timed;
    if (!known || !std::getline(parts, rank, ':') || !std::getline(parts, step, timed ? ':' : '\n') ||
        (timed && !std::getline(parts, ms)))
      throw ConfigError(
          "PPU_TEST_FAULT: '" + item +
          "' is not hang|flip|stall-checkpoint|die-forming:<rank>:<step> or late|slow:<rank>:<step>:<ms>");
    try {
      const Fault fault{kind, std::stoll(step), timed ? std::stoll(ms) : 0};
      if (std::stoi(rank) == job_rank) faults_.push_back(fault);
    } catch (const std::exception&) {
      throw ConfigError("PPU_TEST_FAULT: '" + item + "' needs integer rank, step" + (timed ? " and ms" : ""));
    }
  }
}

void FaultHooks::before_step(int64_t step, const std::function<void()>& flip_theta) const {
  if (pause_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
  std::error_code ignored;  // removing the file is what claims the hang: one file, one hang
  if (!trigger_.empty() && std::filesystem::remove(trigger_, ignored)) {
    spdlog::warn("PPU_TEST_FAULT_TRIGGER: the training thread of rank {} hangs before step {}", rank_, step);
    stall_forever();
  }
  for (const auto& f : faults_) {
    if (f.kind == "slow" && step >= f.step) {
      if (step == f.step)
        spdlog::warn("PPU_TEST_FAULT: rank {} sleeps {} ms before each step from step {}", rank_, f.ms, step);
      std::this_thread::sleep_for(std::chrono::milliseconds(f.ms));
      continue;
    }
    if (f.step != step || f.kind == "stall-checkpoint" || f.kind == "die-forming" || f.kind == "slow") continue;
    if (f.kind == "flip") {
      spdlog::warn("PPU_TEST_FAULT: rank {} changes an element of its global θ before step {}", rank_, step);
      flip_theta();
      continue;
    }
    if (f.kind == "stop") {  // a frozen VM: every thread, the heartbeat's included
      spdlog::warn("PPU_TEST_FAULT: rank {} stops itself (SIGSTOP) before step {}", rank_, step);
      spdlog::default_logger()->flush();
      std::raise(SIGSTOP);
      continue;
    }
    if (f.kind == "late") {
      spdlog::warn("PPU_TEST_FAULT: the training thread of rank {} sleeps {} ms before step {}", rank_, f.ms, step);
      std::this_thread::sleep_for(std::chrono::milliseconds(f.ms));
      continue;
    }
    spdlog::warn("PPU_TEST_FAULT: the training thread of rank {} hangs before step {}", rank_, step);
    stall_forever();
  }
}

void FaultHooks::before_checkpoint_write(int64_t step) const {
  std::error_code ignored;
  if (!stall_trigger_.empty() && std::filesystem::remove(stall_trigger_, ignored)) {
    spdlog::warn("PPU_TEST_FAULT_TRIGGER: the checkpoint write of rank {} at step {} stalls", rank_, step);
    stall_forever();
  }
  for (const auto& f : faults_) {
    if (f.kind != "stall-checkpoint" || step < f.step) continue;
    spdlog::warn("PPU_TEST_FAULT: the checkpoint write of rank {} at step {} stalls", rank_, step);
    stall_forever();
  }
}

void FaultHooks::before_forming(int64_t generation) const {
  for (const auto& f : faults_) {
    if (f.kind != "die-forming" || generation < f.step) continue;
    spdlog::warn("PPU_TEST_FAULT: rank {} is killed before it forms generation {}", rank_, generation);
    spdlog::default_logger()->flush();
    std::raise(SIGKILL);
  }
}

}  // namespace ppu
