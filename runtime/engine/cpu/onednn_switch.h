// oneDNN on or off for this process, and which path bf16 matmuls take.
// apply_onednn_env() reads PPU_ONEDNN: "off" calls at::globalContext().setUserEnabledMkldnn(false)
// before any op runs, so LibTorch sends nothing to oneDNN (mkldnn) and bf16 GEMMs take ATen's own
// kernels: the path every CPU without AVX-512 takes, reproducible on any machine. Unset or "on"
// keeps LibTorch's default. Any other value throws std::invalid_argument naming the variable.
// ppu-train and the numerics test binaries call it first thing (docs/TESTING.md).
#pragma once

namespace ppu {

struct OneDnnState {
  bool available = false;    // LibTorch was built with oneDNN (at::hasMKLDNN())
  bool enabled = false;      // and this process lets LibTorch use it
  bool bf16_matmul = false;  // bf16 matmuls go to oneDNN: enabled and the CPU has AVX-512 BW/VL/DQ
};

OneDnnState apply_onednn_env();
OneDnnState onednn_state();

}  // namespace ppu
