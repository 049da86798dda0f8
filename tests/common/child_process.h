// ChildProcess: a program the tests start beside themselves (ppu-operator, a SeaweedFS server),
// its stdout and stderr appended to a log file. spawn(argv, log) forks and execs argv[0] (a path,
// no PATH search); kill_hard() SIGKILLs and reaps; terminate(timeout_s) SIGTERMs, waits up to
// timeout_s, then SIGKILLs, and returns the exit status (-1 when it did not exit on its own);
// stop() SIGSTOPs and resume() SIGCONTs it (a frozen server). Header-only, shared by the
// operator's and the object store's tests.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

namespace ppu::testing {

struct ChildProcess {
  pid_t pid = -1;

  void kill_hard() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    pid = -1;
  }

  int terminate(double timeout_s = 30) {
    if (pid <= 0) return -1;
    ::kill(pid, SIGTERM);
    int st = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid, &st, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill_hard();
    return -1;
  }

  void stop() const {
    if (pid > 0) ::kill(pid, SIGSTOP);
  }
  void resume() const {
    if (pid > 0) ::kill(pid, SIGCONT);
  }
};

inline ChildProcess spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  ChildProcess p;
  p.pid = fork();
  if (p.pid == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return p;
}

}  // namespace ppu::testing
