// Test helper: runs K ranks of a job as threads of this process, each with its own Gloo
// process group rendezvousing on a free loopback port, and returns their summaries.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../common/free_port.h"
#include "engine/trainer.h"

namespace ppu::testing {

// Runs body(rank, env) on K threads with rendezvous set up; rethrows the first failure.
inline void run_ranks(int world, const std::function<void(int, const RunEnv&)>& body) {
  const int port = free_port();
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  threads.reserve(world);
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

// The tiny synthetic job the multi-rank tests share (2 layers, seq 32, 12 steps, H = 4, one
// layer per fragment, K = 4), with `overrides` applied after it (later keys win).
inline Config tiny_job(const std::vector<std::string>& overrides) {
  std::vector<std::string> all = {"model.preset=tiny",
                                  "model.seq_len=32",
                                  "train.steps=12",
                                  "train.eval_every=0",
                                  "train.eval_batches=1",
                                  "train.log_every=100",
                                  "inner.batch_size=2",
                                  "inner.warmup_steps=2",
                                  "outer.sync_every=4",
                                  "outer.layers_per_fragment=1",
                                  "data.synthetic_train_tokens=40000",
                                  "data.synthetic_val_tokens=4000",
                                  "ranks=4"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return parse_config("", all);
}

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
