// hf_model: our decoder as Hugging Face's GPT-NeoX architecture (transformers'
// GPTNeoXForCausalLM), which computes the same function: pre-LayerNorm blocks with a sequential
// residual (use_parallel_residual false), rotary over the whole head with halves paired
// (rotary_pct 1.0, base 10000), causal attention scaled by 1/sqrt(head_dim), a 4·d MLP with
// exact GELU or ReLU, a final LayerNorm and an output head tied to the embedding.
//
// Tensor names and layouts (GPT-NeoX's):
//   gpt_neox.embed_in.weight                         <- tok_emb.weight (embed_out is tied to it)
//   gpt_neox.layers.L.input_layernorm.{weight,bias}  <- blocks.L.ln1
//   gpt_neox.layers.L.attention.query_key_value.weight [3d, d] <- W_q, W_k, W_v fused per head:
//       rows [h·3·hd, (h+1)·3·hd) are head h's q rows, then its k rows, then its v rows
//   gpt_neox.layers.L.attention.dense.weight         <- blocks.L.attn.wo
//   gpt_neox.layers.L.post_attention_layernorm.*     <- blocks.L.ln2
//   gpt_neox.layers.L.mlp.dense_h_to_4h.{weight,bias}, dense_4h_to_h.{weight,bias}
//                                                    <- mlp.up / mlp.down; biases are zeros
//                                                       (GPT-NeoX's MLP always has them)
//   gpt_neox.final_layer_norm.{weight,bias}          <- ln_f
// The attention has no biases (attention_bias false).
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "core/model_spec.h"
#include "export/hf_tokenizer.h"

namespace ppu {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// `params`: the model's parameters in parameter_layout order (fp32). Returns the GPT-NeoX
// tensors in `dtype` (contiguous, new storage), in the order of the table above.
NamedTensors gpt_neox_tensors(const ModelSpec& spec, const std::vector<torch::Tensor>& params, torch::ScalarType dtype);

// W_q, W_k, W_v ([d, d] each, head-major rows) as GPT-NeoX's fused [3d, d] query_key_value.
torch::Tensor fuse_qkv(const torch::Tensor& wq, const torch::Tensor& wk, const torch::Tensor& wv, int heads);

// config.json for GPTNeoXForCausalLM, every architecture choice written out (nothing left to the
// library's defaults). `ids` are the tokenizer's (all -1 for a synthetic dataset).
nlohmann::json gpt_neox_config(const ModelSpec& spec, const SpecialTokenIds& ids, torch::ScalarType dtype);

// generation_config.json: the token ids generate() needs (pad: the tokenizer's, else EOS).
nlohmann::json generation_config(const SpecialTokenIds& ids);

}  // namespace ppu
