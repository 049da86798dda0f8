// hf_tokenizer: a run's SentencePiece model (ppu-data text) as the files Hugging Face's
// AutoTokenizer loads — tokenizer.json for the fast (Rust) tokenizer, tokenizer_config.json and
// special_tokens_map.json — with the ids SentencePiece gives, and SentencePiece's decode. The
// caller copies the .model beside them as tokenizer.model for the slow tokenizer.
//
// tokenizer.json is assembled from the model's own settings: the normaliser and decoder of
// export/hf_normalizer.h, the pre-tokeniser and BPE or Unigram model of export/hf_segmenter.h,
// its control pieces (<s>, </s>, <unk>, <pad>) as special added tokens. tokenizer_config.json
// names GemmaTokenizer, whose slow form encodes with sp_model.encode and decodes with
// sp_model.decode and nothing around them (LlamaTokenizer's legacy/add_prefix_space handling
// alters decode, and setting add_prefix_space would make transformers rebuild the fast
// tokenizer from the slow one), and whose fast form loads tokenizer.json as written. No BOS or
// EOS is added (ppu-data ends every line with </s> itself), and a literal "<s>" or "</s>" in a
// text is text (split_special_tokens), as SentencePiece encodes it. A model the conversion does
// not express exactly is refused (export/spm_support.h lists what is exported).
//
// Throws std::runtime_error naming the file for an unreadable or refused model.
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
