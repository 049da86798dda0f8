// The small model and random token batches the runtime's gradient tests share: the tiny preset
// (2 layers, d 64, 4 heads, vocab 256) at sequence length 16.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "core/model_spec.h"

namespace ppu::test {

inline ModelSpec spec() {
  ModelSpec m = *model_preset("tiny");
  m.seq_len = 16;
  return m;
}

// Uniform random tokens [B, S + 1], a pure function of `seed`.
inline torch::Tensor batch(uint64_t seed, int64_t B = 3, int64_t S = 16) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::randint(0, spec().vocab, {B, S + 1}, gen, torch::kLong);
}

}  // namespace ppu::test
