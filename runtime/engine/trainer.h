// Trainer: one rank of a PPU job (or of a DiLoCo / Streaming DiLoCo / DDP baseline), reading
// like Algorithm 1: H local steps on this rank's trainable slice with its own data shard D_k,
// then streaming outer synchronisation of fragments; checkpoints at round boundaries, held-out
// evaluation, FLOPs and memory accounting, metrics and a JSON summary at the end.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/run_summary.h"
#include "engine/comm/collectives.h"

namespace ppu {

// What a rank learns from its environment besides the config.
struct RunEnv {
  RendezvousInfo rendezvous;  // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
  std::string run_id = "local";
  std::string checkpoint_dir;  // PPU_CHECKPOINT_DIR, else checkpoint.dir
  int metrics_port = 0;        // PPU_METRICS_PORT, else metrics.port
  // When set, receives the final global parameters, flattened in layout order (tests).
  std::vector<float>* final_params = nullptr;
};

// Everything about `config` that would stop a rank of `env.rendezvous.world_size` before training, checked
// without rendezvous or training: the config for that K, train.device / train.dtype against
// this build and machine, and the dataset directory (meta.json readable, shards present, vocab
// within model.vocab). Throws ConfigError (exit 2) or data::ShardError (exit 4). `ppu-train
// --check` runs it, so ppu-launch reports a bad config once before it starts any rank.
void check_runnable(const Config& config, const RunEnv& env);

// Trains to config.train.steps and returns this rank's summary (onednn and blas left for the
// caller to fill). Throws ConfigError (bad config), PeerError (a peer died or timed out),
// CheckpointError or data::ShardError (unusable checkpoint or data) or others on failure.
RunSummary train(const Config& config, const RunEnv& env);

}  // namespace ppu
