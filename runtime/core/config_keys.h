// The schema of ppu-train's config: one line per key, and the only place a key's name, type,
// default, bounds and one-line doc are written. From these lists config.h declares the Config
// structs, config.cpp parses, validates and writes YAML, and the PPUJob CRD's spec.training
// (ppu-crd, operator/src/crd/) and docs/CONFIG.md (ppu-schema) are rendered (both checked in; the
// ctests operator.crd_file and core.schema_files fail when they drift).
//
// Adding a key is one KEY(...) line in its section's list below, then
//   ninja -C build generate-schema     (rewrites the CRD, its chart copy and docs/CONFIG.md)
// Rules that relate several keys (e.g. overlap_steps < sync_every) are not bounds: they live in
// validate_config (config.cpp), and the CRD's CEL rules where the API server can check them.
//
//   KEY(section, name, type, default, bounds, "doc")
//     type     int | int64_t | uint64_t | double | bool | std::string | a choice enum (core/config_choices.h)
//     bounds   kAny | at_least(x) | above(x) | closed(lo, hi) | half_open(lo, hi)   (numbers only)
//
// model's keys are members of ModelSpec (core/model_spec.h) and default to model.preset's values
// (kFromPreset); model.preset itself is read first (config.cpp), since it decides those defaults.
#pragma once

#include <limits>

namespace ppu {

// The closed or open interval a numeric key must lie in. Checked by validate_config and written
// into the CRD as minimum/maximum (exclusiveMinimum/exclusiveMaximum for open ends).
struct Bounds {
  bool has_min = false, has_max = false;
  double min = 0, max = 0;
  bool min_open = false, max_open = false;
};
inline constexpr Bounds kAny{};
constexpr Bounds at_least(double lo) { return {true, false, lo, 0, false, false}; }
constexpr Bounds above(double lo) { return {true, false, lo, 0, true, false}; }
constexpr Bounds closed(double lo, double hi) { return {true, true, lo, hi, false, false}; }
constexpr Bounds half_open(double lo, double hi) { return {true, true, lo, hi, false, true}; }

// model.preset: read before the other model keys, whose defaults it sets (config.cpp).
inline constexpr const char* kDefaultModelPreset = "small";
inline constexpr const char* kModelPresetDoc =
    "a model shape (layers, d_model, heads, vocab, seq_len); explicit model keys override its values";

// Each section's description, in file order (the CRD and docs/CONFIG.md). "" = the top level.
struct SectionDoc {
  const char* name;
  const char* doc;
};
inline constexpr SectionDoc kSectionDocs[] = {
    {"model", "The transformer's shape: model.preset's sizes, each overridden by an explicit key."},
    {"", "The method, and K for planning."},
    {"slicing", "Which part of the model each rank trains (section 2 of the paper)."},
    {"inner", "The local optimizer every rank runs for H steps between outer rounds."},
    {"outer", "The outer round: delta exchange, count normalisation, the outer step and streaming."},
    {"data", "The corpus and how ranks sample it (docs/DATA.md)."},
    {"train", "Run length, evaluation, logging, device and precision."},
    {"checkpoint", "Where and how often checkpoints are written, and what an unusable one means."},
    {"metrics", "rank 0's Prometheus endpoint (docs/METRICS.md)."},
    {"network", "Collective timeouts and schedule, failure detection and recovery, and ppu-plan's link model."},
};

// The default column of a model key whose value comes from model.preset.
struct FromPreset {};
inline constexpr FromPreset kFromPreset{};

// One key as the visitors of config.cpp see it (the field itself is passed beside it).
struct KeyMeta {
  const char* key;  // dotted, e.g. "inner.lr"
  Bounds bounds;
  const char* doc;
  bool from_preset = false;  // no default of its own: model.preset's value
};

}  // namespace ppu

// clang-format off
#define PPU_MODEL_KEYS(KEY) \
  KEY(model, layers,     int,        kFromPreset,      at_least(1), "transformer blocks") \
  KEY(model, d_model,    int,        kFromPreset,      at_least(1), "residual width; the MLP hidden size is 4*d_model") \
  KEY(model, heads,      int,        kFromPreset,      at_least(1), "attention heads; must divide d_model into an even head size (rotary)") \
  KEY(model, vocab,      int,        kFromPreset,      at_least(2), "vocabulary size (the tokenizer's or the synthetic corpus's)") \
  KEY(model, seq_len,    int,        kFromPreset,      at_least(2), "context length in tokens") \
  KEY(model, activation, Activation, Activation::Relu, kAny,        "MLP nonlinearity (gelu is the exact, erf one)")

#define PPU_TOP_KEYS(KEY) \
  KEY(top, method, Method, Method::Ppu, kAny,        "the training method: PPU or one of the baselines it is compared with") \
  KEY(top, ranks,  int,    4,           at_least(1), "K for ppu-plan; at run time WORLD_SIZE wins (the operator sets it to spec.replicas)")

#define PPU_SLICING_KEYS(KEY) \
  KEY(slicing, mode,     SliceMode, SliceMode::Mlp, kAny,        "what each rank trains a 1/N slice of: mlp (the method), mlp+heads (also Q/K/V heads), none; mlp+heads+wo and horizontal are Appendix A.2's ablations, heads (Q/K/V heads only, MLPs whole) the reviewers' heads-only ablation") \
  KEY(slicing, slices,   int,       4,              at_least(1), "N; rank k trains slice k mod N, so K must be a multiple of N") \
  KEY(slicing, jacobian, Jacobian,  Jacobian::Full, kAny,        "which MLP slices carry the input gradient (Appendix D): full is the method; slice and slice+random are its ablations")

#define PPU_INNER_KEYS(KEY) \
  KEY(inner, optimizer,       InnerOptimizerKind, InnerOptimizerKind::AdamW, kAny,              "the local optimizer (sgd exists for the DDP-equivalence check)") \
  KEY(inner, lr,              double,             3.0e-4,                    above(0),          "peak learning rate, reached after warmup_steps") \
  KEY(inner, beta1,           double,             0.9,                       half_open(0, 1),   "AdamW's first-moment decay") \
  KEY(inner, beta2,           double,             0.99,                      half_open(0, 1),   "AdamW's second-moment decay") \
  KEY(inner, eps,             double,             1.0e-8,                    above(0),          "AdamW's denominator epsilon") \
  KEY(inner, weight_decay,    double,             0.1,                       at_least(0),       "decoupled weight decay of the trainable matrices (and per decay_embedding / decay_norms)") \
  KEY(inner, warmup_steps,    int,                1500,                      at_least(0),       "linear warm-up steps from 0 to lr") \
  KEY(inner, schedule,        LrScheduleKind,     LrScheduleKind::Cosine,    kAny,              "after warm-up: cosine decay to lr*min_lr_ratio at train.steps, or constant") \
  KEY(inner, min_lr_ratio,    double,             0.1,                       closed(0, 1),      "the cosine schedule's floor as a fraction of lr") \
  KEY(inner, batch_size,      int,                16,                        at_least(1),       "sequences per rank per inner step") \
  KEY(inner, grad_clip,       double,             1.0,                       at_least(0),       "max global L2 norm of a rank's trainable gradients; 0 = off (the paper does not clip)") \
  KEY(inner, decay_embedding, bool,               true,                      kAny,              "weight decay on the tied embedding / output head") \
  KEY(inner, decay_norms,     bool,               false,                     kAny,              "weight decay on LayerNorm weights and biases")

#define PPU_OUTER_KEYS(KEY) \
  KEY(outer, optimizer,           OuterOptimizerKind, OuterOptimizerKind::Nesterov, kAny,            "outer step on the averaged deltas: nesterov, or plain averaging") \
  KEY(outer, lr,                  double,             0.4,                          above(0),        "outer learning rate") \
  KEY(outer, momentum,            double,             0.9,                          half_open(0, 1), "outer Nesterov momentum") \
  KEY(outer, sync_every,          int,                100,                          at_least(1),     "H: inner steps per outer round") \
  KEY(outer, layers_per_fragment, int,                3,                            at_least(0),     "layers per streaming fragment; 0 = PPU syncs everything at once, Streaming DiLoCo uses 3; DiLoCo ignores it") \
  KEY(outer, grouping,            Grouping,           Grouping::Layers,             kAny,            "what a streaming fragment is made of: layers, or slices (Appendix A.1)") \
  KEY(outer, overlap_steps,       int,                0,                            at_least(0),     "tau: inner steps a fragment's all-reduce may run in the background (< sync_every)") \
  KEY(outer, overlap_alpha,       double,             0.0,                          closed(0, 1),    "Streaming DiLoCo's merge after an overlapped sync: local = alpha*local + (1-alpha)*global") \
  KEY(outer, delta_dtype,         WireDtype,          WireDtype::Fp32,              kAny,            "precision of the deltas on the wire; sums are fp32") \
  KEY(outer, error_feedback,      bool,               false,                        kAny,            "bf16/int8 deltas: carry each sync's encoding error into the next one") \
  KEY(outer, final_sync,          FinalSync,          FinalSync::Average,           kAny,            "after the last step, fragments not due there: one plain count-normalised average of their trailing deltas, or none") \
  KEY(outer, host_state_dir,      std::string,        "",                           kAny,            "where the fp32 global parameters and outer momentum live: empty = memory, a directory = file-backed mappings in it") \
  KEY(outer, sync_mode,           SyncMode,           SyncMode::All,                kAny,            "when a sync point closes: all (every rank's delta, waiting for the last) or quorum (once quorum_fraction of the ranks, with an owner of every slice, arrived and the grace window passed; a rank still training skips to the sync point, its delta weighted by the steps it trained; docs/QUORUM_SYNC.md)") \
  KEY(outer, quorum_fraction,     double,             0.75,                         closed(0, 1),    "sync_mode quorum: the fraction of the group's ranks (rounded up, at least one) that must arrive before the grace window starts") \
  KEY(outer, quorum_grace_min_s,  double,             0.1,                          at_least(0),     "sync_mode quorum: the grace window's floor in seconds (the window is 2 x the median spread of the quorum's arrivals over the last 8 sync points)") \
  KEY(outer, quorum_grace_max_s,  double,             5.0,                          at_least(0),     "sync_mode quorum: the grace window's ceiling in seconds, and the window before a spread was measured") \
  KEY(outer, quorum_sit_out,      int,                -1,                           at_least(-1),    "sync_mode quorum: sync points a rank at least twice as slow as the quorum (its slice trained by a faster rank, at three meetings in a row) sits out after each one it takes part in: it trains on without meeting the others and rejoins at the next, where its late work is merged or dropped (quorum_late_work); never a checkpoint, an evaluation or the last step. -1 = 16 under network.recovery gang without overlap_steps, else 0; 0 = every rank takes part in every sync point; > 0 needs sync_mode quorum, recovery gang and overlap_steps 0") \
  KEY(outer, quorum_late_work,    LateWork,           LateWork::Merge,              kAny,            "quorum_sit_out: what a rank that sat out does with its progress on the fragments synchronised meanwhile when it rejoins: merge (kept, re-based on the new global parameters, its weight its trained steps / the window x 1 / (1 + the outer steps it missed)) or drop (its parameters reset to the global ones)")

#define PPU_DATA_KEYS(KEY) \
  KEY(data, source,                 DataSource,   DataSource::Synthetic, kAny,        "synthetic (the built-in corpus) or shards (a ppu-data directory at data.path)") \
  KEY(data, path,                   std::string,  "",                    kAny,        "the dataset directory written by ppu-data; required for source shards") \
  KEY(data, tokenizer,              std::string,  "",                    kAny,        "tokenizer file; empty = the dataset directory's own") \
  KEY(data, sampling,               DataSampling, DataSampling::Iid,     kAny,        "iid: every rank samples the whole train split (a stream per seed and rank); contiguous: rank k only its k-th 1/K (non-IID)") \
  KEY(data, synthetic_train_tokens, int64_t,      2000000,               at_least(1), "training tokens of the synthetic corpus") \
  KEY(data, synthetic_val_tokens,   int64_t,      100000,                at_least(1), "validation tokens of the synthetic corpus") \
  KEY(data, synthetic_order,        int,          1,                     at_least(1), "the synthetic corpus's Markov order") \
  KEY(data, synthetic_support,      int,          16,                    at_least(2), "next tokens possible after each context in the synthetic corpus (<= model.vocab)")

#define PPU_TRAIN_KEYS(KEY) \
  KEY(train, steps,        int64_t,  1000,        at_least(1), "inner steps per rank") \
  KEY(train, seed,         uint64_t, 0,           kAny,        "seeds the initial parameters and every rank's data stream") \
  KEY(train, eval_every,   int,      100,         at_least(0), "inner steps between evaluations of the global parameters; 0 = only at the end") \
  KEY(train, eval_batches, int,      8,           at_least(1), "validation batches per evaluation") \
  KEY(train, log_every,    int,      10,          at_least(1), "inner steps between log lines") \
  KEY(train, threads,      int,      0,           at_least(0), "intra-op compute threads; 0 = LibTorch's default") \
  KEY(train, device,       Device,   Device::Cpu, kAny,        "where the model runs") \
  KEY(train, dtype,        Dtype,    Dtype::Fp32, kAny,        "compute precision; bf16 keeps fp32 masters of the trainable slices (section 3.1)") \
  KEY(train, recompute,    bool,     false,       kAny,        "recompute each block's activations in the backward pass") \
  KEY(train, loss_chunk_tokens, int64_t, 0,       at_least(0), "bf16: tokens per chunk of the output head's cross-entropy (the [tokens, vocab] fp32 logits exist one chunk at a time); 0 = as many as make 64 MiB of logits") \
  KEY(train, deterministic, bool,    true,        kAny,        "CUDA: deterministic kernels and cuBLAS workspace, so a resumed run is bit-exact; false may be faster") \
  KEY(train, profile_dir,   std::string, "",     kAny,        "write a PyTorch profiler trace (Chrome JSON, CPU ops and CUDA kernels) of some inner steps here; empty = off") \
  KEY(train, profile_first_step, int64_t, 3,     at_least(0), "first inner step the profiler traces (after warm-up)") \
  KEY(train, profile_steps, int,     2,           at_least(1), "inner steps the profiler traces")

#define PPU_CHECKPOINT_KEYS(KEY) \
  KEY(checkpoint, dir,                    std::string, "",    kAny,        "checkpoint directory, or s3://BUCKET/PREFIX in S3-compatible storage (credentials from the AWS_* variables, the service from the s3_* keys: docs/OBJECT_STORAGE.md); empty = none. PPU_CHECKPOINT_DIR overrides it (pods: /checkpoints)") \
  KEY(checkpoint, upload,                 CheckpointUpload, CheckpointUpload::Auto, kAny, "how a round's checkpoint is written: inline (the round boundary waits until it is committed) or background (each rank's own thread writes its part while the next rounds train, and the group's rank 0 commits the round with its manifest once every member's receipt is there); auto = background for s3://, inline for a directory (docs/OBJECT_STORAGE.md)") \
  KEY(checkpoint, max_in_flight,          int,         1,     at_least(1), "upload background: a rank's checkpoints being written at once, each a serialised copy of its state in memory; a save past it waits for the oldest to finish") \
  KEY(checkpoint, s3_endpoint,            std::string, "",    kAny,        "s3:// checkpoints: the service's URL, scheme://host[:port]; empty = AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS S3 in s3_region") \
  KEY(checkpoint, s3_region,              std::string, "",    kAny,        "s3:// checkpoints: the region requests are signed for; empty = AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1") \
  KEY(checkpoint, s3_path_style,          bool,        true,  kAny,        "s3:// checkpoints: address objects as ENDPOINT/BUCKET/KEY (every S3-compatible server); false = BUCKET.HOST/KEY (virtual-hosted, as AWS prefers)") \
  KEY(checkpoint, every_rounds,           int,         1,     at_least(1), "outer rounds between checkpoints") \
  KEY(checkpoint, keep,                   int,         3,     at_least(1), "checkpoints kept; older ones are deleted") \
  KEY(checkpoint, start_over_if_unusable, bool,        false, kAny,        "every checkpoint in dir unusable: false stops with exit 4 naming each; true trains from step 0 and replaces them") \
  KEY(checkpoint, write_timeout_s,        double,      600,   above(0),    "seconds a rank's checkpoint write may take. Inline: past it the write counts as hung (a stalled NFS or FUSE mount): the rank stops beating, is fenced and replaced, and the others write the round without it (network.recovery live). Background: past it the round is given up (logged and counted) while training goes on. Either way the previous checkpoint stays the resume point") \
  KEY(checkpoint, notice_s,               double,      25,    above(0),    "seconds a rank may take from a notice (SIGTERM or SIGINT: a preemption, a drain, a deleted or evicted pod, Ctrl-C) to its exit: it trains on to the round boundary, where the job agrees who leaves; when the whole job goes it saves that round's checkpoint first. Past this it exits at once. The operator sets the rank pods' terminationGracePeriodSeconds to this + 5 (docs/RECOVERY.md, \"Notices\")")

#define PPU_METRICS_KEYS(KEY) \
  KEY(metrics, port, int, 0, closed(0, 65535), "Prometheus /metrics port of rank 0; 0 = off. PPU_METRICS_PORT overrides it (pods: spec.metricsPort)")

#define PPU_NETWORK_KEYS(KEY) \
  KEY(network, bandwidth_gb_per_s, double,     0,                at_least(0), "ppu-plan's per-link bandwidth in GB/s; 0 = unlimited") \
  KEY(network, timeout_s,          double,     300,              above(0),    "collective and rendezvous timeout in seconds") \
  KEY(network, progress_timeout_s, double,     0,                at_least(0), "seconds a rank's training thread may make no progress (no step, no evaluation batch, not waiting on its peers) before the rank counts as hung: it stops beating, so its peers fence it, and ends itself (exit 5 under recovery live, 3 under gang); 0 = max(2 x heartbeat_s, 20 x the median inner step), not watched before the first steps are measured; needs heartbeat_s > 0") \
  KEY(network, heartbeat_s,        double,     15,               at_least(0), "seconds without a peer's heartbeat before the ranks stop as for a dead peer (a stopped or lost rank, found long before timeout_s); 0 = off") \
  KEY(network, message_bytes,      double,     0,                at_least(0), "ppu-plan: bytes per sync instead of the model's; 0 = the model's") \
  KEY(network, collective,         Collective, Collective::Ring, kAny,        "all-reduce schedule: ring (reduce-scatter + all-gather) or direct") \
  KEY(network, recovery,           Recovery,   Recovery::Gang,   kAny,        "a lost rank: gang (every rank stops; the gang restarts from the last checkpoint) or live (the others finish the round without it, re-form and take its replacement back; docs/RECOVERY.md)") \
  KEY(network, min_live_fraction,  double,     0.5,              closed(0, 1),  "recovery live: below this fraction of the ranks the job requires (every slot, or an elastic job's network.min_ranks) alive the job falls back to a gang restart") \
  KEY(network, min_ranks,          int,        0,                at_least(0),   "recovery live: an elastic job's fewest ranks (docs/RESIZE.md): its size is resized at round boundaries within [min_ranks, WORLD_SIZE] (ppu-launch --ranks and SIGUSR1/SIGUSR2, or ppu-rendezvous --resize), and ranks missing above min_ranks, lost or not started yet, count as no degraded round; 0 = WORLD_SIZE (every rank required, no resizing)") \
  KEY(network, max_uncovered_rounds, int64_t,  2,                at_least(0), "recovery live: rounds an element may go without a live owner before the job falls back to a gang restart") \
  KEY(network, max_degraded_rounds, int64_t,   20,               at_least(0), "recovery live: consecutive rounds the job may finish with a rank missing before it falls back to a gang restart from its last checkpoint (a replacement that cannot come: Pending, or its old pod stuck on a lost node); 0 = fall back at the first degraded round boundary") \
  KEY(network, max_degraded_s,     double,     300,              at_least(0), "recovery live: the fallback of max_degraded_rounds also waits until the job has been missing a rank for this many seconds (the longest any member counted), so that short rounds do not turn a replacement that is merely slow to start into a gang restart; 0 = rounds alone") \
  KEY(network, replacement_inner_state, ReplacementState, ReplacementState::Coowner, kAny, "recovery live: a replacement's inner optimiser state: coowner (the AdamW moments and step of the lowest live rank training the same slice, when there is one; else fresh) or fresh (zero moments)")

// Every section list in file order (the order of to_yaml, the CRD and docs/CONFIG.md).
#define PPU_SECTION_KEYS(KEY) \
  PPU_SLICING_KEYS(KEY) PPU_INNER_KEYS(KEY) PPU_OUTER_KEYS(KEY) PPU_DATA_KEYS(KEY) PPU_TRAIN_KEYS(KEY) \
  PPU_CHECKPOINT_KEYS(KEY) PPU_METRICS_KEYS(KEY) PPU_NETWORK_KEYS(KEY)
// clang-format on
