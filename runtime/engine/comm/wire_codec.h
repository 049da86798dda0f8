// WireCodec: how one chunk of fp32 values travels on the wire (outer.delta_dtype).
//  - fp32: the raw 4-byte values;
//  - bf16: each value rounded to nearest-even bfloat16 (2 bytes);
//  - int8: symmetric quantisation in blocks of `block` values: the block's fp32 scale
//          (max |x| / 127) followed by nothing else, then all the int8 codes of the chunk:
//          [scale_0 … scale_{B-1}][q_0 … q_{n-1}], n = B·block (chunks are whole blocks).
// LibTorch 1.13 has no float8 dtypes, so there is no fp8 codec.
// encode/decode are plain loops with no threading and no LibTorch, so they are deterministic
// and safe to run on a communication thread beside training. The byte count of a payload is
// core/cost_model's wire_layout(), the function ppu-plan uses too.
#pragma once

#include <cstdint>

#include "core/config.h"  // WireDtype: the choice of outer.delta_dtype

namespace ppu {

struct WireCodec {
  WireDtype dtype = WireDtype::Fp32;
  int64_t block = 1;  // values per int8 scale; 1 for fp32/bf16

  // Each call handles n values.
  int64_t payload_bytes(int64_t n) const;
  void encode(const float* src, int64_t n, uint8_t* dst) const;
  // out[i] = decoded value; decode_add: acc[i] += decoded value (fp32 arithmetic).
  void decode(const uint8_t* src, int64_t n, float* out) const;
  void decode_add(const uint8_t* src, int64_t n, float* acc) const;
};

}  // namespace ppu
