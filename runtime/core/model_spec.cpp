#include "core/model_spec.h"

#include <map>

namespace ppu {

namespace {
const std::map<std::string, ModelSpec>& presets() {
  // {preset, layers, d_model, heads, vocab, seq_len}
  static const std::map<std::string, ModelSpec> table = {
      {"tiny", {"tiny", 2, 64, 4, 256, 64}},
      {"small", {"small", 6, 384, 8, 4096, 256}},
      {"gpt2-124m", {"gpt2-124m", 12, 768, 12, 50257, 1024}},
      {"gpt2-350m", {"gpt2-350m", 24, 1024, 16, 50257, 1024}},
      {"gpt3-xl", {"gpt3-xl", 24, 2048, 16, 32000, 1024}},
  };
  return table;
}
}  // namespace

std::optional<ModelSpec> model_preset(const std::string& name) {
  auto it = presets().find(name);
  if (it == presets().end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : presets()) names.push_back(name);
  return names;
}

int64_t ParamInfo::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::vector<ParamInfo> parameter_layout(const ModelSpec& spec) {
  const int64_t d = spec.d_model, f = spec.mlp_hidden();
  std::vector<ParamInfo> out;
  out.push_back({"tok_emb.weight", {spec.vocab, d}, ParamRole::Embedding, -1});
  // Indexed by BlockParam.
  const ParamInfo block[kParamsPerBlock] = {
      {"ln1.weight", {d}, ParamRole::Norm, 0},         {"ln1.bias", {d}, ParamRole::Norm, 0},
      {"attn.wq.weight", {d, d}, ParamRole::AttnQ, 0}, {"attn.wk.weight", {d, d}, ParamRole::AttnK, 0},
      {"attn.wv.weight", {d, d}, ParamRole::AttnV, 0}, {"attn.wo.weight", {d, d}, ParamRole::AttnOut, 0},
      {"ln2.weight", {d}, ParamRole::Norm, 0},         {"ln2.bias", {d}, ParamRole::Norm, 0},
      {"mlp.up.weight", {f, d}, ParamRole::MlpUp, 0},  {"mlp.down.weight", {d, f}, ParamRole::MlpDown, 0},
  };
  for (int l = 0; l < spec.layers; ++l)
    for (const auto& p : block) out.push_back({"blocks." + std::to_string(l) + "." + p.name, p.shape, p.role, l});
  out.push_back({"ln_f.weight", {d}, ParamRole::Norm, -1});
  out.push_back({"ln_f.bias", {d}, ParamRole::Norm, -1});
  return out;
}

int64_t total_parameters(const ModelSpec& spec) {
  int64_t n = 0;
  for (const auto& p : parameter_layout(spec)) n += p.numel();
  return n;
}

}  // namespace ppu
