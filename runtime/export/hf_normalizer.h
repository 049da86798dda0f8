// hf_normalizer: a SentencePiece model's normalisation as a Hugging Face tokenizers
// "normalizer", and its decoding as a "decoder", built from the model's own settings
// (normalizer_spec: the character map, add_dummy_prefix, remove_extra_whitespaces;
// byte_fallback) so that for every text the normalizer's output is the string SentencePiece
// segments — spaces as U+2581 ("▁"), a "▁" in front when add_dummy_prefix — and the decoder
// turns SentencePiece's pieces back into what SentencePiece's decode returns.
//
// SentencePiece normalises in one pass: at each position the longest key of the character map,
// then, with remove_extra_whitespaces, no leading spaces, runs of spaces as one and no trailing
// "▁"; the dummy prefix goes in front of what remains. The normalizer does the same in steps:
//   - the character map. tokenizers' "Precompiled" applies it per grapheme cluster, with the
//     shortest key that starts the cluster for the whole cluster: alone it would drop an accent
//     after "ﬁ", keep half of a decomposed "Ầ", leave half-width katakana and their voicing
//     marks apart and map CR LF as CR. So it only maps single characters here — a separator
//     (U+FDD3, a noncharacter) goes before every non-ASCII character, so that no cluster holds
//     two — and the map's multi-character keys, which for the rules accepted (SentencePiece's
//     NFKC family: nmt_nfkc, nfkc, nmt_nfkc_cf, nfkc_cf) are the compositions NFKC makes, are
//     left to an "NFKC" step before it. NFKC composes more than the keys do, so a blocker
//     (U+FDD4, which NFKC does not compose across) goes after every character that no multi-
//     character key continues from, before a non-ASCII one. FULLWIDTH TILDE, which nmt_nfkc
//     keeps and NFKC changes, is protected; noncharacters the text holds itself are escaped;
//     CR LF becomes the map's values of CR and of LF first.
//   - whitespace: regular-expression replacements on ' ' only (tokenizers' "Strip" would also
//     take tabs and U+0085), then the dummy prefix ("Prepend", which leaves an empty string
//     empty, as SentencePiece does once every character was removed).
// What still differs in the fast tokenizer, all beyond ordinary text: combining marks out of
// canonical order (NFKC reorders them), a mark NFKC composes with a letter across another mark
// where the map has no such key ("a" + U+031B + U+0301), a mark that decomposes into two
// (U+0344) after a letter the first composes with, characters newer than the map's or
// tokenizers' Unicode tables, and decoding a text that starts with a literal "▁"
// under remove_extra_whitespaces with pieces of several leading "▁". The slow tokenizer is
// SentencePiece itself and has none of these.
#pragma once

#include <nlohmann/json.hpp>

#include "export/spm_model.h"

namespace ppu {

// The model must have passed require_expressible (export/spm_support.h). Throws
// std::runtime_error when the character map breaks an assumption above (keys for a space,
// longer keys from CR or LF, the marker noncharacters as keys).
nlohmann::json hf_normalizer(const SpmModel& model);
nlohmann::json hf_decoder(const SpmModel& model);

}  // namespace ppu
