// MatmulFlopCounter: counts the FLOPs (2 x multiply-adds) of every matrix multiplication that
// actually executes — aten::mm, bmm, addmm, baddbmm — forward and backward, while an instance
// is alive. It observes ATen's RecordFunction with input shapes, so it measures what the
// kernels were asked to do rather than what a formula assumes. Instances must not overlap.
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

 private:
  uint64_t handle_;
};

}  // namespace ppu
