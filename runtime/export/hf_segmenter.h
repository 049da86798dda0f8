// hf_segmenter: how a SentencePiece model cuts a normalised string into pieces, as Hugging Face
// tokenizers' "pre_tokenizer" and "model" (BPE or Unigram), giving SentencePiece's pieces for
// every string export/hf_normalizer.h produces.
//
//   - pre_tokenizer: "Metaspace" (replacement "▁", prepend_scheme "never": the normalizer has
//     placed the dummy prefix already), splitting before each "▁" when no piece has a "▁"
//     after its first character — then no SentencePiece piece crosses such a split, so
//     segmenting the parts alone gives its pieces — and one part otherwise.
//   - BPE: SentencePiece merges, among adjacent symbols, the pair whose concatenation is the
//     highest-scoring piece (the leftmost on a tie). As a merge list: every split (left,
//     right) of a normal piece into two normal pieces, ranked by the merged piece's score.
//     Pieces of equal score would need SentencePiece's leftmost rule across ranks, so
//     require_expressible refuses them.
//   - Unigram: SentencePiece's Viterbi search sees the normal pieces only, while tokenizers'
//     sees the whole vocabulary, so a text holding a literal "<s>" or "<0x41>" could come out
//     as that control or byte piece. Those pieces get a score below any normal segmentation of
//     the same characters, and characters that are no piece (byte fallback) are split off
//     alone, so no such literal can span them. This keeps tokenizers' unknown-character score
//     (the lowest score minus 10) out of every choice, because each such character is then a
//     part of its own; it needs every character inside a piece to be a piece itself, which
//     require_expressible checks.
// Byte fallback is the model's own: characters without a piece become <0xNN> pieces.
#pragma once

#include <nlohmann/json.hpp>

#include "export/spm_model.h"

namespace ppu {

nlohmann::json hf_pre_tokenizer(const SpmModel& model);
// The model must have passed require_expressible (export/spm_support.h).
nlohmann::json hf_segmentation_model(const SpmModel& model);

}  // namespace ppu
