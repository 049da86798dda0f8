// hf_tokenizer: a run's SentencePiece model (ppu-data text) as the files Hugging Face's
// AutoTokenizer loads — tokenizer.json for the fast (Rust) tokenizer, tokenizer_config.json and
// special_tokens_map.json — giving the same ids as the SentencePiece model itself: its NFKC
// character map and whitespace rules, BPE merges (or Unigram scores) and byte fallback. Literal
// "<s>"/"</s>" in a text are text, as ppu-data encoded them (split_special_tokens); no BOS or
// EOS is added (ppu-data ends every line with </s> itself). The .model file is copied beside
// them by the caller, so the SentencePiece-backed slow tokenizer loads too.
//
// The model is read from its protobuf bytes without its schema (protobuf's UnknownFieldSet):
// Debian ships SentencePiece's library but not the generated header of its model proto. Throws
// std::runtime_error naming the file for a model this conversion does not express exactly
// (model types other than BPE and Unigram, whitespace as suffix, no whitespace escaping).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ppu {

struct SpecialTokenIds {
  int bos = -1, eos = -1, unk = -1, pad = -1;  // -1: the model has none
};

struct HfTokenizerFiles {
  nlohmann::json tokenizer;           // tokenizer.json
  nlohmann::json tokenizer_config;    // tokenizer_config.json
  nlohmann::json special_tokens_map;  // special_tokens_map.json
  SpecialTokenIds ids;
};

// `model_max_length`: the model's context (seq_len), so transformers warns past it.
HfTokenizerFiles hf_tokenizer_files(const std::string& sentencepiece_model_path, int64_t model_max_length);

}  // namespace ppu
