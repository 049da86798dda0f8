#include "engine/model/kernel_settings.h"

#include <algorithm>
#include <cstdlib>

#include "common/env.h"

namespace ppu {

torch::Device rank_device(const Config& c, int rank) {
  if (c.train.device != Device::Cuda) return torch::kCPU;
  if (c.train.deterministic) {
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(env_int("LOCAL_RANK", rank) % count)};
}

void set_model_kernels(Transformer& model, const Config& c, const torch::Device& device) {
  model.set_recompute(c.train.recompute);
  // Deterministic fp32 CUDA runs keep the explicit attention: SDPA would pick its
  // memory-efficient kernel (flash needs 16-bit inputs), whose backward is nondeterministic.
  if (device.is_cuda() && c.train.deterministic && !model.mixed_precision()) model.set_fused_attention(false);
  // bf16: the output head's cross-entropy in chunks (by default of at most 64 MiB of fp32
  // logits), so the full [B*S, vocab] fp32 logits never exist (fp32 keeps the plain, bit-exact
  // path). Larger chunks trade memory for fewer passes over the fp32 dL/dW (docs/GPU.md).
  if (model.mixed_precision())
    model.set_loss_chunk(c.train.loss_chunk_tokens > 0 ? c.train.loss_chunk_tokens
                                                       : std::max<int64_t>(1, (int64_t{16} << 20) / c.model.vocab));
}

}  // namespace ppu
