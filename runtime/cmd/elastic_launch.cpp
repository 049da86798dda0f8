#include "cmd/elastic_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <utility>

#include "core/exit_status.h"

namespace ppu {

ElasticLaunch::ElasticLaunch(std::string rendezvous, int port, int slots, int required, int desired)
    : rendezvous_(std::move(rendezvous)), port_(port), slots_(slots), required_(required), desired_(desired) {
  if (desired == slots) return;
  if (!elastic())
    throw ConfigError("--ranks " + std::to_string(desired) + " below --nproc " + std::to_string(slots) +
                      " needs an elastic job: set network.min_ranks (and network.recovery live)");
  if (desired < required || desired > slots)
    throw ConfigError("--ranks " + std::to_string(desired) + " must be within [network.min_ranks = " +
                      std::to_string(required) + ", --nproc = " + std::to_string(slots) + "]");
}

bool ElasticLaunch::tell_store() const {
  const std::string target = "127.0.0.1:" + std::to_string(port_), ranks = std::to_string(desired_);
  const pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "[launch] cannot tell the store the job's size " << ranks << ": fork failed\n";
    return false;
  }
  if (pid == 0) {
    execlp(rendezvous_.c_str(), rendezvous_.c_str(), "--resize", target.c_str(), "--ranks", ranks.c_str(), "--timeout",
           "5", nullptr);
    _exit(127);
  }
  // Until it has ended: a signal (the next SIGUSR1) must not leave it running beside the next
  // write, which it could then overwrite with an older size.
  int status = 0;
  pid_t got;
  while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  const bool ok = got == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok)
    std::cerr << "[launch] the store did not take the job's size " << ranks << " (told again at the next change)\n";
  return ok;
}

std::optional<int> ElasticLaunch::grow() {
  if (!elastic() || desired_ == slots_) {
    std::cerr << "[launch] SIGUSR1: the job has " << desired_ << " of " << slots_
              << (elastic() ? " slots already: it cannot grow" : " slots and is not elastic (network.min_ranks)")
              << "\n";
    return std::nullopt;
  }
  ++desired_;
  std::cerr << "[launch] SIGUSR1: growing the job to " << desired_ << " ranks: starting slot " << desired_ - 1
            << ", taken in at the next round boundary or sync point\n";
  return desired_ - 1;
}

bool ElasticLaunch::shrink() {
  if (!elastic() || desired_ == required_) {
    std::cerr << "[launch] SIGUSR2: the job has " << desired_ << " ranks, "
              << (elastic() ? "network.min_ranks: it cannot shrink" : "and is not elastic (network.min_ranks)") << "\n";
    return false;
  }
  --desired_;
  std::cerr << "[launch] SIGUSR2: shrinking the job to " << desired_ << " ranks: slot " << desired_
            << " retires at the next round boundary\n";
  return true;
}

}  // namespace ppu
