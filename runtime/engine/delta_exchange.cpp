#include "engine/delta_exchange.h"

namespace ppu {

namespace {

// Sums the gathered payloads in rank order so every rank gets bit-identical results.
void sum_decoded(const std::vector<torch::Tensor>& decoded, torch::Tensor& out) {
  out.zero_();
  for (const auto& d : decoded) out.add_(d);
}

}  // namespace

DeltaExchange start_delta_sum(Collectives& collectives, torch::Tensor& flat, const std::string& delta_dtype,
                              int64_t row_length) {
  const int64_t n = flat.numel();
  if (delta_dtype == "fp32") return {collectives.allreduce_sum_async(flat), static_cast<int64_t>(flat.nbytes())};
  auto gathered = std::make_shared<std::vector<torch::Tensor>>();
  if (delta_dtype == "bf16") {
    // Gloo has neither bf16 sums nor 16-bit integers: ship the raw bytes and add in fp32.
    auto wire = flat.to(torch::kBFloat16).view(torch::kUInt8);
    auto pending = collectives.allgather_async(wire, *gathered);
    return {[pending, gathered, flat]() mutable {
              pending();
              std::vector<torch::Tensor> decoded;
              for (auto& t : *gathered) decoded.push_back(t.view(torch::kBFloat16).to(torch::kFloat32));
              sum_decoded(decoded, flat);
            },
            static_cast<int64_t>(wire.nbytes())};
  }
  // int8: pad to whole rows, one scale per row.
  const int64_t rows = (n + row_length - 1) / row_length;
  auto padded = torch::zeros({rows * row_length}, torch::kFloat32);
  padded.narrow(0, 0, n).copy_(flat);
  auto matrix = padded.view({rows, row_length});
  auto scales = std::get<0>(matrix.abs().max(1, true)).clamp_min(1e-30) / 127.0;
  auto quantised = (matrix / scales).round().clamp(-127, 127).to(torch::kInt8);
  auto gathered_scales = std::make_shared<std::vector<torch::Tensor>>();
  auto pending_q = collectives.allgather_async(quantised, *gathered);
  auto pending_s = collectives.allgather_async(scales, *gathered_scales);
  return {[pending_q, pending_s, gathered, gathered_scales, flat, n]() mutable {
            pending_q();
            pending_s();
            std::vector<torch::Tensor> decoded;
            for (size_t r = 0; r < gathered->size(); ++r)
              decoded.push_back(((*gathered)[r].to(torch::kFloat32) * (*gathered_scales)[r]).view({-1}).narrow(0, 0, n));
            sum_decoded(decoded, flat);
          },
          static_cast<int64_t>(quantised.nbytes() + scales.nbytes())};
}

}  // namespace ppu
