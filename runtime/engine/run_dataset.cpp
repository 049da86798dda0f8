#include "engine/run_dataset.h"

#include "common/fnv1a.h"

namespace ppu {

data::TokenDataset load_dataset(const Config& c) {
  if (c.data.source == DataSource::Shards || !c.data.path.empty()) {
    auto ds = data::TokenDataset::load(c.data.path);
    data::TokenDataset::check_vocab(c.data.path, ds.vocab, c.model.vocab);
    return ds;
  }
  data::SyntheticDatasetOptions o;
  o.corpus.vocab = c.model.vocab;
  o.corpus.order = c.data.synthetic_order;
  o.corpus.support = c.data.synthetic_support;
  o.corpus.seed = c.train.seed;
  o.train_tokens = c.data.synthetic_train_tokens;
  o.val_tokens = c.data.synthetic_val_tokens;
  return data::TokenDataset::synthetic(o);
}

torch::Tensor to_tensor(const data::TokenBatch& b) {
  return torch::tensor(at::ArrayRef<int32_t>(b.tokens), torch::kInt32).to(torch::kLong).view({b.batch, b.seq_len + 1});
}

double eval_loss_sum(const Transformer& model, const data::TokenDataset& dataset, const Config& c, int first,
                     int stride, torch::Device device, const std::function<void()>& after_batch) {
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (int i = first; i < c.train.eval_batches; i += stride) {
    const auto batch = dataset.eval_batch(i, c.inner.batch_size, c.model.seq_len, c.train.eval_batches);
    sum += model.loss(to_tensor(batch).to(device)).item<double>();
    if (after_batch) after_batch();
  }
  return sum;
}

std::string parameter_checksum(const std::vector<torch::Tensor>& tensors) {
  uint64_t h = kFnv1a64Offset;
  for (const auto& t : tensors) {
    const auto c = t.to(torch::kCPU).contiguous();  // no copy for CPU tensors (DDP on CUDA needs it)
    h = fnv1a64(c.data_ptr(), c.nbytes(), h);
  }
  return hex64(h);
}

}  // namespace ppu
