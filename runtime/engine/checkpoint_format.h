// What a checkpoint holds, by name and with a version. Every component writes and
// reads its own named fields, so no reader re-aligns positional tensors by hand:
//  - rank part (rank-NNNNN.pt): "model.weight.<param>" and, in bf16 runs, "model.master.<param>"
//    (the fp32 masters); "inner" (the inner optimiser's own archive); "feedback" (error-feedback
//    residuals, OuterOptimizer::save_feedback); "progress.<field>" int64 and "totals.<field>"
//    float64 scalars (Trainer);
//  - global part (global.pt): "outer.global.<param>" and "outer.momentum.<param>" (an empty
//    tensor: no momentum yet), OuterOptimizer::save;
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
#include <stdexcept>
#include <string>

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

void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value);
void write_scalar(torch::serialize::OutputArchive& archive, const std::string& key, double value);
// Throw CheckpointError naming `key` when it is missing or not a one-element tensor.
int64_t read_int64(torch::serialize::InputArchive& archive, const std::string& key);
double read_double(torch::serialize::InputArchive& archive, const std::string& key);

}  // namespace ppu
