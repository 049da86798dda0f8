#include "export/hf_model.h"

#include <stdexcept>

#include "core/config.h"

namespace ppu {

namespace {

// Offsets within a block's run of parameter_layout (core/model_spec.h).
enum { kLn1W, kLn1B, kWq, kWk, kWv, kWo, kLn2W, kLn2B, kUp, kDown, kPerBlock };

nlohmann::json token_id(int id) { return id >= 0 ? nlohmann::json(id) : nlohmann::json(nullptr); }

}  // namespace

torch::Tensor fuse_qkv(const torch::Tensor& wq, const torch::Tensor& wk, const torch::Tensor& wv, int heads) {
  const int64_t d = wq.size(1), hd = wq.size(0) / heads;
  // [heads, 3, hd, d]: per head its q rows, k rows, v rows; then flattened to [3·heads·hd, d].
  return torch::stack({wq.reshape({heads, hd, d}), wk.reshape({heads, hd, d}), wv.reshape({heads, hd, d})}, 1)
      .reshape({3 * heads * hd, d});
}

NamedTensors gpt_neox_tensors(const ModelSpec& spec, const std::vector<torch::Tensor>& params,
                              torch::ScalarType dtype) {
  const size_t expected = 1 + static_cast<size_t>(spec.layers) * kPerBlock + 2;
  if (params.size() != expected)
    throw std::invalid_argument("gpt_neox_tensors: " + std::to_string(params.size()) + " parameters, the layout has " +
                                std::to_string(expected));
  NamedTensors out;
  const auto add = [&](const std::string& name, const torch::Tensor& t) {
    out.emplace_back(name, t.to(dtype).contiguous().clone());
  };
  add("gpt_neox.embed_in.weight", params[0]);
  for (int l = 0; l < spec.layers; ++l) {
    const auto w = [&](int offset) { return params[1 + static_cast<size_t>(l) * kPerBlock + offset]; };
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", w(kLn1W));
    add(p + "input_layernorm.bias", w(kLn1B));
    add(p + "attention.query_key_value.weight", fuse_qkv(w(kWq), w(kWk), w(kWv), spec.heads));
    add(p + "attention.dense.weight", w(kWo));
    add(p + "post_attention_layernorm.weight", w(kLn2W));
    add(p + "post_attention_layernorm.bias", w(kLn2B));
    add(p + "mlp.dense_h_to_4h.weight", w(kUp));
    add(p + "mlp.dense_h_to_4h.bias", torch::zeros({w(kUp).size(0)}));
    add(p + "mlp.dense_4h_to_h.weight", w(kDown));
    add(p + "mlp.dense_4h_to_h.bias", torch::zeros({w(kDown).size(0)}));
  }
  add("gpt_neox.final_layer_norm.weight", params[expected - 2]);
  add("gpt_neox.final_layer_norm.bias", params[expected - 1]);
  return out;
}

nlohmann::json gpt_neox_config(const ModelSpec& spec, const SpecialTokenIds& ids, torch::ScalarType dtype) {
  constexpr double kRopeBase = 10000.0;  // engine/transformer.cpp
  return {
      {"architectures", {"GPTNeoXForCausalLM"}},
      {"model_type", "gpt_neox"},
      {"vocab_size", spec.vocab},
      {"hidden_size", spec.d_model},
      {"num_hidden_layers", spec.layers},
      {"num_attention_heads", spec.heads},
      {"intermediate_size", spec.mlp_hidden()},
      {"hidden_act", choice_name(spec.activation)},  // transformers' "gelu" is the exact (erf) GELU, as ours
      {"max_position_embeddings", spec.seq_len},
      {"layer_norm_eps", 1e-5},
      {"use_parallel_residual", false},
      {"attention_bias", false},
      {"tie_word_embeddings", true},
      // Rotary over the whole head: the names transformers 4.x reads, and the ones later
      // releases read, so no version falls back to its own default (GPT-NeoX's is 25 %).
      {"rotary_pct", 1.0},
      {"rotary_emb_base", kRopeBase},
      {"partial_rotary_factor", 1.0},
      {"rope_theta", kRopeBase},
      {"rope_scaling", nullptr},
      {"attention_dropout", 0.0},
      {"hidden_dropout", 0.0},
      {"initializer_range", 0.02},
      {"use_cache", true},
      {"bos_token_id", token_id(ids.bos)},
      {"eos_token_id", token_id(ids.eos)},
      {"pad_token_id", token_id(ids.pad)},
      {"torch_dtype", dtype == torch::kBFloat16 ? "bfloat16" : "float32"},
  };
}

nlohmann::json generation_config(const SpecialTokenIds& ids) {
  return {{"bos_token_id", token_id(ids.bos)},
          {"eos_token_id", token_id(ids.eos)},
          {"pad_token_id", token_id(ids.pad >= 0 ? ids.pad : ids.eos)}};
}

}  // namespace ppu
