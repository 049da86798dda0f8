// Config: the one training schema shared by configs/*.yaml, `ppu-train`, `ppu-plan` and a
// PPUJob's spec.training (DESIGN.md, "Config keys"). Defaults live here and nowhere else.
// `load_config` reads YAML, applies `--set dotted.key=value` overrides, rejects unknown keys
// and invalid combinations with a ConfigError whose message names the key and the value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model_spec.h"

namespace ppu {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Method { Ppu, DiLoCo, StreamingDiLoCo, Ddp };
// none | mlp | mlp+heads (§2.2) and the Appendix A.2 ablations: mlp+heads+wo (W_O sliced by
// head group too) and horizontal (each rank trains the MLPs of 1/N of the layers).
enum class SliceMode { None, Mlp, MlpHeads, MlpHeadsWo, Horizontal };

struct SlicingConfig {
  SliceMode mode = SliceMode::Mlp;
  int slices = 4;  // N
  // Which MLP slices carry the input gradient (Appendix D): full (every slice, the method),
  // slice (detach all but this rank's slice k) or slice+random (k plus one other slice drawn
  // per step and layer).
  std::string jacobian = "full";
};

struct InnerConfig {
  std::string optimizer = "adamw";  // adamw | sgd (sgd exists for the DDP-equivalence check)
  double lr = 3.0e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1.0e-8;
  double weight_decay = 0.1;
  int warmup_steps = 1500;
  std::string schedule = "cosine";  // cosine | constant
  double min_lr_ratio = 0.1;        // cosine decays to lr * min_lr_ratio at train.steps (the paper's floor is unstated)
  int batch_size = 16;
  double grad_clip = 1.0;           // max global L2 norm of this rank's trainable gradients; 0 = off (the paper does not clip)
  bool decay_embedding = true;      // weight decay on the tied embedding / output head
  bool decay_norms = false;         // weight decay on LayerNorm weights and biases
};

struct OuterConfig {
  std::string optimizer = "nesterov";  // nesterov | average (plain averaging of the deltas)
  double lr = 0.4;
  double momentum = 0.9;
  int sync_every = 100;           // H
  int layers_per_fragment = 3;    // streaming group size; 0 = one fragment (no streaming)
  std::string grouping = "layers";  // layers | slices (Appendix A.1)
  int overlap_steps = 0;          // tau: inner steps a fragment's all-reduce may run in background
  double overlap_alpha = 0.0;     // Streaming DiLoCo's merge after an overlapped sync: θ_k ← α θ_k + (1−α) θ
  std::string delta_dtype = "fp32";  // fp32 | bf16 | int8 (wire precision; sums are fp32)
  bool error_feedback = false;    // bf16/int8: carry each sync's encoding error into the next one
  // After the last step, a fragment whose schedule has no sync there: "average" folds its
  // trailing local progress into θ with one plain count-normalised average (no momentum, no
  // outer lr); "none" leaves θ at its last scheduled sync and drops that progress.
  std::string final_sync = "average";
};

struct DataConfig {
  std::string source = "synthetic";  // synthetic | shards
  std::string path;                  // dataset directory for shards (or a synthetic one written by ppu-data)
  std::string tokenizer;
  int64_t synthetic_train_tokens = 2000000;
  int64_t synthetic_val_tokens = 100000;
  int synthetic_order = 1;  // order-1 contexts are learnable by small models in minutes
  int synthetic_support = 16;
};

struct TrainConfig {
  int64_t steps = 1000;
  uint64_t seed = 0;
  int eval_every = 100;    // 0 = only at the end
  int eval_batches = 8;
  int log_every = 10;
  int threads = 0;         // intra-op threads; 0 = LibTorch default
  std::string device = "cpu";   // cpu | cuda
  std::string dtype = "fp32";   // fp32 | bf16 (bf16 compute with fp32 master of trainable slices)
  bool recompute = false;       // per-block activation recomputation
};

struct CheckpointConfig {
  std::string dir;   // empty = no checkpoints; PPU_CHECKPOINT_DIR overrides
  int every_rounds = 1;
  int keep = 3;
};

struct MetricsConfig {
  int port = 0;  // 0 = off; PPU_METRICS_PORT overrides
};

struct NetworkConfig {
  double bandwidth_gb_per_s = 0;   // ppu-plan's per-link bandwidth; 0 = unlimited
  double timeout_s = 300;          // collective and rendezvous timeout
  double message_bytes = 0;        // ppu-plan: override M (bytes per sync) instead of the model's
  std::string collective = "ring";  // all-reduce schedule: ring | direct (docs/COMMUNICATION.md)
};

struct Config {
  ModelSpec model;
  Method method = Method::Ppu;
  int ranks = 4;  // K for planning; at run time WORLD_SIZE wins
  SlicingConfig slicing;
  InnerConfig inner;
  OuterConfig outer;
  DataConfig data;
  TrainConfig train;
  CheckpointConfig checkpoint;
  MetricsConfig metrics;
  NetworkConfig network;

  // N actually in effect: 1 when the method or mode does not slice.
  int effective_slices() const;
  // Fragments synchronise in a staggered way (streaming) rather than all at once.
  bool streaming() const;
};

// Reads `path` (may be empty: defaults only), applies overrides "a.b=value" in order, validates.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from YAML text (the PPUJob operator and tests use it).
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                    const std::string& origin = "<config>");
// Checks cross-field constraints for `world_size` ranks; throws ConfigError naming the keys.
void validate_config(const Config& config, int world_size);
// The config as YAML (all keys, defaults filled in): stored in checkpoints and summaries.
std::string to_yaml(const Config& config);

// Whether AdamW/SGD weight decay applies to a parameter of `role`: matrices always, the tied
// embedding per inner.decay_embedding, LayerNorm parameters per inner.decay_norms.
bool applies_weight_decay(const InnerConfig& inner, ParamRole role);

std::string method_name(Method m);
std::string slice_mode_name(SliceMode m);

}  // namespace ppu
