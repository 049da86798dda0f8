// The wire codecs (fp32 / bf16 / int8 with per-block scales) and the all-reduce layout that
// ppu-plan and the runtime share: bytes per rank stay below 2·M·b for every K.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "engine/comm/wire_codec.h"

using namespace ppu;

namespace {

std::vector<float> roundtrip(const WireCodec& c, const std::vector<float>& x) {
  std::vector<uint8_t> wire(c.payload_bytes(static_cast<int64_t>(x.size())));
  c.encode(x.data(), static_cast<int64_t>(x.size()), wire.data());
  std::vector<float> out(x.size());
  c.decode(wire.data(), static_cast<int64_t>(x.size()), out.data());
  return out;
}

}  // namespace

TEST(WireCodec, Bf16RoundsToNearestAndInt8StaysWithinHalfAStep) {
  std::vector<float> x;
  x.reserve(256);
  for (int i = 0; i < 256; ++i) x.push_back(std::sin(0.37f * i) * (1 + i % 7) * 0.01f);
  // Derived: bf16 keeps 8 significant bits, so round-to-nearest errs by ≤ 2^-8·|x|; int8 rounds
  // x/scale to an integer, ≤ half a step of scale = max|x|/127, plus the float roundings of the
  // scale and the quotient (a few 2^-24 relative), covered by the 1.0002 in 0.5001.
  const auto b = roundtrip({WireDtype::Bf16, 1}, x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0f, -8)) << i;
  const WireCodec int8{WireDtype::Int8, 64};
  const auto q = roundtrip(int8, x);
  for (int blk = 0; blk < 4; ++blk) {
    float amax = 0;
    for (int i = blk * 64; i < (blk + 1) * 64; ++i) amax = std::max(amax, std::fabs(x[i]));
    for (int i = blk * 64; i < (blk + 1) * 64; ++i) EXPECT_LE(std::fabs(q[i] - x[i]), amax / 127 * 0.5001f) << i;
  }
  EXPECT_EQ(int8.payload_bytes(256), 256 + 4 * 4);
  EXPECT_EQ(roundtrip({WireDtype::Fp32, 1}, x), x);
  EXPECT_THROW(parse_choice<WireDtype>("outer.delta_dtype", "fp8"), ConfigError);
}

TEST(WireLayout, BytesPerRankApproachTwiceTheMessageAndDoNotGrowWithK) {
  const int64_t M = 1 << 20;
  for (const char* dtype : {"fp32", "bf16", "int8"}) {
    const double b = std::string(dtype) == "fp32" ? 4 : std::string(dtype) == "bf16" ? 2 : 1 + 4.0 / 256;
    double previous = 0;
    for (int K : {2, 4, 8, 16, 32}) {
      const auto w = wire_layout(M, K, parse_choice<WireDtype>("outer.delta_dtype", dtype), 256);
      const double ideal = 2.0 * (K - 1) / K * M * b;
      EXPECT_GE(w.bytes_per_rank(K), ideal) << dtype << " K=" << K;
      // Padding only: < K·block = 32·256 elements of M = 2^20, 0.8 %.
      EXPECT_LE(w.bytes_per_rank(K), ideal * 1.01) << dtype << " K=" << K;
      EXPECT_LT(w.bytes_per_rank(K), 2 * M * b) << dtype;
      EXPECT_GT(w.bytes_per_rank(K), previous);
      previous = w.bytes_per_rank(K);
    }
  }
}
