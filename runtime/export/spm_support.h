// spm_support: which SentencePiece models the Hugging Face export reproduces exactly, so that
// ppu-export refuses the others instead of writing a tokenizer that gives other ids.
//
// Exported: BPE and Unigram models with byte fallback and escaped whitespace ("▁" in front of a
// word), any add_dummy_prefix and remove_extra_whitespaces, and a normalisation rule that is
// either none (identity) or one of SentencePiece's NFKC family: nmt_nfkc (ppu-data's, and
// SentencePiece's default), nfkc, nmt_nfkc_cf, nfkc_cf. Settings that only steer training
// (split_digits, split_by_whitespace, allow_whitespace_only_pieces, character_coverage, ...)
// show only in the pieces and need nothing.
//
// Refused, each with a message naming the setting: model_type WORD or CHAR;
// treat_whitespace_as_suffix; escape_whitespaces false; byte_fallback false (a character
// outside the vocabulary becomes <unk>, which SentencePiece decodes as " ⁇ " and transformers as
// "<unk>"); user_defined_symbols (SentencePiece matches them inside the text before
// normalising, transformers normalises the text on either side apart); UNUSED pieces; a custom
// normalization_rule_tsv; a denormalizer; BPE pieces sharing a score; a Unigram vocabulary
// with a character that occurs in pieces without being one.
#pragma once

#include <string>

#include "export/spm_model.h"

namespace ppu {

// Throws std::runtime_error "<path>: <setting>: <why>" for the first setting not exported.
void require_expressible(const SpmModel& model, const std::string& path);

}  // namespace ppu
