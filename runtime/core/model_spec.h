// ModelSpec: the shape of a decoder-only transformer (presets and explicit sizes) and the
// canonical list of its parameters. Every other part of the runtime (slice plan, cost model,
// LibTorch model, checkpoints) names parameters through `parameter_layout`, so the order and
// the names below are a contract. No LibTorch here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config_choices.h"  // Activation

namespace ppu {

struct ModelSpec {
  // The MLP's hidden size per unit of d_model (GPT's 4): the CRD's divisibility rule reads it too.
  static constexpr int kMlpExpansion = 4;
  std::string preset;  // empty when fully explicit
  int layers = 0;
  int d_model = 0;
  int heads = 0;
  int vocab = 0;
  int seq_len = 0;
  Activation activation = Activation::Relu;

  int mlp_hidden() const { return kMlpExpansion * d_model; }
  int head_dim() const { return d_model / heads; }
};

// The presets: tiny (unit tests), small (CPU demo), GPT-2 124M/350M, GPT-3 XL (1.3B).
std::optional<ModelSpec> model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

// What a parameter is, for slicing and streaming decisions.
enum class ParamRole { Embedding, Norm, AttnQ, AttnK, AttnV, AttnOut, MlpUp, MlpDown };

struct ParamInfo {
  std::string name;            // e.g. "blocks.3.mlp.up.weight"
  std::vector<int64_t> shape;  // PyTorch layout: Linear weights are [out_features, in_features]
  ParamRole role;
  int layer;  // block index, or -1 for embeddings and the final norm
  int64_t numel() const;
};

// A block's parameters, in their layout order (the one place that order is written).
enum BlockParam : int {
  kLn1Weight,
  kLn1Bias,
  kWq,
  kWk,
  kWv,
  kWo,
  kLn2Weight,
  kLn2Bias,
  kMlpUp,
  kMlpDown,
  kParamsPerBlock
};
// Where block `layer`'s parameter `p` is in parameter_layout (tok_emb comes first).
constexpr int block_param_index(int layer, BlockParam p) { return 1 + layer * kParamsPerBlock + p; }

// All parameters in a fixed order: tok_emb, then per block its BlockParams, named
// blocks.<l>.{ln1.weight, ln1.bias, attn.wq.weight, attn.wk.weight, attn.wv.weight, attn.wo.weight,
// ln2.weight, ln2.bias, mlp.up.weight, mlp.down.weight}, then ln_f.{weight,bias}. The output head
// is tied to tok_emb.
std::vector<ParamInfo> parameter_layout(const ModelSpec& spec);
int64_t total_parameters(const ModelSpec& spec);

}  // namespace ppu
