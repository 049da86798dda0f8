// What a checkpoint holds, by name and with a version. Each stateful component saves and loads
// its own section, and every key of every section is spelled here (namespace checkpoint_key)
// and nowhere else, so no reader re-aligns positional tensors or rebuilds a key by hand:
//  - rank part (rank-NNNNN.pt)
//      model.weight.<param>, model.master.<param>  Transformer::save/load (masters: bf16 runs only)
//      inner                                        InnerOptimizer::save/load (a nested archive)
//      feedback: feedback.<fragment>.{contribution,result}
//                                                   OuterOptimizer::feedback_writer/load_feedback
//      progress.{step,rounds,loader_position}       int64 scalars \ the trainer's Progress
//      totals.<name>                                float64 scalars /
//  - global part (global.pt)
//      outer.global.<param>, outer.momentum.<param> OuterOptimizer::save/load (an empty momentum:
//                                                   none yet)
//  - manifest.json: "format": kCheckpointFormat (CheckpointStore).
// <param> is the parameter's layout name (core/model_spec: e.g. "blocks.3.mlp.up.weight").
// A checkpoint of another format is refused with a CheckpointFormatError naming its path, its
// format and this build's; it is never loaded and never skipped in favour of starting over,
// which would write new rounds beside (and prune) the state the job could not read.
// Every checkpoint that cannot be used (another format, corrupt, a field missing, another model)
// is a CheckpointError: ppu-train and ppu-export exit 4 on it (core/job_contract.h), so the
// operator fails the job with the reason instead of restarting it into the same fault.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/checkpoint_names.h"
#include "core/exit_status.h"

namespace ppu {

// 1: positional tensors ("weight.3", "progress" = [step, rounds, position]) and no "format"
// key in the manifest. 2: named fields as above.
inline constexpr int kCheckpointFormat = 2;

// A checkpoint missing, corrupt, of another format or not matching the run (exit 4: never retried).
class CheckpointError : public UnusableInput {
 public:
  using UnusableInput::UnusableInput;
  const char* subject() const noexcept override { return "checkpoint"; }
};

class CheckpointFormatError : public CheckpointError {
 public:
  using CheckpointError::CheckpointError;
};

// The manifest's format (1 when it has none, as format-1 manifests did); throws
// CheckpointFormatError when it is not kCheckpointFormat. `where` names the checkpoint.
void require_checkpoint_format(int format, const std::string& where);

// Every key a checkpoint holds (the map above).
namespace checkpoint_key {
inline std::string model_weight(const std::string& param) { return "model.weight." + param; }
inline std::string model_master(const std::string& param) { return "model.master." + param; }
inline constexpr const char* kInner = "inner";
inline constexpr const char* kFeedback = "feedback";
inline std::string feedback_contribution(size_t fragment) {
  return "feedback." + std::to_string(fragment) + ".contribution";
}
inline std::string feedback_result(size_t fragment) { return "feedback." + std::to_string(fragment) + ".result"; }
inline constexpr const char* kStep = "progress.step";
inline constexpr const char* kRounds = "progress.rounds";
inline constexpr const char* kLoaderPosition = "progress.loader_position";
inline std::string total(const std::string& name) { return "totals." + name; }
inline std::string outer_global(const std::string& param) { return "outer.global." + param; }
inline std::string outer_momentum(const std::string& param) { return "outer.momentum." + param; }
}  // namespace checkpoint_key

// How a section's writer holds its tensors. Shared: it refers to the live tensors, so it must run
// before training changes them (an inline save). Cloned: it holds copies made when it was made,
// and may run later on another thread (a background save: the training thread pays for the
// copies only; the upload thread builds the archive and serialises it).
enum class TensorCopy { Shared, Cloned };
// A copy of `t` for a background save, the same dtype, shape and requires_grad (what the archive
// records). A contiguous CPU tensor is copied with memcpy, not clone(): a round's snapshot is
// hundreds of small tensors, and clone()'s copy kernel costs more to set up than to run.
torch::Tensor snapshot_copy(const torch::Tensor& t);
inline torch::Tensor as_saved(const torch::Tensor& t, TensorCopy copy) {
  return copy == TensorCopy::Cloned && t.defined() ? snapshot_copy(t) : t;
}

// Writes a section (or a whole part) into an archive.
using ArchiveWriter = std::function<void(torch::serialize::OutputArchive&)>;

// A section's (key, tensor) pairs, each held as `copy` says, and the writer that writes them in
// the order added.
class SavedTensors {
 public:
  explicit SavedTensors(TensorCopy copy) : copy_(copy) {}
  void add(std::string key, const torch::Tensor& t) { entries_.emplace_back(std::move(key), as_saved(t, copy_)); }
  // A tensor that is already a copy of its own (never copied again).
  void add_own(std::string key, torch::Tensor t) { entries_.emplace_back(std::move(key), std::move(t)); }
  // add(), or an empty tensor where `t` is undefined (state not made yet).
  void add_or_empty(std::string key, const torch::Tensor& t) {
    if (t.defined()) add(std::move(key), t);
    else add_own(std::move(key), torch::empty({0}));
  }
  ArchiveWriter writer() &&;

 private:
  TensorCopy copy_;
  std::vector<std::pair<std::string, torch::Tensor>> entries_;
};

// `section` written into a nested archive under `key` of the part's archive.
void write_nested(torch::serialize::OutputArchive& archive, const std::string& key, const ArchiveWriter& section);

void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value);
void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, double value);
// Throw CheckpointError naming `key` when it is missing or not a one-element tensor.
int64_t read_int64(torch::serialize::InputArchive& archive, const std::string& key);
double read_double(torch::serialize::InputArchive& archive, const std::string& key);

}  // namespace ppu
