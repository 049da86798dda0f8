// The line protocol between `ppu-rendezvous --probe` and ppu-launch's StoreWatch: the probe
// prints one line per request to the store; a line holding kAnswered is an answer, any other
// line a request the store did not answer within the timeout (or failed).
#pragma once

namespace ppu::probe_line {
inline constexpr const char* kAnswered = "answered in";
}  // namespace ppu::probe_line
