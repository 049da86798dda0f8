// HostStore: where the outer optimiser keeps its fp32 global parameters θ and Nesterov momentum.
// Without a directory (outer.host_state_dir empty, the default) a tensor is an ordinary CPU
// allocation. With one, every tensor is a shared mapping of a file in that directory, reserved
// with posix_fallocate (a full disk is an error here, not a SIGBUS later) and unlinked as soon as
// it is mapped (nothing is left behind, whatever way the process ends). The kernel writes the
// pages back and evicts them under memory pressure, so a CPU-only machine whose RAM is filled by
// the inner state can still hold the outer state: the disk plays the part §3.1 gives the host
// memory of a GPU machine. Reads and writes stay ordinary tensor operations.
#pragma once

#include <torch/torch.h>

#include <string>

namespace ppu {

class HostStore {
 public:
  // Throws ConfigError naming outer.host_state_dir if `dir` is set but is not a writable directory.
  explicit HostStore(std::string dir = "");

  bool on_disk() const { return !dir_.empty(); }

  torch::Tensor zeros(at::IntArrayRef shape) const;     // fp32, CPU
  torch::Tensor copy_of(const torch::Tensor& t) const;  // fp32 CPU copy of t (any device/dtype)

 private:
  std::string dir_;
};

}  // namespace ppu
