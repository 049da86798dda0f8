#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ppu {

std::optional<int> lower_thread_priority(int steps) {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);  // -1 is a valid value: errno tells
  if (errno != 0 || setpriority(PRIO_PROCESS, tid, now + steps) != 0) return std::nullopt;
  return now + steps;
}

}  // namespace ppu
