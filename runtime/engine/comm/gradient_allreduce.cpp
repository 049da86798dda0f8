#include "engine/comm/gradient_allreduce.h"

#include <chrono>

#include "core/cost_model.h"
#include "engine/comm/delta_exchange.h"

namespace ppu {

AllreduceStats allreduce_gradients(Collectives& collectives, const std::vector<torch::Tensor>& params,
                                   const WirePlan& wire, int ranks) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<torch::Tensor> flat;
  flat.reserve(params.size());
  for (const auto& p : params) flat.push_back(p.grad().reshape({-1}));
  auto buffer = torch::cat(flat).to(torch::kFloat32);
  AllreduceStats stats;
  if (buffer.is_cuda() && collectives.has_nccl()) {
    auto on_wire = wire.dtype == WireDtype::Bf16 ? buffer.to(torch::kBFloat16) : buffer;
    collectives.allreduce_sum(on_wire);
    if (!on_wire.is_same(buffer)) buffer.copy_(on_wire);
    stats.bytes_sent = stats.bytes_received =
        wire_layout(buffer.numel(), ranks, wire.dtype, wire.row_length).bytes_per_rank(ranks);
  } else {
    ExchangeOptions options;
    options.schedule = wire.schedule;
    options.dtype = wire.dtype;
    options.row_length = wire.row_length;
    auto host = buffer.is_cuda() ? buffer.to(torch::kCPU) : buffer;
    stats = exchange_delta_sum(collectives, host, options);
    if (!host.is_same(buffer)) buffer.copy_(host);
  }
  buffer.div_(ranks);
  int64_t offset = 0;
  for (const auto& p : params) {
    p.mutable_grad().copy_(buffer.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace ppu
