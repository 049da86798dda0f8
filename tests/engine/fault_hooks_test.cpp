// FaultHooks (engine/fault_hooks.h), the test-only faults: what PPU_TEST_FAULT and
// PPU_TEST_STEP_PAUSE_MS accept, what they refuse (a ConfigError naming the variable), that a
// pause holds each step, that a late rank sleeps at its step only and a slow one at every step
// from its step on.
#include "engine/fault_hooks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/exit_status.h"

namespace ppu {
namespace {

// Sets one environment variable for the scope, unsets it after.
struct ScopedEnv {
  ScopedEnv(const char* variable, const char* value) : name(variable) { setenv(variable, value, 1); }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

void expect_refused(const char* name, const char* value) {
  const ScopedEnv env(name, value);
  try {
    FaultHooks hooks(0, false);
    ADD_FAILURE() << name << "=" << value << " was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(FaultHooks, RefusesMalformedSpecsNamingTheVariable) {
  expect_refused("PPU_TEST_FAULT", "stall:1:5");
  expect_refused("PPU_TEST_FAULT", "hang:one:5");
  expect_refused("PPU_TEST_FAULT", "late:1:5");
  expect_refused("PPU_TEST_FAULT", "late:1:5:soon");
  expect_refused("PPU_TEST_FAULT", "slow:1:5");
  expect_refused("PPU_TEST_STEP_PAUSE_MS", "soon");
  expect_refused("PPU_TEST_STEP_PAUSE_MS", "5ms");
  expect_refused("PPU_TEST_STEP_PAUSE_MS", "-5");
}

TEST(FaultHooks, APauseHoldsEveryStepAndFaultsOfOtherRanksDoNothing) {
  const ScopedEnv pause("PPU_TEST_STEP_PAUSE_MS", "30");
  const ScopedEnv fault("PPU_TEST_FAULT", "hang:1:0,flip:1:0");
  const FaultHooks hooks(0, false);
  bool flipped = false;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < 3; ++step) hooks.before_step(step, [&] { flipped = true; });
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(90));
  EXPECT_FALSE(flipped);
}

TEST(FaultHooks, AFlipRunsAtItsStepOnItsRankButNotOnAReplacement) {
  const ScopedEnv fault("PPU_TEST_FAULT", "flip:2:4");
  int flips = 0;
  const FaultHooks first(2, false);
  for (int64_t step = 0; step < 6; ++step) first.before_step(step, [&] { ++flips; });
  EXPECT_EQ(flips, 1);
  const FaultHooks replacement(2, true);
  for (int64_t step = 0; step < 6; ++step) replacement.before_step(step, [&] { ++flips; });
  EXPECT_EQ(flips, 1);
}

TEST(FaultHooks, ALateRankSleepsBeforeItsStepOnly) {
  const ScopedEnv fault("PPU_TEST_FAULT", "late:1:2:200,late:0:3:100000");
  const FaultHooks hooks(1, false);
  const auto nothing = [] {};
  auto start = std::chrono::steady_clock::now();
  hooks.before_step(1, nothing);
  hooks.before_step(3, nothing);  // rank 0's step: rank 1 goes on
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(100));
  start = std::chrono::steady_clock::now();
  hooks.before_step(2, nothing);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
}

TEST(FaultHooks, ASlowRankSleepsBeforeEveryStepFromItsStepOn) {
  const ScopedEnv fault("PPU_TEST_FAULT", "slow:1:3:500,slow:0:0:100000");
  const FaultHooks hooks(1, false), replacement(1, true);
  const auto nothing = [] {};
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < 3; ++step) hooks.before_step(step, nothing);
  for (int64_t step = 0; step < 6; ++step) replacement.before_step(step, nothing);
  // Three sleeps would take 1.5 s: before its step, on a replacement and for rank 0, none.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  start = std::chrono::steady_clock::now();
  for (int64_t step = 3; step < 6; ++step) hooks.before_step(step, nothing);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
}

// A stalled checkpoint write is placed by step but only stalls a write: the steps go on, other
// ranks' writes and earlier writes return; the write at or after its step never does.
TEST(FaultHooks, AStalledCheckpointWriteStallsOnlyWritesFromItsStepOn) {
  const ScopedEnv fault("PPU_TEST_FAULT", "stall-checkpoint:1:40");
  const FaultHooks hooks(1, false), other(0, false);
  for (int64_t step = 0; step < 60; ++step) hooks.before_step(step, [] {});
  hooks.before_checkpoint_write(30);
  other.before_checkpoint_write(50);
  EXPECT_EXIT(
      {
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          std::_Exit(7);  // still writing: the write stalled
        }).detach();
        hooks.before_checkpoint_write(50);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(7), "");
}

}  // namespace
}  // namespace ppu
