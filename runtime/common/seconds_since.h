// seconds_since(t): the seconds of the steady clock from `t` to now, as a double (the elapsed
// time the live path's bounds and waits compare with their limits).
#pragma once

#include <chrono>

namespace ppu {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace ppu
