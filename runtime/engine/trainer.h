// Trainer: one rank of a PPU job (or of a DiLoCo / Streaming DiLoCo / DDP baseline), reading
// like Algorithm 1: H local steps on this rank's trainable slice with its own data shard D_k,
// then streaming outer synchronisation of fragments; checkpoints at round boundaries, held-out
// evaluation, FLOPs and memory accounting, metrics and a JSON summary at the end.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"

namespace ppu {

struct RunEnv {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string run_id = "local";
  std::string checkpoint_dir;  // PPU_CHECKPOINT_DIR, else checkpoint.dir
  int metrics_port = 0;        // PPU_METRICS_PORT, else metrics.port
  // When set, receives the final global parameters, flattened in layout order (tests).
  std::vector<float>* final_params = nullptr;
};

// Trains to config.train.steps and returns the summary (DESIGN.md keys). Throws ConfigError
// (bad config), PeerError (a peer died or timed out) or other exceptions on failure.
nlohmann::json train(const Config& config, const RunEnv& env);

}  // namespace ppu
