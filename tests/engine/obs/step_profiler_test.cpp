// StepProfiler (engine/obs/step_profiler.h) on the CPU: the trace covers exactly the configured
// steps, is written once after the last of them as a Chrome trace whose events include the
// steps' operators, and nothing is traced or written when train.profile_dir is empty.
#include "engine/obs/step_profiler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

namespace ppu {
namespace {

// One "inner step": a product and its backward.
void step_work(int64_t step) {
  const auto x = torch::ones({8, 100 + step}, torch::requires_grad());
  x.mm(torch::ones({100 + step, 4})).sum().backward();
}

// Operators in the trace: name -> count of "cpu_op" events.
std::map<std::string, int> cpu_ops(const std::string& path) {
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::map<std::string, int> ops;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("cat", "") == "cpu_op") ++ops[e.value("name", "")];
  return ops;
}

// Each step makes the same number of aten::mm calls (forward and backward), measured by a
// one-step window; a window of n steps then holds n times that many.
TEST(StepProfiler, TracesExactlyTheConfiguredStepsAndWritesOnce) {
  const auto dir = std::filesystem::temp_directory_path() / ("ppu-profile-" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  // mm calls of one step, counted without a profiler window around other steps.
  int per_step = 0;
  {
    StepProfiler one(dir.string(), 0, 1, 0, torch::kCPU);
    one.before_step(0);
    step_work(0);
    one.after_step(0);
    ASSERT_FALSE(one.written().empty());
    per_step = cpu_ops(one.written())["aten::mm"];
    ASSERT_GT(per_step, 0);
  }
  StepProfiler p(dir.string(), 2, 3, 5, torch::kCPU);
  for (int64_t t = 0; t < 7; ++t) {
    p.before_step(t);
    step_work(t);
    p.after_step(t);
    if (t < 4) {
      EXPECT_TRUE(p.written().empty()) << "written after step " << t;
    }
  }
  ASSERT_EQ(p.written(), (dir / "rank5-steps2-4.json").string());
  EXPECT_EQ(cpu_ops(p.written())["aten::mm"], 3 * per_step);
  std::filesystem::remove_all(dir);
}

TEST(StepProfiler, EmptyDirectoryTracesNothing) {
  StepProfiler p("", 0, 2, 0, torch::kCPU);
  for (int64_t t = 0; t < 3; ++t) {
    p.before_step(t);
    step_work(t);
    p.after_step(t);
  }
  EXPECT_TRUE(p.written().empty());
}

}  // namespace
}  // namespace ppu
