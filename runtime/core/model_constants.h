// The architecture's fixed constants, beside ModelSpec's sizes (core/model_spec.h): the model
// (engine/model/transformer.cpp) computes with them and ppu-export writes them into every config it
// produces, so no copy of a number can drift from the model.
#pragma once

namespace ppu {

inline constexpr double kLayerNormEps = 1e-5;  // every LayerNorm (pre-norm blocks and the final one)
inline constexpr double kRopeBase = 10000.0;   // rotary: pairs (i, i + hd/2) turn by pos·base^(-2i/hd)

}  // namespace ppu
