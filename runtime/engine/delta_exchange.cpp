#include "engine/delta_exchange.h"

namespace ppu {

namespace {

// Sums the gathered payloads in rank order so every rank gets bit-identical results.
void sum_decoded(const std::vector<torch::Tensor>& decoded, torch::Tensor& out) {
  out.zero_();
  for (const auto& d : decoded) out.add_(d);
}

}  // namespace

int64_t exchange_delta_sum(Collectives& collectives, torch::Tensor& flat, const std::string& delta_dtype,
                           int64_t row_length) {
  const int64_t n = flat.numel();
  if (delta_dtype == "fp32") {
    collectives.allreduce_sum(flat);
    return flat.nbytes();
  }
  if (delta_dtype == "bf16") {
    // Gloo has neither bf16 sums nor 16-bit integers: ship the raw bytes and add in fp32.
    auto wire = flat.to(torch::kBFloat16).view(torch::kUInt8);
    std::vector<torch::Tensor> decoded;
    for (auto& t : collectives.allgather(wire)) decoded.push_back(t.view(torch::kBFloat16).to(torch::kFloat32));
    sum_decoded(decoded, flat);
    return wire.nbytes();
  }
  // int8: pad to whole rows, one scale per row.
  const int64_t rows = (n + row_length - 1) / row_length;
  auto padded = torch::zeros({rows * row_length}, torch::kFloat32);
  padded.narrow(0, 0, n).copy_(flat);
  auto matrix = padded.view({rows, row_length});
  auto scales = std::get<0>(matrix.abs().max(1, true)).clamp_min(1e-30) / 127.0;
  auto quantised = (matrix / scales).round().clamp(-127, 127).to(torch::kInt8);
  auto gathered_q = collectives.allgather(quantised);
  auto gathered_s = collectives.allgather(scales);
  std::vector<torch::Tensor> decoded;
  for (size_t r = 0; r < gathered_q.size(); ++r)
    decoded.push_back((gathered_q[r].to(torch::kFloat32) * gathered_s[r]).view({-1}).narrow(0, 0, n));
  sum_decoded(decoded, flat);
  return quantised.nbytes() + scales.nbytes();
}

}  // namespace ppu
