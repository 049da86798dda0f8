// decide_blas_core: every case of the selection table (engine/cpu/blas_core_choice.h) over CPU
// feature sets and the core OpenBLAS loaded: kept when at least as wide as the CPU's widest
// vectors, replaced by the runtime's choice when narrower (an unknown name counts as narrowest),
// and always obeyed, with a warning when narrower, when OPENBLAS_CORETYPE forced it.
#include <gtest/gtest.h>

#include "engine/cpu/blas_core_choice.h"

namespace ppu {
namespace {

CpuVectorFeatures older() { return {}; }
CpuVectorFeatures avx2() { return {true, true, false, false}; }
CpuVectorFeatures avx512() { return {true, true, true, false}; }
CpuVectorFeatures avx512_bf16() { return {true, true, true, true}; }

TEST(BlasCoreChoice, WidestVectorsNeedEveryFeatureOfTheirKernels) {
  EXPECT_EQ(widest_vectors(older()), VectorWidth::Older);
  EXPECT_EQ(widest_vectors({true, false, false, false}), VectorWidth::Older);  // AVX2 without FMA
  EXPECT_EQ(widest_vectors(avx2()), VectorWidth::Avx2);
  EXPECT_EQ(widest_vectors(avx512()), VectorWidth::Avx512);
  EXPECT_EQ(widest_vectors(avx512_bf16()), VectorWidth::Avx512);
}

TEST(BlasCoreChoice, KernelWidthOfOpenBlasCores) {
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    EXPECT_EQ(kernel_width(core), VectorWidth::Avx512) << core;
  for (const char* core : {"Haswell", "Zen"}) EXPECT_EQ(kernel_width(core), VectorWidth::Avx2) << core;
  for (const char* core : {"Prescott", "Core2", "Nehalem", "Sandybridge", "Bulldozer", "Excavator", "", "NoSuchCore"})
    EXPECT_EQ(kernel_width(core), VectorWidth::Older) << core;
}

struct Case {
  const char* name;
  CpuVectorFeatures cpu;
  const char* loaded;
  const char* forced;
  const char* source;
  const char* core;
  bool warns;
};

class DecideBlasCore : public ::testing::TestWithParam<Case> {};

TEST_P(DecideBlasCore, FollowsTheTable) {
  const Case& c = GetParam();
  const BlasCoreDecision d = decide_blas_core(c.cpu, c.loaded, c.forced);
  EXPECT_EQ(d.source, c.source);
  EXPECT_EQ(d.core, c.core);
  EXPECT_EQ(!d.warning.empty(), c.warns) << d.warning;
  if (c.warns) {
    EXPECT_NE(d.warning.find(std::string("OPENBLAS_CORETYPE=") + c.forced), std::string::npos) << d.warning;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, DecideBlasCore,
    ::testing::Values(
        // Detection as wide as the CPU: kept.
        Case{"Avx512DetectedSkylakeX", avx512(), "SkylakeX", "", "detected", "SkylakeX", false},
        Case{"Avx512Bf16DetectedCooperlake", avx512_bf16(), "Cooperlake", "", "detected", "Cooperlake", false},
        Case{"Avx2DetectedHaswell", avx2(), "Haswell", "", "detected", "Haswell", false},
        Case{"Avx2DetectedZen", avx2(), "Zen", "", "detected", "Zen", false},
        Case{"OlderDetectedNehalem", older(), "Nehalem", "", "detected", "Nehalem", false},
        Case{"OlderDetectedSandybridge", older(), "Sandybridge", "", "detected", "Sandybridge", false},
        // Detection fell back: the runtime chooses the widest core the CPU runs.
        Case{"EmeraldRapidsDetectedPrescott", avx512_bf16(), "Prescott", "", "runtime", "Cooperlake", false},
        Case{"Avx512DetectedPrescott", avx512(), "Prescott", "", "runtime", "SkylakeX", false},
        Case{"Avx512DetectedHaswell", avx512(), "Haswell", "", "runtime", "SkylakeX", false},
        Case{"Zen4DetectedZen", avx512_bf16(), "Zen", "", "runtime", "Cooperlake", false},
        Case{"Avx2DetectedPrescott", avx2(), "Prescott", "", "runtime", "Haswell", false},
        Case{"Avx2DetectedSandybridge", avx2(), "Sandybridge", "", "runtime", "Haswell", false},
        Case{"Avx512UnknownCore", avx512(), "FutureLake", "", "runtime", "SkylakeX", false},
        Case{"Avx2UnknownCore", avx2(), "", "", "runtime", "Haswell", false},
        // Forced by the environment: obeyed whatever it is; a warning when narrower than the CPU.
        Case{"ForcedHaswellOnAvx512", avx512(), "Haswell", "Haswell", "environment", "Haswell", true},
        Case{"ForcedPrescottOnAvx2", avx2(), "Prescott", "Prescott", "environment", "Prescott", true},
        Case{"ForcedSkylakeXOnAvx512", avx512_bf16(), "SkylakeX", "SkylakeX", "environment", "SkylakeX", false},
        Case{"ForcedHaswellOnAvx2", avx2(), "Haswell", "Haswell", "environment", "Haswell", false},
        Case{"ForcedNehalemOnOlder", older(), "Nehalem", "Nehalem", "environment", "Nehalem", false},
        // A name OpenBLAS did not know: it ran its detection, which is what the decision reports.
        Case{"ForcedUnknownNameRunsDetection", avx512(), "SkylakeX", "Bogus", "environment", "SkylakeX", false},
        Case{"ForcedUnknownNameFellBack", avx512(), "Prescott", "Bogus", "environment", "Prescott", true}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return std::string(param_info.param.name); });

TEST(BlasCoreChoice, ForcedWarningNamesTheCoreThatRunsAndTheWiderChoice) {
  const auto d = decide_blas_core(avx512_bf16(), "Haswell", "Haswell");
  EXPECT_NE(d.warning.find("Haswell kernels (avx2)"), std::string::npos) << d.warning;
  EXPECT_NE(d.warning.find("avx512"), std::string::npos) << d.warning;
  EXPECT_NE(d.warning.find("Cooperlake"), std::string::npos) << d.warning;
}

}  // namespace
}  // namespace ppu
