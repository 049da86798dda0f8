// GoogleTest main of the numerics-sensitive suites (bf16, partial backward, attention, fused
// AdamW, distributed equivalences), run under the kernel paths PPU_TEST_KERNELS names:
//   PPU_TEST_KERNELS=onednn-{on|off},blas-{own|haswell}
// onednn-off sets PPU_ONEDNN=off (LibTorch sends no op to oneDNN: bf16 matmuls take ATen's own
// kernels, the path of a CPU without AVX-512); blas-own runs OpenBLAS's own core choice whatever
// the caller's OPENBLAS_CORETYPE, blas-haswell its AVX2 kernels. OpenBLAS reads
// OPENBLAS_CORETYPE when it loads, so when it must change the binary re-executes itself once.
// Unset: the environment as it is. It prints the path it ran on, so a failure says which.
// tests/engine/CMakeLists.txt registers each suite under every combination.
// OpenBLAS's Haswell kernels need AVX2 and FMA, and OPENBLAS_CORETYPE forces them without
// checking the CPU (one without them would die of SIGILL), so on such a CPU blas-haswell runs
// OpenBLAS's own choice and the kernels line says so: the suites pass or fail on their numerics,
// never on an instruction the CPU lacks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/cpu/blas_core_choice.h"
#include "engine/cpu/compute_threads.h"
#include "engine/cpu/onednn_switch.h"

namespace {

[[noreturn]] void usage(const std::string& value) {
  std::fprintf(stderr, "PPU_TEST_KERNELS is '%s'; expected onednn-{on|off},blas-{own|haswell}\n", value.c_str());
  std::exit(2);
}

bool cpu_runs_haswell_kernels() {
  return ppu::widest_vectors(ppu::this_cpu_vector_features()) >= ppu::VectorWidth::Avx2;
}

// Sets PPU_ONEDNN and OPENBLAS_CORETYPE from PPU_TEST_KERNELS; re-executes when the latter changed.
// Returns a note for the kernels line when the selection could not be honoured ("" otherwise).
std::string apply_kernel_selection(char** argv) {
  const char* raw = std::getenv("PPU_TEST_KERNELS");
  if (!raw) return "";
  const std::string value = raw;
  const auto comma = value.find(',');
  if (comma == std::string::npos) usage(value);
  const std::string onednn = value.substr(0, comma), blas = value.substr(comma + 1);
  if (onednn != "onednn-on" && onednn != "onednn-off") usage(value);
  if (blas != "blas-own" && blas != "blas-haswell") usage(value);
  ::setenv("PPU_ONEDNN", onednn == "onednn-off" ? "off" : "on", 1);
  const char* current = std::getenv("OPENBLAS_CORETYPE");
  const bool haswell = blas == "blas-haswell" && cpu_runs_haswell_kernels();
  const std::string want = haswell ? "Haswell" : "";
  std::string note = blas == "blas-haswell" && !haswell
                         ? " (blas-haswell: this CPU lacks AVX2/FMA, so OpenBLAS's own core runs instead)"
                         : "";
  if ((current ? std::string(current) : std::string()) == want) return note;
  if (std::getenv("PPU_TEST_KERNELS_REEXEC")) {
    std::fprintf(stderr, "PPU_TEST_KERNELS: OPENBLAS_CORETYPE still wrong after re-executing\n");
    std::exit(2);
  }
  if (want.empty()) {
    ::unsetenv("OPENBLAS_CORETYPE");
  } else {
    ::setenv("OPENBLAS_CORETYPE", want.c_str(), 1);
  }
  ::setenv("PPU_TEST_KERNELS_REEXEC", "1", 1);
  ::execv("/proc/self/exe", argv);
  std::perror("PPU_TEST_KERNELS: re-executing /proc/self/exe");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string note = apply_kernel_selection(argv);
  ::testing::InitGoogleTest(&argc, argv);
  const ppu::OneDnnState onednn = ppu::apply_onednn_env();
  const ppu::BlasInfo blas = ppu::loaded_blas();
#ifdef GTEST_FLAG_GET
  const bool listing = GTEST_FLAG_GET(list_tests);
#else
  const bool listing = ::testing::GTEST_FLAG(list_tests);
#endif
  if (!listing)  // ctest's discovery parses the listing
    std::printf("[ kernels  ] oneDNN %s, bf16 matmuls on %s; OpenBLAS core %s%s%s\n", onednn.enabled ? "on" : "off",
                onednn.bf16_matmul ? "oneDNN" : "ATen's own kernels", blas.core.empty() ? "-" : blas.core.c_str(),
                blas.core_env.empty() ? " (its own choice)" : " (OPENBLAS_CORETYPE)", note.c_str());
  return RUN_ALL_TESTS();
}
