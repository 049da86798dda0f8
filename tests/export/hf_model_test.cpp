// hf_model: the GPT-NeoX renaming and Q/K/V fusion, checked against an independent forward pass.
// The test computes GPT-NeoX's forward from the exported tensors by name, with the layout
// transformers uses (query_key_value output viewed as [B, S, heads, 3·head_dim] and split into
// q, k, v per head; rotate_half rotary; sequential residual; tied head), written here from plain
// tensor ops, and requires the loss of the trainer's Transformer on the same parameters. A wrong
// name, a transposed weight or a q/k/v interleaving other than per head changes that loss.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "core/config.h"
#include "core/model_spec.h"
#include "engine/model/transformer.h"
#include "export/hf_model.h"

namespace ppu {
namespace {

ModelSpec small_model(Activation activation) {
  ModelSpec m;
  m.layers = 2;
  m.d_model = 16;
  m.heads = 4;
  m.vocab = 40;
  m.seq_len = 12;
  m.activation = activation;
  return m;
}

// Random parameters in layout order, with LayerNorm gains and biases away from 1 and 0 so a
// swapped norm shows.
std::vector<torch::Tensor> random_params(const ModelSpec& spec) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> out;
  for (const auto& p : parameter_layout(spec)) out.push_back(torch::randn(p.shape) * 0.3);
  return out;
}

torch::Tensor rotate_half_rope(const torch::Tensor& x, int64_t hd) {  // x [B, h, S, hd]
  const int64_t S = x.size(2), half = hd / 2;
  auto inv = 1.0 / torch::pow(10000.0, torch::arange(0, hd, 2, torch::kFloat64) / static_cast<double>(hd));
  auto ang = torch::outer(torch::arange(S, torch::kFloat64), inv);
  ang = torch::cat({ang, ang}, 1).to(torch::kFloat32);
  auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * ang.cos() + rotated * ang.sin();
}

// GPT-NeoX's forward (use_parallel_residual false, rotary_pct 1, no attention bias) on the
// exported tensors, returning the mean next-token cross-entropy of `tokens` [B, S+1].
double gpt_neox_loss(const ModelSpec& spec, const std::map<std::string, torch::Tensor>& w,
                     const torch::Tensor& tokens) {
  const auto x_in = tokens.narrow(1, 0, tokens.size(1) - 1), y = tokens.narrow(1, 1, tokens.size(1) - 1);
  const int64_t B = x_in.size(0), S = x_in.size(1), h = spec.heads, hd = spec.d_model / spec.heads;
  const auto ln = [&](const torch::Tensor& x, const std::string& p) {
    return torch::layer_norm(x, {spec.d_model}, w.at(p + ".weight"), w.at(p + ".bias"), 1e-5);
  };
  const auto linear = [&](const torch::Tensor& x, const std::string& p, bool bias) {
    return bias ? torch::nn::functional::linear(x, w.at(p + ".weight"), w.at(p + ".bias"))
                : torch::nn::functional::linear(x, w.at(p + ".weight"));
  };
  auto x = w.at("gpt_neox.embed_in.weight").index_select(0, x_in.reshape(-1)).view({B, S, spec.d_model});
  const auto mask = torch::ones({S, S}, torch::kBool).triu(1);
  for (int l = 0; l < spec.layers; ++l) {
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    auto qkv = linear(ln(x, p + "input_layernorm"), p + "attention.query_key_value", false).view({B, S, h, 3 * hd});
    auto q = qkv.narrow(3, 0, hd).permute({0, 2, 1, 3}), k = qkv.narrow(3, hd, hd).permute({0, 2, 1, 3}),
         v = qkv.narrow(3, 2 * hd, hd).permute({0, 2, 1, 3});
    q = rotate_half_rope(q, hd);
    k = rotate_half_rope(k, hd);
    auto att = (q.matmul(k.transpose(-1, -2)) / std::sqrt(static_cast<double>(hd)))
                   .masked_fill(mask, -std::numeric_limits<float>::infinity())
                   .softmax(-1);
    x = x + linear(att.matmul(v).permute({0, 2, 1, 3}).reshape({B, S, spec.d_model}), p + "attention.dense", false);
    auto hidden = linear(ln(x, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h", true);
    hidden = spec.activation == Activation::Gelu ? torch::gelu(hidden) : torch::relu(hidden);
    x = x + linear(hidden, p + "mlp.dense_4h_to_h", true);
  }
  const auto logits = ln(x, "gpt_neox.final_layer_norm").matmul(w.at("gpt_neox.embed_in.weight").t());
  return torch::nn::functional::cross_entropy(logits.reshape({-1, spec.vocab}), y.reshape(-1)).item<double>();
}

class HfModel : public ::testing::TestWithParam<Activation> {};

TEST_P(HfModel, GptNeoxForwardOnTheExportEqualsTheTrainersLoss) {
  const auto spec = small_model(GetParam());
  const auto params = random_params(spec);
  const auto exported = gpt_neox_tensors(spec, params, torch::kFloat32);
  std::map<std::string, torch::Tensor> by_name(exported.begin(), exported.end());
  ASSERT_EQ(by_name.size(), exported.size()) << "duplicate tensor names";
  ASSERT_EQ(exported.size(), 1 + 10 * static_cast<size_t>(spec.layers) + 2);
  EXPECT_EQ(by_name.at("gpt_neox.layers.1.attention.query_key_value.weight").sizes(),
            c10::IntArrayRef({int64_t{3} * spec.d_model, spec.d_model}));
  EXPECT_TRUE(by_name.at("gpt_neox.layers.0.mlp.dense_h_to_4h.bias").eq(0).all().item<bool>());

  torch::manual_seed(3);
  const auto tokens = torch::randint(spec.vocab, {3, spec.seq_len + 1}, torch::kLong);
  const Transformer ours(spec, params);
  const auto want = ours.loss(tokens).item<double>();
  const double got = gpt_neox_loss(spec, by_name, tokens);
  // Two fp32 implementations of one function: summation order only (a few ulps of a loss ~4).
  EXPECT_NEAR(got, want, 1e-5) << "the GPT-NeoX forward on the export differs from the trainer's model";

  // The comparison notices a layout error: fusing q/k/v block-wise (all q rows, then k, then v)
  // instead of per head gives another loss.
  auto wrong = by_name;
  const auto& wq = params[3];
  wrong["gpt_neox.layers.0.attention.query_key_value.weight"] = torch::cat({wq, params[4], params[5]}, 0);
  EXPECT_GT(std::abs(gpt_neox_loss(spec, wrong, tokens) - want), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Activations, HfModel, ::testing::Values(Activation::Gelu, Activation::Relu));

TEST(HfModelFuseQkv, RowsArePerHeadQueryKeyValue) {
  const int heads = 2, hd = 3, d = 6;
  const auto wq = torch::arange(d * d, torch::kFloat32).view({d, d});
  const auto wk = wq + 100, wv = wq + 200;
  const auto fused = fuse_qkv(wq, wk, wv, heads);
  // Head 1's rows: q rows 3..5, then k rows 3..5, then v rows 3..5.
  EXPECT_TRUE(fused.narrow(0, int64_t{3} * hd, hd).equal(wq.narrow(0, hd, hd)));
  EXPECT_TRUE(fused.narrow(0, int64_t{4} * hd, hd).equal(wk.narrow(0, hd, hd)));
  EXPECT_TRUE(fused.narrow(0, int64_t{5} * hd, hd).equal(wv.narrow(0, hd, hd)));
  EXPECT_TRUE(fused.narrow(0, hd, hd).equal(wk.narrow(0, 0, hd)));
}

TEST(HfModelConfig, StatesEveryArchitectureChoice) {
  const auto spec = small_model(Activation::Relu);
  const auto c = gpt_neox_config(spec, {1, 2, 0, -1}, torch::kBFloat16);
  EXPECT_EQ(c.at("model_type"), "gpt_neox");
  EXPECT_EQ(c.at("hidden_act"), "relu");
  EXPECT_EQ(c.at("rotary_pct"), 1.0);
  EXPECT_EQ(c.at("use_parallel_residual"), false);
  EXPECT_EQ(c.at("tie_word_embeddings"), true);
  EXPECT_EQ(c.at("attention_bias"), false);
  EXPECT_EQ(c.at("intermediate_size"), 4 * spec.d_model);
  EXPECT_EQ(c.at("torch_dtype"), "bfloat16");
  EXPECT_EQ(c.at("eos_token_id"), 2);
  EXPECT_TRUE(c.at("pad_token_id").is_null());
  EXPECT_EQ(generation_config({1, 2, 0, -1}).at("pad_token_id"), 2);  // no pad piece: EOS pads
}

}  // namespace
}  // namespace ppu
