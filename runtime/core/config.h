// Config: the one training schema shared by configs/*.yaml, `ppu-train`, `ppu-plan` and a
// PPUJob's spec.training (DESIGN.md, "Config keys"). Defaults live here and nowhere else.
// `load_config` reads YAML, applies `--set dotted.key=value` overrides, rejects unknown keys
// and invalid combinations with a ConfigError whose message names the key and the value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/model_spec.h"

namespace ppu {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Choices. Every key whose value is one of a fixed set of names is an enum: parse_config reads
// the name once and rejects any other with a ConfigError naming the key and the allowed values;
// choice_name() spells a value back (summaries, checkpoints, logs). The tables are in config.cpp.
enum class Method { Ppu, DiLoCo, StreamingDiLoCo, Ddp };  // method
// none | mlp | mlp+heads (§2.2) and the Appendix A.2 ablations: mlp+heads+wo (W_O sliced by
// head group too) and horizontal (each rank trains the MLPs of 1/N of the layers).
enum class SliceMode { None, Mlp, MlpHeads, MlpHeadsWo, Horizontal };  // slicing.mode
enum class Jacobian { Full, Slice, SliceRandom };                      // slicing.jacobian: full | slice | slice+random
enum class InnerOptimizerKind { AdamW, Sgd };                          // inner.optimizer: adamw | sgd
enum class LrScheduleKind { Cosine, Constant };                        // inner.schedule: cosine | constant
enum class OuterOptimizerKind { Nesterov, Average };                   // outer.optimizer: nesterov | average
enum class Grouping { Layers, Slices };                                // outer.grouping: layers | slices
enum class WireDtype { Fp32, Bf16, Int8 };                             // outer.delta_dtype: fp32 | bf16 | int8
enum class FinalSync { Average, None };                                // outer.final_sync: average | none
enum class DataSource { Synthetic, Shards };                           // data.source: synthetic | shards
enum class DataSampling { Iid, Contiguous };                           // data.sampling: iid | contiguous
enum class Device { Cpu, Cuda };                                       // train.device: cpu | cuda
enum class Dtype { Fp32, Bf16 };                                       // train.dtype: fp32 | bf16
enum class Collective { Ring, Direct };                                // network.collective: ring | direct

std::string choice_name(Activation v);
std::string choice_name(Method v);
std::string choice_name(SliceMode v);
std::string choice_name(Jacobian v);
std::string choice_name(InnerOptimizerKind v);
std::string choice_name(LrScheduleKind v);
std::string choice_name(OuterOptimizerKind v);
std::string choice_name(Grouping v);
std::string choice_name(WireDtype v);
std::string choice_name(FinalSync v);
std::string choice_name(DataSource v);
std::string choice_name(DataSampling v);
std::string choice_name(Device v);
std::string choice_name(Dtype v);
std::string choice_name(Collective v);
// The value spelled `name` in the choice of config key `key`, e.g.
// parse_choice<WireDtype>("outer.delta_dtype", "int8"); throws ConfigError naming the key, the
// value and the allowed names. Instantiated for every choice above.
template <class E>
E parse_choice(const std::string& key, const std::string& name);
// Every choice key with its allowed names in table order, e.g. {"train.dtype", {"fp32", "bf16"}}
// (the CRD's enums are tested against it).
std::vector<std::pair<std::string, std::vector<std::string>>> config_choices();

struct SlicingConfig {
  SliceMode mode = SliceMode::Mlp;
  int slices = 4;  // N
  // Which MLP slices carry the input gradient (Appendix D): full (every slice, the method),
  // slice (detach all but this rank's slice k) or slice+random (k plus one other slice drawn
  // per step and layer).
  Jacobian jacobian = Jacobian::Full;
};

struct InnerConfig {
  InnerOptimizerKind optimizer = InnerOptimizerKind::AdamW;  // sgd exists for the DDP-equivalence check
  double lr = 3.0e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1.0e-8;
  double weight_decay = 0.1;
  int warmup_steps = 1500;
  LrScheduleKind schedule = LrScheduleKind::Cosine;
  double min_lr_ratio = 0.1;  // cosine decays to lr * min_lr_ratio at train.steps (the paper's floor is unstated)
  int batch_size = 16;
  double grad_clip = 1.0;  // max global L2 norm of this rank's trainable gradients; 0 = off (the paper does not clip)
  bool decay_embedding = true;  // weight decay on the tied embedding / output head
  bool decay_norms = false;     // weight decay on LayerNorm weights and biases
};

struct OuterConfig {
  OuterOptimizerKind optimizer = OuterOptimizerKind::Nesterov;  // average: plain averaging of the deltas
  double lr = 0.4;
  double momentum = 0.9;
  int sync_every = 100;  // H
  // Layers per streaming fragment. PPU with 0 syncs every parameter at once (one fragment);
  // Streaming DiLoCo always streams and uses 3 when this is 0; DiLoCo ignores it (one
  // fragment). See core/streaming_schedule.
  int layers_per_fragment = 3;
  Grouping grouping = Grouping::Layers;  // slices: Appendix A.1
  int overlap_steps = 0;                 // tau: inner steps a fragment's all-reduce may run in background
  double overlap_alpha = 0.0;  // Streaming DiLoCo's merge after an overlapped sync: θ_k ← α θ_k + (1−α) θ
  WireDtype delta_dtype = WireDtype::Fp32;  // wire precision; sums are fp32
  bool error_feedback = false;              // bf16/int8: carry each sync's encoding error into the next one
  // After the last step, a fragment whose schedule has no sync there: "average" folds its
  // trailing local progress into θ with one plain count-normalised average (no momentum, no
  // outer lr); "none" leaves θ at its last scheduled sync and drops that progress.
  FinalSync final_sync = FinalSync::Average;
  // Where θ and the outer momentum live: "" = host memory; a directory = file-backed mappings in
  // it (engine/host_store.h), for CPU-only runs whose RAM the inner state already fills.
  std::string host_state_dir;
};

struct DataConfig {
  DataSource source = DataSource::Synthetic;
  std::string path;  // dataset directory for shards (or a synthetic one written by ppu-data)
  std::string tokenizer;
  // iid: every rank samples windows from the whole train split, a stream per (seed, rank), as
  // DistributedSampler(shuffle=True) does. contiguous: rank k samples only inside the k-th
  // contiguous 1/K of the split (non-IID ranks, for federated-style experiments).
  DataSampling sampling = DataSampling::Iid;
  int64_t synthetic_train_tokens = 2000000;
  int64_t synthetic_val_tokens = 100000;
  int synthetic_order = 1;  // order-1 contexts are learnable by small models in minutes
  int synthetic_support = 16;
};

struct TrainConfig {
  int64_t steps = 1000;
  uint64_t seed = 0;
  int eval_every = 100;  // 0 = only at the end
  int eval_batches = 8;
  int log_every = 10;
  int threads = 0;  // intra-op threads; 0 = LibTorch default
  Device device = Device::Cpu;
  Dtype dtype = Dtype::Fp32;  // bf16: bf16 compute with fp32 masters of the trainable slices (§3.1)
  bool recompute = false;     // per-block activation recomputation
};

struct CheckpointConfig {
  std::string dir;  // empty = no checkpoints; PPU_CHECKPOINT_DIR overrides
  int every_rounds = 1;
  int keep = 3;
  // Every checkpoint in dir unusable (corrupt, another format, model or world size): false stops
  // the run with exit 4 naming each; true trains from step 0 and replaces them. Never a fallback.
  bool start_over_if_unusable = false;
};

struct MetricsConfig {
  int port = 0;  // 0 = off; PPU_METRICS_PORT overrides
};

struct NetworkConfig {
  double bandwidth_gb_per_s = 0;             // ppu-plan's per-link bandwidth; 0 = unlimited
  double timeout_s = 300;                    // collective and rendezvous timeout
  double message_bytes = 0;                  // ppu-plan: override M (bytes per sync) instead of the model's
  Collective collective = Collective::Ring;  // all-reduce schedule (docs/COMMUNICATION.md)
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
// Same, from YAML text (ppu-export reads a checkpoint's config with it; tests too). The operator
// does not parse spec.training: the CRD's schema and CEL rules check it at admission, and a
// rank exits 2 on anything they cannot.
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                    const std::string& origin = "<config>");
// Checks cross-field constraints for `world_size` ranks; throws ConfigError naming the keys.
void validate_config(const Config& config, int world_size);
// The slicing part of it, the one check of (model, mode, K, N) that validate_config and the
// SlicePlan constructor both run: N divides K, the MLP hidden size, the heads (mlp+heads,
// mlp+heads+wo) or the layers (horizontal).
void check_slicing(const ModelSpec& m, SliceMode mode, int world_size, int n);
// The config as YAML (all keys, defaults filled in): stored in checkpoints and summaries.
std::string to_yaml(const Config& config);

// Whether AdamW/SGD weight decay applies to a parameter of `role`: matrices always, the tied
// embedding per inner.decay_embedding, LayerNorm parameters per inner.decay_norms.
bool applies_weight_decay(const InnerConfig& inner, ParamRole role);

inline std::string method_name(Method m) { return choice_name(m); }
inline std::string slice_mode_name(SliceMode m) { return choice_name(m); }

}  // namespace ppu
