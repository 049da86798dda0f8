#include "data/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>
#include <stdexcept>
#include <unordered_map>

namespace ppu::data {

Tokenizer::Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp) : sp_(std::move(sp)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::train(const std::vector<std::string>& inputs, const std::string& model_path,
                           const TokenizerTrainOptions& options) {
  const std::string suffix = ".model";
  if (model_path.size() <= suffix.size() ||
      model_path.compare(model_path.size() - suffix.size(), suffix.size(), suffix) != 0)
    throw std::invalid_argument("tokenizer model path must end in .model: " + model_path);
  if (inputs.empty()) throw std::invalid_argument("tokenizer training needs at least one input");
  for (const auto& in : inputs)
    if (!std::ifstream(in)) throw std::runtime_error(in + ": cannot open tokenizer input");
  if (options.model_type != "bpe" && options.model_type != "unigram")
    throw std::invalid_argument("tokenizer model type must be bpe or unigram, got " + options.model_type);

  std::string joined;
  for (const auto& in : inputs) joined += (joined.empty() ? "" : ",") + in;
  // A map, not a "--k=v" string: paths with spaces or '=' survive. The input list itself is
  // comma-separated by SentencePiece, so paths must not contain commas.
  const std::unordered_map<std::string, std::string> kwargs = {
      {"input", joined},
      {"model_prefix", model_path.substr(0, model_path.size() - suffix.size())},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"model_type", options.model_type},
      {"character_coverage", std::to_string(options.character_coverage)},
      {"input_sentence_size", std::to_string(options.max_sentences)},
      // Sampling of sentences is seeded below; shuffling keeps the sample unbiased.
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(options.threads)},
      // Digits as single pieces and byte fallback: no <unk> for unseen characters.
      {"split_digits", "true"},
      {"byte_fallback", "true"},
      {"minloglevel", "2"},
  };
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs);
  if (!status.ok()) throw std::runtime_error("SentencePiece training failed: " + status.ToString());
  return load(model_path);
}

Tokenizer Tokenizer::load(const std::string& model_path) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->Load(model_path);
  if (!status.ok()) throw std::runtime_error(model_path + ": cannot load SentencePiece model: " + status.ToString());
  return Tokenizer(std::move(sp));
}

uint32_t Tokenizer::vocab_size() const { return static_cast<uint32_t>(sp_->GetPieceSize()); }

int32_t Tokenizer::eos_id() const { return sp_->eos_id(); }

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw std::runtime_error("SentencePiece encode failed: " + status.ToString());
  return {ids.begin(), ids.end()};
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  const auto status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw std::runtime_error("SentencePiece decode failed: " + status.ToString());
  return text;
}

void Tokenizer::encode_file(const std::string& path, std::vector<int32_t>& out) const {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open for encoding");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  try {
    encode_lines(lines, out);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void Tokenizer::encode_lines(const std::vector<std::string>& lines, std::vector<int32_t>& out) const {
  const int32_t eos = eos_id();
  if (eos < 0) throw std::runtime_error("tokenizer has no </s> piece to end lines with");
  std::vector<int> ids;
  for (const auto& line : lines) {
    const auto status = sp_->Encode(line, &ids);
    if (!status.ok()) throw std::runtime_error("SentencePiece encode failed: " + status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(eos);
  }
}

}  // namespace ppu::data
