#include "export/hf_model.h"

#include <map>
#include <stdexcept>

#include "core/config.h"
#include "core/model_constants.h"

namespace ppu {

namespace {

nlohmann::json token_id(int id) { return id >= 0 ? nlohmann::json(id) : nlohmann::json(nullptr); }

}  // namespace

torch::Tensor fuse_qkv(const torch::Tensor& wq, const torch::Tensor& wk, const torch::Tensor& wv, int heads) {
  const int64_t h = heads, d = wq.size(1), hd = wq.size(0) / h;
  // [heads, 3, hd, d]: per head its q rows, k rows, v rows; then flattened to [3·heads·hd, d].
  return torch::stack({wq.reshape({h, hd, d}), wk.reshape({h, hd, d}), wv.reshape({h, hd, d})}, 1)
      .reshape({3 * h * hd, d});
}

NamedTensors gpt_neox_tensors(const ModelSpec& spec, const std::vector<torch::Tensor>& params,
                              torch::ScalarType dtype) {
  // By parameter_layout's names (the contract), not by position.
  const auto layout = parameter_layout(spec);
  if (params.size() != layout.size())
    throw std::invalid_argument("gpt_neox_tensors: " + std::to_string(params.size()) + " parameters, the layout has " +
                                std::to_string(layout.size()));
  std::map<std::string, torch::Tensor> ours;
  for (size_t i = 0; i < layout.size(); ++i) ours.emplace(layout[i].name, params[i]);
  NamedTensors out;
  const auto add = [&](const std::string& name, const torch::Tensor& t) {
    out.emplace_back(name, t.to(dtype).contiguous().clone());
  };
  add("gpt_neox.embed_in.weight", ours.at("tok_emb.weight"));
  for (int l = 0; l < spec.layers; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    const auto w = [&](const std::string& name) { return ours.at(b + name); };
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", w("ln1.weight"));
    add(p + "input_layernorm.bias", w("ln1.bias"));
    add(p + "attention.query_key_value.weight",
        fuse_qkv(w("attn.wq.weight"), w("attn.wk.weight"), w("attn.wv.weight"), spec.heads));
    add(p + "attention.dense.weight", w("attn.wo.weight"));
    add(p + "post_attention_layernorm.weight", w("ln2.weight"));
    add(p + "post_attention_layernorm.bias", w("ln2.bias"));
    add(p + "mlp.dense_h_to_4h.weight", w("mlp.up.weight"));
    add(p + "mlp.dense_h_to_4h.bias", torch::zeros({spec.mlp_hidden()}));
    add(p + "mlp.dense_4h_to_h.weight", w("mlp.down.weight"));
    add(p + "mlp.dense_4h_to_h.bias", torch::zeros({spec.d_model}));
  }
  add("gpt_neox.final_layer_norm.weight", ours.at("ln_f.weight"));
  add("gpt_neox.final_layer_norm.bias", ours.at("ln_f.bias"));
  return out;
}

nlohmann::json gpt_neox_config(const ModelSpec& spec, const SpecialTokenIds& ids, torch::ScalarType dtype) {
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
      {"layer_norm_eps", kLayerNormEps},
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
