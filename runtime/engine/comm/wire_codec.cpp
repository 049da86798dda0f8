#include "engine/comm/wire_codec.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace ppu {

namespace {

uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stay a (quiet) NaN
  bits += 0x7fff + ((bits >> 16) & 1);                                   // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

template <bool Add>
void decode_into(const WireCodec& c, const uint8_t* src, int64_t n, float* out) {
  switch (c.dtype) {
    case WireDtype::Fp32:
      for (int64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, src + 4 * i, 4);
        if (Add) out[i] += v;
        else out[i] = v;
      }
      return;
    case WireDtype::Bf16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        if (Add) out[i] += from_bf16(h);
        else out[i] = from_bf16(h);
      }
      return;
    case WireDtype::Int8: {
      const int64_t blocks = n / c.block;
      const auto* codes = reinterpret_cast<const int8_t*>(src + 4 * blocks);
      for (int64_t b = 0; b < blocks; ++b) {
        float scale;
        std::memcpy(&scale, src + 4 * b, 4);
        for (int64_t i = b * c.block; i < (b + 1) * c.block; ++i) {
          const float v = static_cast<float>(codes[i]) * scale;
          if (Add) out[i] += v;
          else out[i] = v;
        }
      }
      return;
    }
  }
}

}  // namespace

int64_t WireCodec::payload_bytes(int64_t n) const {
  switch (dtype) {
    case WireDtype::Fp32: return 4 * n;
    case WireDtype::Bf16: return 2 * n;
    case WireDtype::Int8: return n + 4 * (n / block);
  }
  return 0;
}

void WireCodec::encode(const float* src, int64_t n, uint8_t* dst) const {
  switch (dtype) {
    case WireDtype::Fp32: std::memcpy(dst, src, 4 * n); return;
    case WireDtype::Bf16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case WireDtype::Int8: {
      if (n % block != 0)
        throw std::logic_error("int8 payload of " + std::to_string(n) + " values is not whole blocks");
      const int64_t blocks = n / block;
      auto* codes = reinterpret_cast<int8_t*>(dst + 4 * blocks);
      for (int64_t b = 0; b < blocks; ++b) {
        float amax = 0;
        for (int64_t i = b * block; i < (b + 1) * block; ++i) amax = std::max(amax, std::fabs(src[i]));
        const float scale = amax / 127.0f;
        std::memcpy(dst + 4 * b, &scale, 4);
        const float inv = scale > 0 ? 1.0f / scale : 0.0f;
        for (int64_t i = b * block; i < (b + 1) * block; ++i) {
          const float q = std::nearbyint(src[i] * inv);
          codes[i] = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, q)));
        }
      }
      return;
    }
  }
}

void WireCodec::decode(const uint8_t* src, int64_t n, float* out) const { decode_into<false>(*this, src, n, out); }
void WireCodec::decode_add(const uint8_t* src, int64_t n, float* acc) const { decode_into<true>(*this, src, n, acc); }

}  // namespace ppu
