// lower_thread_priority(steps): the calling thread, and every thread it creates from now on, runs
// `steps` nice levels lower (Linux keeps a nice value per thread). Lowering needs no privilege.
// Returns the nice value now in force, or nullopt with errno set when the kernel refused (the
// caller says what that costs; nothing else changes).
// run_as_batch_thread(): the calling thread is scheduled as a batch thread (Linux SCHED_BATCH,
// nice value kept): it is never let preempt a running thread when it wakes, so a helper woken by
// the training thread (the checkpoint upload) takes the CPU at the next scheduling decision
// instead of in the middle of the training thread's work. Needs no privilege; false with errno
// set when the kernel refused.
#pragma once

#include <optional>

namespace ppu {

std::optional<int> lower_thread_priority(int steps);
bool run_as_batch_thread();

}  // namespace ppu
