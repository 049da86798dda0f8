// ppu-data: builds dataset directories (train.bin, val.bin, meta.json[, tokenizer.model]).
//   ppu-data synthetic --out DIR [...]   synthetic corpus with an exact entropy floor
//   ppu-data text --input FILE... --out DIR [...]   SentencePiece tokenizer + token shards, split
//                                                   into train/val by whole shuffled documents
// Errors are one line on stderr naming the bad flag; exit status is non-zero.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/exit_status.h"
#include "data/dataset_dir.h"
#include "data/synthetic_corpus.h"
#include "data/text_documents.h"
#include "data/tokenizer.h"

namespace fs = std::filesystem;
using namespace ppu::data;

namespace {

struct SyntheticArgs {
  std::string out;
  SyntheticCorpusOptions corpus;
  uint64_t train_tokens = 2000000;
  uint64_t val_tokens = 100000;
};

struct TextArgs {
  std::vector<std::string> inputs;
  std::string out;
  uint32_t vocab = 4096;
  std::string tokenizer;
  double val_fraction = 0.05;
  std::string document_separator;  // empty: paragraphs are the documents
  std::string model_type = "bpe";
  uint32_t seed = 0;
  uint32_t threads = 1;
};

// A usage error that names the flag (exit 2, like CLI11's own parse errors).
struct FlagError : ppu::ConfigError {
  using ppu::ConfigError::ConfigError;
};

int run_synthetic(const SyntheticArgs& a) {
  if (a.corpus.support > a.corpus.vocab)
    throw FlagError("--support " + std::to_string(a.corpus.support) + " must not exceed --vocab " +
                    std::to_string(a.corpus.vocab));
  const SyntheticCorpus corpus(a.corpus);
  DatasetMeta meta;
  meta.vocab = a.corpus.vocab;
  meta.source = "synthetic";
  meta.entropy_rate_nats = corpus.entropy_rate_nats();
  meta.synthetic = a.corpus;
  write_dataset(a.out, meta, corpus.generate(a.train_tokens, 0), corpus.generate(a.val_tokens, 1));
  const double h = corpus.entropy_rate_nats();
  std::printf("wrote %s: %llu train + %llu val tokens, vocab %u\n", a.out.c_str(),
              static_cast<unsigned long long>(a.train_tokens), static_cast<unsigned long long>(a.val_tokens),
              a.corpus.vocab);
  std::printf("entropy floor: %.6f nats/token, perplexity floor %.6f\n", h, std::exp(h));
  return 0;
}

int run_text(const TextArgs& a, bool vocab_given) {
  if (!(a.val_fraction > 0.0 && a.val_fraction < 1.0))
    throw FlagError("--val-fraction must be in (0, 1), got " + std::to_string(a.val_fraction));
  for (const auto& in : a.inputs)
    if (!fs::is_regular_file(in)) throw FlagError("--input " + in + ": no such file");
  fs::create_directories(a.out);
  const std::string model_path = (fs::path(a.out) / "tokenizer.model").string();

  std::optional<Tokenizer> tok;
  if (!a.tokenizer.empty()) {
    if (!fs::is_regular_file(a.tokenizer)) throw FlagError("--tokenizer " + a.tokenizer + ": no such file");
    tok.emplace(Tokenizer::load(a.tokenizer));
    if (vocab_given && tok->vocab_size() != a.vocab)
      throw FlagError("--vocab " + std::to_string(a.vocab) + " disagrees with --tokenizer " + a.tokenizer + " (vocab " +
                      std::to_string(tok->vocab_size()) + ")");
    // The directory must be self-contained: copy the model in under the standard name.
    if (!fs::exists(model_path) || !fs::equivalent(a.tokenizer, model_path))
      fs::copy_file(a.tokenizer, model_path, fs::copy_options::overwrite_existing);
  } else {
    TokenizerTrainOptions opts;
    opts.vocab_size = a.vocab;
    opts.model_type = a.model_type;
    opts.seed = a.seed;
    opts.threads = a.threads;
    tok.emplace(Tokenizer::train(a.inputs, model_path, opts));
  }

  // Whole documents, shuffled, go to train or validation: validation draws from every input and
  // the train split is not ordered by source (a contiguous per-rank partition of an ordered split
  // would hand each rank one source).
  std::vector<std::vector<int32_t>> docs;
  for (const auto& in : a.inputs) {
    for (const auto& lines : read_documents(in, a.document_separator)) {
      std::vector<int32_t> ids;
      tok->encode_lines(lines, ids);
      ids.push_back(tok->eos_id());  // the boundary: a blank line or the separator line
      docs.push_back(std::move(ids));
    }
  }
  std::vector<uint64_t> counts;
  counts.reserve(docs.size());
  for (const auto& d : docs) counts.push_back(d.size());
  DocumentSplit split;
  try {
    split = split_documents(counts, a.val_fraction, a.seed);
  } catch (const std::invalid_argument& e) {
    throw FlagError("--val-fraction " + std::to_string(a.val_fraction) + ": " + e.what());
  }
  auto gather = [&](const std::vector<size_t>& which) {
    std::vector<int32_t> out;
    for (const size_t d : which) out.insert(out.end(), docs[d].begin(), docs[d].end());
    return out;
  };
  const std::vector<int32_t> tokens = gather(split.train), val = gather(split.val);

  DatasetMeta meta;
  meta.vocab = tok->vocab_size();
  meta.source = "text";
  meta.tokenizer = "tokenizer.model";
  for (const auto& in : a.inputs) meta.inputs.push_back(fs::absolute(in).string());
  write_dataset(a.out, meta, tokens, val);
  std::printf("wrote %s: %zu train + %zu val tokens (%zu + %zu documents), vocab %u, tokenizer %s\n", a.out.c_str(),
              tokens.size(), val.size(), split.train.size(), split.val.size(), tok->vocab_size(), model_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-data: build PPU dataset directories (train.bin, val.bin, meta.json)"};
  app.require_subcommand(1);

  SyntheticArgs syn;
  CLI::App* s = app.add_subcommand("synthetic", "synthetic corpus with an exact entropy floor");
  s->add_option("--out", syn.out, "output dataset directory")->required();
  s->add_option("--vocab", syn.corpus.vocab, "vocabulary size")->capture_default_str()->check(CLI::Range(2u, 1u << 31));
  s->add_option("--order", syn.corpus.order, "context length k the next token depends on")
      ->capture_default_str()
      ->check(CLI::Range(0u, 64u));
  s->add_option("--support", syn.corpus.support, "symbols with non-zero probability per context")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 31));
  s->add_option("--zipf", syn.corpus.zipf_exponent, "Zipf exponent of the base distribution")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  s->add_option("--train-tokens", syn.train_tokens, "train split length")->capture_default_str();
  s->add_option("--val-tokens", syn.val_tokens, "val split length")->capture_default_str();
  s->add_option("--seed", syn.corpus.seed, "seed of the process")->capture_default_str();

  TextArgs txt;
  CLI::App* t = app.add_subcommand("text", "train (or load) a SentencePiece tokenizer, tokenise text");
  t->add_option("--input", txt.inputs, "text file (repeatable)")->required()->take_all();
  t->add_option("--out", txt.out, "output dataset directory")->required();
  CLI::Option* vocab_opt = t->add_option("--vocab", txt.vocab, "tokenizer vocabulary size")
                               ->capture_default_str()
                               ->check(CLI::Range(16u, 1u << 20));
  t->add_option("--tokenizer", txt.tokenizer, "use this existing .model instead of training");
  t->add_option("--val-fraction", txt.val_fraction,
                "fraction of tokens held out for val, as whole documents drawn at random (--seed)")
      ->capture_default_str();
  t->add_option("--document-separator", txt.document_separator,
                "a line equal to this ends a document (default: blank lines, i.e. paragraphs are documents)");
  t->add_option("--model-type", txt.model_type, "SentencePiece model type")
      ->capture_default_str()
      ->check(CLI::IsMember({"bpe", "unigram"}));
  t->add_option("--seed", txt.seed, "seed of the tokenizer training and of the document shuffle")
      ->capture_default_str();
  t->add_option("--threads", txt.threads, "tokenizer training threads (1 = deterministic)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ppu-data: error: " << e.what() << " (see --help)\n";
    return ppu::usage_exit_code(e.get_exit_code());
  }

  try {
    if (s->parsed()) return run_synthetic(syn);
    return run_text(txt, vocab_opt->count() > 0);
  } catch (const std::exception& e) {
    const auto status = ppu::exit_status_of(e);
    std::cerr << "ppu-data: " << status.message << (dynamic_cast<const FlagError*>(&e) ? " (see --help)" : "") << "\n";
    return status.code;
  }
}
