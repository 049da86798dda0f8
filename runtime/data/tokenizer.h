// SentencePiece tokenizer: train on text files or load a .model, encode and decode.
//
// Contract: training is deterministic for the same inputs and options (fixed random seed,
// `threads` = 1 by default; more threads are faster but SentencePiece does not promise
// identical models). encode_file() maps each input line to its pieces followed by </s>, so
// line structure survives tokenisation (an empty line becomes a lone </s>). decode() drops
// control tokens (<s>, </s>). SentencePiece headers stay out of this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace ppu::data {

struct TokenizerTrainOptions {
  uint32_t vocab_size = 4096;
  std::string model_type = "bpe";  // "bpe" | "unigram"
  uint32_t seed = 0;
  uint32_t threads = 1;
  double character_coverage = 1.0;   // 1.0: every character in the data gets a piece
  uint64_t max_sentences = 2000000;  // lines sampled for training (input_sentence_size)
};

class Tokenizer {
 public:
  // Trains on `inputs` and writes `model_path` (must end in ".model"; a ".vocab" file is
  // written beside it). Throws std::runtime_error with SentencePiece's message on failure.
  static Tokenizer train(const std::vector<std::string>& inputs, const std::string& model_path,
                         const TokenizerTrainOptions& options = {});
  // Throws std::runtime_error naming the file.
  static Tokenizer load(const std::string& model_path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  uint32_t vocab_size() const;
  int32_t eos_id() const;
  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  // Appends the encoding of every line of `path` (pieces + </s> per line) to `out`.
  void encode_file(const std::string& path, std::vector<int32_t>& out) const;
  // The same for lines already in memory (without line ends).
  void encode_lines(const std::vector<std::string>& lines, std::vector<int32_t>& out) const;

 private:
  explicit Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace ppu::data
