// model_card: the README.md of an exported model — Hugging Face's model card, with its YAML
// front matter (library_name, pipeline_tag, tags) — stating how the model was trained (method,
// slicing, ranks, H, outer optimiser), how much (tokens, the checkpoint round it came from), how
// well (eval loss and perplexity of these parameters on the run's validation windows), what it
// was trained on (and that a synthetic corpus has no tokenizer), how to load it, and the
// commands that reproduce it. The run's full config travels beside it (ppu_config.yaml).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config.h"

namespace ppu {

struct ModelCardFacts {
  std::string name;  // the export directory's base name
  Config config;
  int world_size = 0;
  int64_t round = 0;
  double tokens_trained = 0;        // all ranks
  std::optional<double> eval_loss;  // nats/token; nullopt when the dataset was not readable
  int64_t eval_tokens = 0;          // target tokens the evaluation scored
  std::string dtype;                // float32 | bfloat16
  std::string parameter_checksum;   // of the fp32 parameters, as in the run's summary
  bool has_tokenizer = false;
  std::string dataset;  // where the tokens came from, in a phrase
};

std::string model_card(const ModelCardFacts& f);

}  // namespace ppu
