#include "engine/comm/delta_exchange.h"

#include <future>
#include <memory>

namespace ppu {

std::function<AllreduceStats()> start_delta_sum(Collectives& collectives, torch::Tensor& flat,
                                                const ExchangeOptions& o) {
  if (collectives.world_size() == 1) return [] { return AllreduceStats{}; };
  // The sequence number is taken here, on the training thread, so every rank numbers its
  // exchanges in the same order however the communication threads are scheduled.
  const uint32_t sequence = collectives.next_sequence();
  auto future = std::make_shared<std::future<AllreduceStats>>(
      std::async(std::launch::async, [&collectives, flat, o, sequence]() mutable {
        return compressed_allreduce(collectives, flat, o.dtype, o.row_length, o.schedule, sequence, o.feedback);
      }));
  return [future] { return future->get(); };
}

AllreduceStats exchange_delta_sum(Collectives& collectives, torch::Tensor& flat, const ExchangeOptions& o) {
  if (collectives.world_size() == 1) return {};
  return compressed_allreduce(collectives, flat, o.dtype, o.row_length, o.schedule, collectives.next_sequence(),
                              o.feedback);
}

}  // namespace ppu
