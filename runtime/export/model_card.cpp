#include "export/model_card.h"

#include <cmath>
#include <sstream>

#include "core/export_result.h"

namespace ppu {

namespace {

std::string method_phrase(const Config& c) {
  switch (c.method) {
    case Method::Ddp: return "data-parallel training (DDP), the baseline";
    case Method::DiLoCo: return "DiLoCo (every rank trains every parameter; outer step every H inner steps)";
    case Method::StreamingDiLoCo:
      return "Streaming DiLoCo (every rank trains every parameter; layer groups synchronised in turn)";
    case Method::Ppu:
      return "Partial Parameter Updates: each rank trains a fixed 1/" + std::to_string(c.effective_slices()) +
             " slice (" + choice_name(c.slicing.mode) + ") and skips the weight gradients and optimiser state " +
             "of the rest; deltas are normalised by how many ranks train each element";
  }
  return choice_name(c.method);
}

}  // namespace

std::string model_card(const ModelCardFacts& f) {
  const Config& c = f.config;
  std::ostringstream o;
  o << "---\nlibrary_name: transformers\npipeline_tag: text-generation\ntags:\n  - ppu\n  - " << choice_name(c.method)
    << "\n  - gpt_neox\n---\n\n";
  o << "# " << f.name << "\n\n";
  o << "A " << total_parameters(c.model) << "-parameter decoder (" << c.model.layers << " layers, d_model "
    << c.model.d_model << ", " << c.model.heads << " heads, " << choice_name(c.model.activation) << " MLP, vocabulary "
    << c.model.vocab << ", context " << c.model.seq_len << ") trained with PPU by " << method_phrase(c) << ".\n\n";
  o << "Stored as transformers' GPT-NeoX architecture (rotary over the whole head, sequential residual, tied "
       "embedding, zero MLP biases), which computes the same function as the trainer's model; weights in "
    << f.dtype << ".\n\n";
  o << "## Training\n\n| | |\n|---|---|\n";
  o << "| method | " << choice_name(c.method) << " |\n";
  if (c.method == Method::Ppu)
    o << "| slicing | " << choice_name(c.slicing.mode) << ", 1/" << c.effective_slices() << " per rank |\n";
  o << "| ranks | " << f.world_size << " |\n";
  if (c.method != Method::Ddp)
    o << "| outer optimiser | " << choice_name(c.outer.optimizer) << ", lr " << c.outer.lr << ", momentum "
      << c.outer.momentum << ", every H = " << c.outer.sync_every << " inner steps |\n";
  o << "| inner optimiser | " << choice_name(c.inner.optimizer) << ", lr " << c.inner.lr << ", batch "
    << c.inner.batch_size << " × " << c.model.seq_len << " per rank |\n";
  o << "| training precision | " << choice_name(c.train.dtype) << " |\n";
  o << "| checkpoint | round " << f.round << " |\n";
  o << "| tokens trained | " << static_cast<int64_t>(f.tokens_trained) << " (all ranks) |\n";
  o << "| data | " << f.dataset << " |\n";
  if (f.eval_loss)
    o << "| eval loss | " << *f.eval_loss << " nats/token, perplexity " << std::exp(*f.eval_loss) << ", over "
      << f.eval_tokens << " validation tokens (these parameters in fp32) |\n";
  else o << "| eval loss | not measured: the dataset was not readable when exporting |\n";
  o << "| parameter checksum | " << f.parameter_checksum << " (FNV-1a 64 of the fp32 parameters) |\n\n";
  o << "## Use\n\n";
  if (f.has_tokenizer)
    o << "```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
      << "tokenizer = AutoTokenizer.from_pretrained(\"" << f.name << "\")\n"
      << "model = AutoModelForCausalLM.from_pretrained(\"" << f.name << "\")\n"
      << "ids = tokenizer(\"The\", return_tensors=\"pt\").input_ids\n"
      << "print(tokenizer.decode(model.generate(ids, max_new_tokens=40)[0]))\n```\n\n"
      << "The tokenizer is the run's SentencePiece model (tokenizer.model; tokenizer.json for the fast "
         "tokenizer). It adds no BOS/EOS: training text was encoded line by line, each line ending in "
         "`</s>`, so generation stops at the end of a line.\n\n";
  else
    o << "No tokenizer: the model was trained on PPU's synthetic corpus, whose tokens are ids, not text. "
         "Load it with `AutoModelForCausalLM.from_pretrained(\""
      << f.name << "\")` and feed token ids.\n\n";
  o << "## Reproduce\n\nThe run's config is `ppu_config.yaml`; `ppu_provenance.json` names the checkpoint.\n\n"
    << "```sh\nppu-launch --nproc " << f.world_size << " --config ppu_config.yaml\n"
    << "ppu-export --checkpoint <checkpoint.dir> --round " << f.round << " --dtype "
    << (f.dtype == "bfloat16" ? export_choice::kBf16 : export_choice::kFp32) << " --out " << f.name << "\n```\n";
  return o.str();
}

}  // namespace ppu
