// ppu-export: turns a checkpoint into a model file other tools load. Reads the newest valid
// checkpoint under --checkpoint (or --round N), verifies it against its manifest, and writes
//   OUT/model.safetensors  the global parameters θ in fp32, named as core/model_spec.h's
//                          parameter_layout (DDP: rank 0's parameters, which are global);
//   OUT/config.json        the architecture (every constant a reimplementation needs), the
//                          checkpoint it came from, and the run's config.
// scripts/ppu_export_eval.py evaluates such a directory with an independent PyTorch model.
// Exit codes: 0 written, 2 usage error, 4 no valid checkpoint (missing or corrupt), 1 other.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/atomic_file.h"
#include "core/config.h"
#include "core/model_spec.h"
#include "engine/checkpoint_format.h"
#include "engine/checkpoint_store.h"
#include "export/safetensors_file.h"

namespace {

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The tensors `prefix`<parameter name> of an archive serialised in `bytes` (checkpoint format:
// engine/checkpoint_format.h), in layout order, checked against the layout.
std::vector<std::pair<std::string, torch::Tensor>> read_parameters(const std::string& bytes, const std::string& prefix,
                                                                   const std::vector<ppu::ParamInfo>& layout,
                                                                   const std::string& where) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t i = 0; i < layout.size(); ++i) {
    torch::Tensor t;
    if (!archive.try_read(prefix + layout[i].name, t) || !t.defined())
      throw CheckpointError(where + " has no tensor '" + prefix + layout[i].name + "'");
    if (t.sizes() != c10::IntArrayRef(layout[i].shape))
      throw CheckpointError(where + ": " + layout[i].name + " has shape " + c10::str(t.sizes()) + ", the config says " +
                            c10::str(c10::IntArrayRef(layout[i].shape)));
    out.emplace_back(layout[i].name, t.to(torch::kFloat32));
  }
  return out;
}

nlohmann::json architecture(const ppu::ModelSpec& m) {
  // The constants of runtime/engine/transformer.cpp, so a reimplementation needs nothing else.
  return {{"type", "ppu-decoder"},
          {"layers", m.layers},
          {"d_model", m.d_model},
          {"heads", m.heads},
          {"head_dim", m.head_dim()},
          {"mlp_hidden", m.mlp_hidden()},
          {"vocab", m.vocab},
          {"seq_len", m.seq_len},
          {"activation", ppu::choice_name(m.activation)},  // relu, or gelu (exact, erf)
          {"norm", {{"type", "layernorm"}, {"eps", 1e-5}, {"position", "pre"}}},
          {"rotary", {{"base", 10000.0}, {"pairing", "halves"}, {"applies_to", "q,k"}}},
          {"attention", {{"causal", true}, {"scale", "1/sqrt(head_dim)"}}},
          {"linear_bias", false},
          {"tied_embedding", true}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-export: a checkpoint's global parameters as safetensors + config.json"};
  std::string checkpoint_dir, out_dir;
  int64_t round = -1;
  app.add_option("--checkpoint", checkpoint_dir, "checkpoint directory of a run (checkpoint.dir / PPU_CHECKPOINT_DIR)")
      ->required();
  app.add_option("--out", out_dir, "directory to write model.safetensors and config.json into")->required();
  app.add_option("--round", round, "export this round instead of the newest valid one")->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    auto global = ppu::read_verified_checkpoint_file(checkpoint_dir, "global.pt", round);
    ppu::Config config;
    try {
      config = ppu::parse_config(global.config_yaml);
    } catch (const std::exception& e) {
      throw CheckpointError(global.path + "/manifest.json: its config does not parse: " + e.what());
    }
    const auto layout = ppu::parameter_layout(config.model);
    const bool ddp = config.method == ppu::Method::Ddp;
    // DDP keeps no outer state: its replicated parameters are rank 0's.
    const auto file = ddp ? ppu::read_verified_checkpoint_file(checkpoint_dir, "rank-00000.pt", global.round) : global;
    const auto tensors = read_parameters(file.bytes, ddp ? "model.weight." : "outer.global.", layout,
                                         file.path + "/" + (ddp ? "rank-00000.pt" : "global.pt"));

    std::filesystem::create_directories(out_dir);
    ppu::write_safetensors(out_dir + "/model.safetensors", tensors,
                           {{"format", "pt"},
                            {"ppu.round", std::to_string(global.round)},
                            {"ppu.method", ppu::method_name(config.method)}});
    int64_t parameters = 0;
    for (const auto& p : layout) parameters += p.numel();
    const nlohmann::json meta = {{"architecture", architecture(config.model)},
                                 {"parameters", parameters},
                                 {"dtype", "float32"},
                                 {"source",
                                  {{"checkpoint", global.path},
                                   {"round", global.round},
                                   {"world_size", global.world_size},
                                   {"method", ppu::method_name(config.method)},
                                   {"parameters", ddp ? "rank 0's (DDP: global)" : "global θ (outer optimiser)"}}},
                                 {"ppu_config", global.config_yaml}};
    ppu::atomic_write_file(out_dir + "/config.json", meta.dump(2) + "\n");
    std::cout << "ppu-export: " << global.path << " -> " << out_dir << "/model.safetensors (" << tensors.size()
              << " tensors, " << parameters << " parameters) and config.json\n";
    return 0;
  } catch (const CheckpointError& e) {
    std::cerr << "ppu-export: " << e.what() << "\n";
    return 4;
  } catch (const ppu::NoValidCheckpoint& e) {  // missing, or every round corrupt
    std::cerr << "ppu-export: " << e.what() << "\n";
    return 4;
  } catch (const ppu::CheckpointFormatError& e) {  // intact, but written by another format
    std::cerr << "ppu-export: " << e.what() << "\n";
    return 4;
  } catch (const std::exception& e) {
    std::cerr << "ppu-export: error: " << e.what() << "\n";
    return 1;
  }
}
