#include "engine/cpu/onednn_switch.h"

#include "core/job_contract.h"

#include <ATen/Context.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ppu {

OneDnnState apply_onednn_env() {
  if (const char* value = std::getenv(contract::env::kOneDnn)) {
    const std::string v = value;
    if (v == "off") {
      at::globalContext().setUserEnabledMkldnn(false);
    } else if (v != "on" && !v.empty()) {
      throw std::invalid_argument(std::string("environment variable ") + contract::env::kOneDnn + " is '" + v +
                                  "'; expected on or off");
    }
  }
  return onednn_state();
}

OneDnnState onednn_state() {
  OneDnnState s;
  s.available = at::hasMKLDNN();
  s.enabled = s.available && at::globalContext().userEnabledMkldnn();
  // LibTorch 1.13's mkldnn_bf16_device_check(): bf16 matmuls go to oneDNN only on avx512_core
  // (BW, VL and DQ); elsewhere ATen's own bf16 GEMM runs, which rounds differently.
  s.bf16_matmul = s.enabled && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512dq");
  return s;
}

}  // namespace ppu
