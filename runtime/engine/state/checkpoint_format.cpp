#include "engine/state/checkpoint_format.h"

#include <cstring>

namespace ppu {

namespace {

torch::Tensor read_scalar(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  if (!archive.try_read(key, t) || !t.defined() || t.numel() != 1)
    throw CheckpointError("checkpoint field '" + key + "' is missing or not a scalar");
  return t;
}

}  // namespace

void require_checkpoint_format(int format, const std::string& where) {
  if (format == kCheckpointFormat) return;
  throw CheckpointFormatError(where + " is in checkpoint format " + std::to_string(format) +
                              ", this ppu-train reads format " + std::to_string(kCheckpointFormat) +
                              " only: resume it with the ppu-train that wrote it, or move it away to start afresh");
}

torch::Tensor snapshot_copy(const torch::Tensor& t) {
  if (!t.device().is_cpu() || !t.is_contiguous()) return t.detach().clone().requires_grad_(t.requires_grad());
  auto copy = torch::empty(t.sizes(), t.options().requires_grad(false));
  if (t.nbytes() > 0) std::memcpy(copy.data_ptr(), t.data_ptr(), t.nbytes());
  return t.requires_grad() ? copy.requires_grad_() : copy;
}

ArchiveWriter SavedTensors::writer() && {
  return [entries = std::move(entries_)](torch::serialize::OutputArchive& archive) {
    for (const auto& [key, t] : entries) archive.write(key, t);
  };
}

void write_nested(torch::serialize::OutputArchive& archive, const std::string& key, const ArchiveWriter& section) {
  torch::serialize::OutputArchive nested;
  section(nested);
  archive.write(key, nested);
}

void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value) {
  archive.write(key, torch::tensor({value}, torch::kInt64));
}

void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, double value) {
  archive.write(key, torch::tensor({value}, torch::kFloat64));
}

int64_t read_int64(torch::serialize::InputArchive& archive, const std::string& key) {
  return read_scalar(archive, key).item<int64_t>();
}

double read_double(torch::serialize::InputArchive& archive, const std::string& key) {
  return read_scalar(archive, key).item<double>();
}

}  // namespace ppu
