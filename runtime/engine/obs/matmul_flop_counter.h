// MatmulFlopCounter: counts the FLOPs (2 x multiply-adds) of every matrix multiplication that
// actually executes — aten::mm, bmm, addmm, baddbmm — forward and backward, while an instance
// is alive. It observes ATen's RecordFunction with input shapes, so it measures what the
// kernels were asked to do rather than what a formula assumes. Kernels of ours that call BLAS
// directly (engine/model/cpu_attention.h) report their products through add_multiply_adds, which counts
// only while an instance is alive. Instances must not overlap.
#pragma once

#include <cstdint>

namespace ppu {

class MatmulFlopCounter {
 public:
  MatmulFlopCounter();
  ~MatmulFlopCounter();
  MatmulFlopCounter(const MatmulFlopCounter&) = delete;
  MatmulFlopCounter& operator=(const MatmulFlopCounter&) = delete;

  double flops() const;
  void reset();

  // A GEMM that ran outside ATen's dispatcher; thread-safe, a no-op with no instance alive.
  static void add_multiply_adds(uint64_t multiply_adds);

 private:
  uint64_t handle_;
};

}  // namespace ppu
