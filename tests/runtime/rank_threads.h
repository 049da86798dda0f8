// Test helper: runs K ranks of a job as threads of this process, each with its own Gloo
// process group rendezvousing on a free loopback port, and returns their summaries.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "engine/trainer.h"

namespace ppu::testing {

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Runs body(rank, env) on K threads with rendezvous set up; rethrows the first failure.
inline void run_ranks(int world, const std::function<void(int, const RunEnv&)>& body) {
  const int port = free_port();
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      RunEnv env;
      env.rendezvous.rank = r;
      env.rendezvous.world_size = world;
      env.rendezvous.master_port = port;
      try {
        body(r, env);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

struct JobResult {
  std::vector<nlohmann::json> summaries;
  std::vector<float> params;  // rank 0's final global parameters
};

inline JobResult train_job(const Config& config, int world) {
  JobResult result;
  result.summaries.resize(world);
  run_ranks(world, [&](int r, RunEnv env) {
    if (r == 0) env.final_params = &result.params;
    result.summaries[r] = train(config, env);
  });
  return result;
}

}  // namespace ppu::testing
