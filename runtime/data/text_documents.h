// Text as documents: the unit `ppu-data text` shuffles and splits into train and validation.
//
// read_documents(path, separator): with an empty separator a document is a paragraph (a run of
// non-empty lines; blank lines end it), the finest boundary plain text always has; otherwise a
// line equal to `separator` ends a document (e.g. a form feed between the source files a
// cleaner concatenated). Empty documents are dropped; '\r' line ends are stripped.
//
// split_documents(counts, fraction, seed): a seeded Fisher-Yates shuffle of the documents (the
// same on every platform: counter_rng.h), then whole documents in shuffled order go to
// validation until it holds at least ceil(fraction · total) tokens; the rest, still in shuffled
// order, is the train split. So validation is drawn from every input in proportion, no document
// straddles the two splits, and the train split is not ordered by source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppu::data {

using TextDocument = std::vector<std::string>;  // its lines, without line ends

// Throws std::runtime_error naming the file when it cannot be read.
std::vector<TextDocument> read_documents(const std::string& path, const std::string& separator);

struct DocumentSplit {
  std::vector<size_t> train;  // document indices, in the order they are written
  std::vector<size_t> val;
};

// `tokens[i]` is document i's token count. Throws std::invalid_argument when either split would
// be empty (fewer than two documents, or one document holding almost everything).
DocumentSplit split_documents(const std::vector<uint64_t>& tokens, double val_fraction, uint64_t seed);

}  // namespace ppu::data
