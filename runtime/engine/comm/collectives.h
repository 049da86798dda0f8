// Collectives: this rank's membership in the job — rendezvous through c10d's TCPStore at
// MASTER_ADDR:MASTER_PORT and a Gloo process group (CPU tensors). With WORLD_SIZE = 1 there
// is no process group and every collective is the identity. Every collective waits at most
// `timeout`; a dead or hung peer surfaces as PeerError (exit code 3), never as a hang.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/exit_status.h"

namespace c10d {
class ProcessGroupGloo;
}

namespace ppu {
class NcclGroup;  // defined in collectives.cpp, only in CUDA builds
}

namespace ppu {

// A peer died or a collective timed out (exit 3: the gang is restarted).
class PeerError : public PeerFailure {
 public:
  using PeerFailure::PeerFailure;
};

struct RendezvousInfo {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun-compatible; defaults 0 of 1).
RendezvousInfo rendezvous_from_env();

class Collectives {
 public:
  // `nccl_device` >= 0: also form an NCCL group on that CUDA device (builds with PPU_WITH_NCCL
  // only, one GPU per rank); CUDA tensors then go through NCCL. Otherwise CUDA tensors are
  // copied to the host and reduced by Gloo (several ranks sharing one GPU, tests).
  Collectives(const RendezvousInfo& info, std::chrono::milliseconds timeout, int nccl_device = -1);
  ~Collectives();

  int rank() const { return info_.rank; }
  int world_size() const { return info_.world_size; }

  // Waits for a collective started by an *_async call; throws PeerError.
  using Pending = std::function<void()>;

  bool has_nccl() const { return nccl_ != nullptr; }

  // In-place SUM over ranks of a contiguous tensor (CPU, or CUDA: see the constructor).
  void allreduce_sum(torch::Tensor& tensor) { allreduce_sum_async(tensor)(); }
  Pending allreduce_sum_async(torch::Tensor& tensor);
  // Every rank's `tensor` (same shape and dtype everywhere), in rank order.
  std::vector<torch::Tensor> allgather(const torch::Tensor& tensor);
  // Fills `out` (resized to world_size) once the returned Pending has been called.
  Pending allgather_async(const torch::Tensor& tensor, std::vector<torch::Tensor>& out);
  void barrier();

  // Point-to-point on the Gloo group (contiguous CPU tensors): posts the operation and returns
  // a Pending that waits for it. Tags keep concurrent messages between two ranks apart.
  // Safe to call from a communication thread while the training thread runs collectives.
  Pending send(torch::Tensor& tensor, int dst, int tag);
  Pending recv(torch::Tensor& tensor, int src, int tag);
  // Numbers the all-reduces built from send/recv (compressed_allreduce); every rank calls it
  // in the same order, from the training thread.
  uint32_t next_sequence() { return sequence_++; }

 private:
  void wait(const char* what, const std::function<void()>& op);

  RendezvousInfo info_;
  std::chrono::milliseconds timeout_;
  // The Gloo group itself, not its c10d::ProcessGroup base: in LibTorch 2.x Gloo is a
  // c10d::Backend, in 1.13 a ProcessGroup; its collectives have the same signatures in both.
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::unique_ptr<NcclGroup> nccl_;
  uint32_t sequence_ = 0;
};

}  // namespace ppu
