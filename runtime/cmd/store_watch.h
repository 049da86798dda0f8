// StoreWatch: ppu-launch's watch on a live job's rendezvous store — whether it still answers.
// A stopped (SIGSTOP, a frozen VM) or wedged store accepts connections but answers nothing, so
// only a request tells. One `ppu-rendezvous --probe 127.0.0.1:PORT --timeout T --every S` runs
// per store incarnation (LibTorch loads once, not once a probe: a probe process a second cost a
// third of a core) and prints a line per request (cmd/probe_line.h).
//
// Contract: frozen() never blocks; it is true once two requests in a row got no answer within T
// (the next request goes out at once after an unanswered one, so a frozen store is found within
// about S + 2T), or the watcher printed nothing for T + S + 10 s (it hangs itself: counted as
// unanswered, and another starts a period later, as after one that exited); then the count
// starts afresh. restart(): the store was started again; nothing the old one answered or not
// counts. The watcher dies with ppu-launch; one that cannot start (no process or descriptor
// left) is tried again a period later and counts as nothing. Nothing here throws.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace ppu {

class StoreWatch {
 public:
  using Clock = std::chrono::steady_clock;
  StoreWatch(std::string binary, int port, double every_s, double timeout_s);
  ~StoreWatch();
  StoreWatch(const StoreWatch&) = delete;
  StoreWatch& operator=(const StoreWatch&) = delete;

  bool frozen();
  void restart();
  double timeout() const { return timeout_; }

 private:
  void start();
  void stop();
  // One line from the watcher: an answer resets the count, anything else adds to it.
  void heard(const std::string& line);
  Clock::duration period() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(every_));
  }

  std::string binary_;
  int port_;
  double every_, timeout_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string pending_;
  int unanswered_ = 0;
  Clock::time_point last_heard_, next_start_;
};

}  // namespace ppu
