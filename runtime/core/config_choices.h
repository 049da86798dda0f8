// The choice-valued config keys: one line per choice declares its enum, the config key that holds
// it and each value's config spelling, in the order the docs list them. From this list config.h
// declares the enums and choice_name(), and config.cpp builds the tables that parse_choice,
// choice_names and the CRD's enum lists (ppu-crd) read; the operator parses the same names through
// parse_choice. What each value means is written once, in its key's doc (config_keys.h).
//
// Adding a choice key is one CHOICE(...) line here and one KEY(...) line in config_keys.h whose
// type is the enum; `ninja -C build generate-schema` then rewrites the CRD and docs/CONFIG.md.
//
//   CHOICE(Enum, "section.key", VALUE(Enumerator, "spelling") ...)
//
// Each consumer defines CHOICE and VALUE, expands PPU_CONFIG_CHOICES, then undefines both.
#pragma once

// clang-format off
#define PPU_CONFIG_CHOICES                                                                                                                      \
  CHOICE(Activation,         "model.activation",     VALUE(Relu, "relu") VALUE(Gelu, "gelu"))                                                  \
  CHOICE(Method,             "method",               VALUE(Ppu, "ppu") VALUE(DiLoCo, "diloco") VALUE(StreamingDiLoCo, "streaming-diloco")      \
                                                     VALUE(Ddp, "ddp"))                                                                        \
  CHOICE(SliceMode,          "slicing.mode",         VALUE(None, "none") VALUE(Mlp, "mlp") VALUE(MlpHeads, "mlp+heads")                        \
                                                     VALUE(MlpHeadsWo, "mlp+heads+wo") VALUE(Horizontal, "horizontal") VALUE(Heads, "heads"))  \
  CHOICE(Jacobian,           "slicing.jacobian",     VALUE(Full, "full") VALUE(Slice, "slice") VALUE(SliceRandom, "slice+random"))             \
  CHOICE(InnerOptimizerKind, "inner.optimizer",      VALUE(AdamW, "adamw") VALUE(Sgd, "sgd"))                                                  \
  CHOICE(LrScheduleKind,     "inner.schedule",       VALUE(Cosine, "cosine") VALUE(Constant, "constant"))                                      \
  CHOICE(OuterOptimizerKind, "outer.optimizer",      VALUE(Nesterov, "nesterov") VALUE(Average, "average"))                                    \
  CHOICE(Grouping,           "outer.grouping",       VALUE(Layers, "layers") VALUE(Slices, "slices"))                                          \
  CHOICE(WireDtype,          "outer.delta_dtype",    VALUE(Fp32, "fp32") VALUE(Bf16, "bf16") VALUE(Int8, "int8"))                              \
  CHOICE(FinalSync,          "outer.final_sync",     VALUE(Average, "average") VALUE(None, "none"))                                            \
  CHOICE(SyncMode,           "outer.sync_mode",      VALUE(All, "all") VALUE(Quorum, "quorum"))                                                \
  CHOICE(LateWork,           "outer.quorum_late_work", VALUE(Merge, "merge") VALUE(Drop, "drop"))                                           \
  CHOICE(DataSource,         "data.source",          VALUE(Synthetic, "synthetic") VALUE(Shards, "shards"))                                    \
  CHOICE(DataSampling,       "data.sampling",        VALUE(Iid, "iid") VALUE(Contiguous, "contiguous"))                                        \
  CHOICE(Device,             "train.device",         VALUE(Cpu, "cpu") VALUE(Cuda, "cuda"))                                                    \
  CHOICE(Dtype,              "train.dtype",          VALUE(Fp32, "fp32") VALUE(Bf16, "bf16"))                                                  \
  CHOICE(Collective,         "network.collective",   VALUE(Ring, "ring") VALUE(Direct, "direct"))                                              \
  CHOICE(Recovery,           "network.recovery",     VALUE(Gang, "gang") VALUE(Live, "live"))                                                  \
  CHOICE(ReplacementState,   "network.replacement_inner_state", VALUE(Coowner, "coowner") VALUE(Fresh, "fresh"))               \
  CHOICE(CheckpointUpload,   "checkpoint.upload",    VALUE(Auto, "auto") VALUE(Inline, "inline") VALUE(Background, "background"))
// clang-format on

namespace ppu {

// The enums, e.g. enum class Recovery { Gang, Live }.
#define VALUE(enumerator, spelling) enumerator,
#define CHOICE(Enum, key, values) enum class Enum { values };
PPU_CONFIG_CHOICES
#undef CHOICE
#undef VALUE

// The config key whose value is a choice of enum E, e.g. "network.recovery" for Recovery.
template <class E>
const char* choice_key();
#define CHOICE(Enum, key, values)         \
  template <>                             \
  inline const char* choice_key<Enum>() { \
    return key;                           \
  }
PPU_CONFIG_CHOICES
#undef CHOICE

}  // namespace ppu
