#include "cmd/store_watch.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <utility>

#include "cmd/probe_line.h"

namespace ppu {

StoreWatch::StoreWatch(std::string binary, int port, double every_s, double timeout_s)
    : binary_(std::move(binary)), port_(port), every_(every_s), timeout_(timeout_s) {
  start();
}

StoreWatch::~StoreWatch() { stop(); }

// A watcher that cannot start (no process or descriptor left) is tried again a period later; it
// says nothing about the store, so it is not counted against it.
void StoreWatch::start() {
  const auto cannot = [this](const char* what) {
    std::cerr << "[launch] cannot start the store's watch (" << what << ": " << std::strerror(errno)
              << "): trying again in " << every_ << " s\n";
    pid_ = -1;
    next_start_ = Clock::now() + period();
  };
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return cannot("pipe");
  const std::string target = "127.0.0.1:" + std::to_string(port_), timeout = std::to_string(timeout_),
                    every = std::to_string(every_);
  pid_ = fork();
  if (pid_ < 0) {
    close(fds[0]);
    close(fds[1]);
    return cannot("fork");
  }
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // no watcher outlives ppu-launch
    dup2(fds[1], STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDERR_FILENO);
    execlp(binary_.c_str(), binary_.c_str(), "--probe", target.c_str(), "--timeout", timeout.c_str(), "--every",
           every.c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  fd_ = fds[0];
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  pending_.clear();
  last_heard_ = Clock::now();
}

void StoreWatch::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
  pid_ = -1;
  fd_ = -1;
}

void StoreWatch::restart() {
  stop();
  unanswered_ = 0;
  start();
}

void StoreWatch::heard(const std::string& line) {
  last_heard_ = Clock::now();
  unanswered_ = line.find(probe_line::kAnswered) != std::string::npos ? 0 : unanswered_ + 1;
}

bool StoreWatch::frozen() {
  const auto now = Clock::now();
  if (pid_ < 0) {
    if (now >= next_start_) start();
    return false;
  }
  char buf[1024];
  ssize_t n = 0;
  while ((n = read(fd_, buf, sizeof buf)) > 0) pending_.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = pending_.find('\n')) != std::string::npos; pending_.erase(0, nl + 1))
    heard(pending_.substr(0, nl));
  // The watcher exited (n == 0: it could not run) or hangs: neither is an answer; another one
  // starts a period later.
  if (n == 0 || now - last_heard_ > std::chrono::duration<double>(timeout_ + every_ + 10)) {
    ++unanswered_;
    stop();
    next_start_ = now + period();
  }
  if (unanswered_ < 2) return false;
  unanswered_ = 0;
  return true;
}

}  // namespace ppu
