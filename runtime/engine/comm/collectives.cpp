#include "engine/comm/collectives.h"

#include "common/env.h"
#include "core/job_contract.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef PPU_WITH_NCCL
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>

namespace ppu {

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1"; }

}  // namespace

// Holds the NCCL group by its concrete type, like the Gloo one (a Backend in 2.x, a
// ProcessGroup in 1.13). Empty shell without NCCL so that the header needs no #ifdef.
class NcclGroup {
 public:
#ifdef PPU_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group;
#endif
};

RendezvousInfo rendezvous_from_env() {
  RendezvousInfo info;
  info.rank = env_int(contract::env::kRank, 0);
  info.world_size = env_int(contract::env::kWorldSize, 1);
  info.master_addr = env_string(contract::env::kMasterAddr, info.master_addr);
  info.master_port = env_int(contract::env::kMasterPort, 29500);
  if (info.world_size < 1)
    throw std::invalid_argument("WORLD_SIZE must be >= 1, got " + std::to_string(info.world_size));
  if (info.rank < 0 || info.rank >= info.world_size)
    throw std::invalid_argument("RANK=" + std::to_string(info.rank) +
                                " is outside [0, WORLD_SIZE=" + std::to_string(info.world_size) + ")");
  if (info.master_port <= 0 || info.master_port > 65535)
    throw std::invalid_argument("MASTER_PORT=" + std::to_string(info.master_port) + " is not a TCP port");
  return info;
}

Collectives::Collectives(const RendezvousInfo& info, std::chrono::milliseconds timeout, int nccl_device)
    : info_(info), timeout_(timeout) {
  if (info.world_size == 1) return;
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(info.master_port);
    opts.isServer = info.rank == 0;
    opts.numWorkers = info.world_size;
    opts.waitWorkers = true;
    opts.timeout = timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(info.master_addr, opts);
    auto gloo = c10d::ProcessGroupGloo::Options::create(timeout);
    // Bind Gloo to loopback for local runs; otherwise to the interface of this host's name
    // (a pod's IP), unless GLOO_SOCKET_IFNAME names one.
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (is_loopback(info.master_addr))
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, info.rank, info.world_size, gloo);
#ifdef PPU_WITH_NCCL
    if (nccl_device >= 0) {
      // Own key space in the store, so NCCL's unique-id exchange cannot meet Gloo's keys.
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("nccl", store);
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      nccl_ = std::make_unique<NcclGroup>();
      nccl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, info.rank, info.world_size, opts);
    }
#else
    (void)nccl_device;
#endif
  } catch (const std::exception& e) {
    throw PeerError("rendezvous at " + info.master_addr + ":" + std::to_string(info.master_port) + " as rank " +
                    std::to_string(info.rank) + " of " + std::to_string(info.world_size) + " failed: " + e.what());
  }
}

Collectives::~Collectives() = default;

void Collectives::wait(const char* what, const std::function<void()>& op) {
  try {
    op();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw PeerError(std::string(what) + " failed (a peer died or timed out after " +
                    std::to_string(timeout_.count() / 1000) + " s): " + msg);
  }
}

Collectives::Pending Collectives::allreduce_sum_async(torch::Tensor& tensor) {
  if (!group_) return [] {};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  opts.timeout = timeout_;
  c10::intrusive_ptr<c10d::Work> work;
#ifdef PPU_WITH_NCCL
  if (nccl_ && tensor.is_cuda()) {
    std::vector<torch::Tensor> tensors{tensor};
    wait("all-reduce", [&] { work = nccl_->group->allreduce(tensors, opts); });
    return [this, work] { wait("all-reduce", [&] { work->wait(timeout_); }); };
  }
#endif
  // Gloo gets host tensors only (its CUDA paths differ between versions and builds): a CUDA
  // tensor is reduced through a host copy and copied back when the caller waits.
  const bool staged = !tensor.device().is_cpu();
  std::vector<torch::Tensor> tensors{staged ? tensor.to(torch::kCPU) : tensor};
  wait("all-reduce", [&] { work = group_->allreduce(tensors, opts); });
  return [this, work, tensors, staged, tensor]() mutable {
    wait("all-reduce", [&] { work->wait(timeout_); });
    if (staged) tensor.copy_(tensors[0]);
  };
}

std::vector<torch::Tensor> Collectives::allgather(const torch::Tensor& tensor) {
  std::vector<torch::Tensor> out;
  allgather_async(tensor, out)();
  return out;
}

Collectives::Pending Collectives::allgather_async(const torch::Tensor& tensor, std::vector<torch::Tensor>& out) {
  if (!group_) {
    out = {tensor};
    return [] {};
  }
  auto outputs = std::make_shared<std::vector<std::vector<torch::Tensor>>>(1);
  for (int r = 0; r < info_.world_size; ++r) (*outputs)[0].push_back(torch::empty_like(tensor));
  std::vector<torch::Tensor> inputs{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  wait("all-gather", [&] {
    c10d::AllgatherOptions opts;
    opts.timeout = timeout_;
    work = group_->allgather(*outputs, inputs, opts);
  });
  return [this, work, outputs, &out] {
    wait("all-gather", [&] { work->wait(timeout_); });
    out = (*outputs)[0];
  };
}

Collectives::Pending Collectives::send(torch::Tensor& tensor, int dst, int tag) {
  if (!group_) throw std::logic_error("send needs a process group (WORLD_SIZE > 1)");
  std::vector<torch::Tensor> tensors{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  wait("send", [&] { work = group_->send(tensors, dst, tag); });
  return [this, work] { wait("send", [&] { work->wait(timeout_); }); };
}

Collectives::Pending Collectives::recv(torch::Tensor& tensor, int src, int tag) {
  if (!group_) throw std::logic_error("recv needs a process group (WORLD_SIZE > 1)");
  std::vector<torch::Tensor> tensors{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  wait("receive", [&] { work = group_->recv(tensors, src, tag); });
  return [this, work] { wait("receive", [&] { work->wait(timeout_); }); };
}

void Collectives::barrier() {
  if (!group_) return;
  wait("barrier", [&] {
    c10d::BarrierOptions opts;
    opts.timeout = timeout_;
    group_->barrier(opts)->wait(timeout_);
  });
}

}  // namespace ppu
