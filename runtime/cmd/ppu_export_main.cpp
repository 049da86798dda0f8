// ppu-export: turns a run's checkpoint into a model directory other tools load. Reads the newest
// valid checkpoint under --checkpoint (or --round N), verifies it against its manifest, and
// writes OUT (staged and renamed into place: export/export_dir.h) in one of two formats:
//   hf (default)  a Hugging Face model: config.json + generation_config.json for transformers'
//                 GPTNeoXForCausalLM (export/hf_model.h), model.safetensors (sharded above
//                 --max-shard-size with model.safetensors.index.json), the run's tokenizer
//                 (tokenizer.model, tokenizer.json, tokenizer_config.json,
//                 special_tokens_map.json; none for a synthetic corpus) and a model card
//                 (README.md). AutoModelForCausalLM / AutoTokenizer.from_pretrained(OUT) load it.
//   ppu           model.safetensors under core/model_spec.h's parameter names and config.json
//                 with our architecture description (read by scripts/ppu_export_eval.py).
// Both add ppu_config.yaml (the run's config) and ppu_provenance.json (the checkpoint's identity,
// the eval loss of the exported parameters on the run's validation windows, the parameter
// checksum). The parameters are the global θ (DDP: rank 0's, which are global).
// --dtype fp32 (default: the checkpoint's global θ exactly, so a reload reproduces ppu-train's
// evaluation) or bf16 (rounded to nearest from fp32: half the size, for serving).
// Exit codes: 0 written, 2 usage error (including an OUT holding a different model without
// --overwrite), 4 no valid checkpoint (missing or corrupt) or its dataset unreadable, 1 other.
// The last line of the outcome goes to the termination message (common/termination_message.h):
// the error, or on success its export result (core/export_result.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>

#include "common/atomic_file.h"
#include "common/fnv1a.h"
#include "common/termination_message.h"
#include "core/config.h"
#include "core/exit_status.h"
#include "core/export_result.h"
#include "core/job_contract.h"
#include "core/model_constants.h"
#include "core/model_spec.h"
#include "data/dataset_dir.h"
#include "engine/cpu/blas_kernels.h"
#include "engine/run_dataset.h"
#include "engine/state/checkpoint_format.h"
#include "engine/state/checkpoint_store.h"
#include "export/export_dir.h"
#include "export/hf_model.h"
#include "export/hf_tokenizer.h"
#include "export/model_card.h"
#include "export/safetensors_file.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ppu::CheckpointError;  // every unusable checkpoint: missing, corrupt, another format or model

// The run's dataset (for the tokenizer) missing or unreadable: exit 4.
struct DataError : ppu::UnusableInput {
  using ppu::UnusableInput::UnusableInput;
  const char* subject() const noexcept override { return "data"; }
};

struct Options {
  std::string checkpoint_dir, out_dir, format = ppu::export_choice::kHf, dtype = ppu::export_choice::kFp32, data_dir;
  int64_t round = -1;
  uint64_t max_shard_bytes = 5'000'000'000;  // transformers' save_pretrained default, 5 GB
  bool overwrite = false;
  ppu::S3Service s3;  // an s3:// --checkpoint's service, over the AWS_* variables
};

// The parameters key(<name>) of an archive serialised in `bytes` (a checkpoint_key function of
// engine/state/checkpoint_format.h), in layout order, checked against the layout, as fp32.
std::vector<torch::Tensor> read_parameters(const std::string& bytes, std::string (*key)(const std::string&),
                                           const std::vector<ppu::ParamInfo>& layout, const std::string& where) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  std::vector<torch::Tensor> out;
  for (const auto& p : layout) {
    torch::Tensor t;
    if (!archive.try_read(key(p.name), t) || !t.defined())
      throw CheckpointError(where + " has no tensor '" + key(p.name) + "'");
    if (t.sizes() != c10::IntArrayRef(p.shape))
      throw CheckpointError(where + ": " + p.name + " has shape " + c10::str(t.sizes()) + ", the config says " +
                            c10::str(c10::IntArrayRef(p.shape)));
    out.push_back(t.to(torch::kFloat32).contiguous());
  }
  return out;
}

// Tokens one rank trained (its checkpoint part's running total); every rank runs the same steps.
double rank_tokens(const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  return ppu::read_double(archive, ppu::checkpoint_key::total("tokens"));
}

json ppu_architecture(const ppu::ModelSpec& m) {
  // Every constant of the architecture (core/model_spec.h), so a reimplementation needs nothing else.
  return {{"type", "ppu-decoder"},
          {"layers", m.layers},
          {"d_model", m.d_model},
          {"heads", m.heads},
          {"head_dim", m.head_dim()},
          {"mlp_hidden", m.mlp_hidden()},
          {"vocab", m.vocab},
          {"seq_len", m.seq_len},
          {"activation", ppu::choice_name(m.activation)},  // relu, or gelu (exact, erf)
          {"norm", {{"type", "layernorm"}, {"eps", ppu::kLayerNormEps}, {"position", "pre"}}},
          {"rotary", {{"base", ppu::kRopeBase}, {"pairing", "halves"}, {"applies_to", "q,k"}}},
          {"attention", {{"causal", true}, {"scale", "1/sqrt(head_dim)"}}},
          {"linear_bias", false},
          {"tied_embedding", true}};
}

void write_json(const ppu::ExportDir& dir, const std::string& name, const json& value) {
  ppu::atomic_write_file(dir.file(name), value.dump(2, ' ', false) + "\n");
}

int run(const Options& o) {
  namespace file = ppu::checkpoint_file;
  auto global = ppu::read_verified_checkpoint_file(o.checkpoint_dir, file::kGlobal, o.round, o.s3);
  ppu::Config config;
  try {
    config = ppu::parse_config(global.config_yaml);
  } catch (const std::exception& e) {
    throw CheckpointError(global.path + "/" + file::kManifest + ": its config does not parse: " + e.what());
  }
  const auto layout = ppu::parameter_layout(config.model);
  const bool ddp = config.method == ppu::Method::Ddp;
  // DDP keeps no outer state: its replicated parameters are rank 0's.
  const auto rank0 = ppu::read_verified_checkpoint_file(o.checkpoint_dir, file::rank_part(0), global.round, o.s3);
  const auto& source = ddp ? rank0 : global;
  const auto params =
      read_parameters(source.bytes, ddp ? ppu::checkpoint_key::model_weight : ppu::checkpoint_key::outer_global, layout,
                      source.path + "/" + (ddp ? file::rank_part(0) : std::string(file::kGlobal)));
  const double tokens = rank_tokens(rank0.bytes) * global.world_size;

  // The run's data: the validation windows the trainer evaluates, and the tokenizer.
  if (!o.data_dir.empty()) config.data.path = o.data_dir;
  ppu::data::TokenDataset dataset;
  std::string tokenizer_path, dataset_phrase;
  try {
    dataset = ppu::load_dataset(config);
    if (!config.data.path.empty()) {
      const auto meta = ppu::data::read_dataset_meta(config.data.path);
      if (!meta.tokenizer.empty()) tokenizer_path = config.data.path + "/" + meta.tokenizer;
      dataset_phrase = meta.source == "text"
                           ? "text tokenised by ppu-data (" + std::to_string(meta.train_tokens) + " training tokens)"
                           : "PPU's synthetic corpus (token shards)";
    } else {
      dataset_phrase = "PPU's synthetic corpus (an order-" + std::to_string(config.data.synthetic_order) +
                       " Markov source over " + std::to_string(config.model.vocab) + " ids)";
    }
  } catch (const std::exception& e) {
    throw DataError("the run's dataset is not readable (" + std::string(e.what()) +
                    "); pass --data with its directory as mounted here");
  }
  const ppu::Transformer view(config.model, params, torch::kCPU);
  const double eval_loss =
      ppu::eval_loss_sum(view, dataset, config, 0, 1, torch::kCPU) / std::max(1, config.train.eval_batches);
  const int64_t eval_tokens =
      static_cast<int64_t>(config.train.eval_batches) * config.inner.batch_size * config.model.seq_len;

  const std::string checksum = ppu::parameter_checksum(params);
  const json identity = {{"round", global.round},
                         {"global_fnv1a64", ppu::hex64(ppu::fnv1a64(source.bytes.data(), source.bytes.size()))},
                         {"format", o.format},
                         {"dtype", o.dtype}};
  ppu::ExportDir dir(o.out_dir, identity, o.overwrite);
  const bool bf16 = o.dtype == ppu::export_choice::kBf16;
  const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
  const std::string dtype_name = bf16 ? "bfloat16" : "float32";
  const std::map<std::string, std::string> st_meta = {
      {"format", "pt"}, {"ppu.round", std::to_string(global.round)}, {"ppu.method", ppu::method_name(config.method)}};
  std::vector<std::string> files;
  if (o.format == ppu::export_choice::kHf) {
    ppu::SpecialTokenIds ids;
    if (!tokenizer_path.empty()) {
      const auto tok = ppu::hf_tokenizer_files(tokenizer_path, config.model.seq_len);
      ids = tok.ids;
      fs::copy_file(tokenizer_path, dir.file("tokenizer.model"));
      write_json(dir, "tokenizer.json", tok.tokenizer);
      write_json(dir, "tokenizer_config.json", tok.tokenizer_config);
      write_json(dir, "special_tokens_map.json", tok.special_tokens_map);
      files.insert(files.end(),
                   {"tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"});
    } else {
      std::cout << "ppu-export: no tokenizer: the run's dataset has none (synthetic token ids)\n";
    }
    const auto written = ppu::write_safetensors_model(dir.staging(), ppu::gpt_neox_tensors(config.model, params, dtype),
                                                      o.max_shard_bytes, st_meta);
    files.insert(files.end(), written.begin(), written.end());
    write_json(dir, "config.json", ppu::gpt_neox_config(config.model, ids, dtype));
    write_json(dir, "generation_config.json", ppu::generation_config(ids));
    ppu::ModelCardFacts facts{fs::path(o.out_dir).filename().string(),
                              config,
                              global.world_size,
                              global.round,
                              tokens,
                              eval_loss,
                              eval_tokens,
                              dtype_name,
                              checksum,
                              !tokenizer_path.empty(),
                              dataset_phrase};
    if (facts.name.empty()) facts.name = fs::path(o.out_dir).parent_path().filename().string();
    ppu::atomic_write_file(dir.file("README.md"), ppu::model_card(facts));
    files.insert(files.end(), {"config.json", "generation_config.json", "README.md"});
  } else {
    ppu::NamedTensors named;
    for (size_t i = 0; i < layout.size(); ++i) named.emplace_back(layout[i].name, params[i].to(dtype));
    ppu::write_safetensors(dir.file("model.safetensors"), named, st_meta);
    write_json(dir, "config.json",
               {{"architecture", ppu_architecture(config.model)},
                {"parameters", ppu::total_parameters(config.model)},
                {"dtype", dtype_name},
                {"source",
                 {{"checkpoint", global.path},
                  {"round", global.round},
                  {"world_size", global.world_size},
                  {"method", ppu::method_name(config.method)},
                  {"parameters", ddp ? "rank 0's (DDP: global)" : "global θ (outer optimiser)"}}},
                {"ppu_config", global.config_yaml}});
    files.insert(files.end(), {"model.safetensors", "config.json"});
  }
  ppu::atomic_write_file(dir.file("ppu_config.yaml"), global.config_yaml);
  write_json(dir, ppu::kProvenanceFile,
             {{"version", 1},
              {"identity", identity},
              {"checkpoint", {{"path", global.path}, {"world_size", global.world_size}}},
              {"method", ppu::method_name(config.method)},
              {"tokens_trained", tokens},
              {"eval", {{"loss", eval_loss}, {"perplexity", std::exp(eval_loss)}, {"tokens", eval_tokens}}},
              {"param_checksum", checksum},
              {"files", files}});
  dir.commit();

  std::cout << "ppu-export: " << global.path << " -> " << o.out_dir << " (" << o.format << ", " << dtype_name << ", "
            << ppu::total_parameters(config.model) << " parameters; eval loss " << eval_loss << ", ppl "
            << std::exp(eval_loss) << ")\n";
  ppu::write_termination_message(ppu::format_export_result({o.format, o.dtype, o.out_dir, global.round}));
  return ppu::contract::exit_code::kDone;
}

}  // namespace

int main(int argc, char** argv) {
  ppu::run_widest_blas_kernels(argv);  // its evaluation runs GEMMs; may re-execute this binary
  CLI::App app{"ppu-export: a run's checkpoint as a Hugging Face model directory (or PPU's own layout)"};
  Options o;
  app.add_option("--checkpoint", o.checkpoint_dir,
                 "checkpoint directory of a run, or its s3://BUCKET/PREFIX (checkpoint.dir / PPU_CHECKPOINT_DIR; "
                 "credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)")
      ->required();
  app.add_option("--s3-endpoint", o.s3.endpoint,
                 "an s3:// --checkpoint's service URL (checkpoint.s3_endpoint); default AWS_ENDPOINT_URL_S3, else "
                 "AWS_ENDPOINT_URL, else AWS S3");
  app.add_option("--s3-region", o.s3.region,
                 "an s3:// --checkpoint's region (checkpoint.s3_region); default AWS_REGION, else us-east-1");
  app.add_flag("--s3-virtual-hosted{false}", o.s3.path_style,
               "address an s3:// --checkpoint's objects as BUCKET.HOST/KEY (checkpoint.s3_path_style false)");
  app.add_option("--out", o.out_dir, "model directory to write (created; replaced only as --overwrite says)")
      ->required();
  app.add_option("--round", o.round, "export this round instead of the newest valid one")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--format", o.format, "hf: Hugging Face (transformers GPT-NeoX); ppu: PPU's own names")
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(ppu::export_choice::kFormats), std::end(ppu::export_choice::kFormats))))
      ->capture_default_str();
  app.add_option("--dtype", o.dtype, "fp32: the global parameters exactly; bf16: rounded, half the size")
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(ppu::export_choice::kDtypes), std::end(ppu::export_choice::kDtypes))))
      ->capture_default_str();
  app.add_option("--data", o.data_dir, "the run's dataset directory, when not where its config says (data.path)");
  app.add_option("--max-shard-size", o.max_shard_bytes, "largest safetensors file before sharding (e.g. 5GB)")
      ->transform(CLI::AsSizeValue(true))
      ->capture_default_str();
  app.add_flag("--overwrite", o.overwrite, "replace an --out that holds a different model");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ppu::usage_exit_code(app.exit(e));
  }
  try {
    return run(o);
  } catch (const std::exception& e) {  // core/exit_status.h's table
    const auto status = ppu::exit_status_of(e);
    std::cerr << "ppu-export: " << status.message << "\n";
    ppu::write_termination_message("ppu-export: " + status.message);
    return status.code;
  }
}
