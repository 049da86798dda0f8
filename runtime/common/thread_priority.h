// lower_thread_priority(steps): the calling thread, and every thread it creates from now on, runs
// `steps` nice levels lower (Linux keeps a nice value per thread). Lowering needs no privilege.
// Returns the nice value now in force, or nullopt with errno set when the kernel refused (the
// caller says what that costs; nothing else changes).
#pragma once

#include <optional>

namespace ppu {

std::optional<int> lower_thread_priority(int steps);

}  // namespace ppu
