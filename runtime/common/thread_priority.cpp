#include "common/thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ppu {

std::optional<int> lower_thread_priority(int steps) {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);  // -1 is a valid value: errno tells
  if (errno != 0 || setpriority(PRIO_PROCESS, tid, now + steps) != 0) return std::nullopt;
  return std::min(now + steps, 19);  // the kernel caps nice values at 19
}

bool run_as_batch_thread() {
  const sched_param none{};  // SCHED_BATCH has no static priority
  return sched_setscheduler(static_cast<pid_t>(syscall(SYS_gettid)), SCHED_BATCH, &none) == 0;
}

}  // namespace ppu
