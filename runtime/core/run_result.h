// A rank's final result, as ppu-train writes it to its termination message on success and the
// operator reads it back from the pod's status (docs/OPERATOR.md, "Final status"). A message of
// the scheme in core/result_message.h, at most 1 KiB:
//   {"ppu_result":1,"round":20,"eval_loss":2.169,"perplexity":8.754,"steps":200,"tokens":409600,
//    "checkpoint_round":20,"seconds":61.2,"checksum":"7905be7a33aa0be4"}
// checkpoint_round is -1 when the run wrote none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ppu {

struct RunResult {
  static constexpr const char* kKind = "ppu_result";
  static constexpr int kVersion = 1;
  static constexpr size_t kMaxBytes = 1024;
  int64_t round = 0;              // outer rounds completed
  double eval_loss = 0;           // final evaluation of the global parameters
  double perplexity = 0;          // exp(eval_loss)
  int64_t steps = 0;              // inner steps trained
  int64_t tokens = 0;             // tokens this rank trained on
  int64_t checkpoint_round = -1;  // the last checkpoint written (or resumed from); -1: none
  double seconds = 0;             // wall time of the run
  std::string checksum;           // hex digest of the final global parameters (same on every rank)

  // Each field's key, once (result_message.h).
  template <class R, class Visit>
  static void visit(R& r, Visit&& v) {
    v("round", r.round);
    v("eval_loss", r.eval_loss);
    v("perplexity", r.perplexity);
    v("steps", r.steps);
    v("tokens", r.tokens);
    v("checkpoint_round", r.checkpoint_round);
    v("seconds", r.seconds);
    v("checksum", r.checksum);
  }
};

// The message; throws std::length_error if it would exceed kMaxBytes (a checksum of absurd length).
std::string format_run_result(const RunResult& r);
std::optional<RunResult> parse_run_result(const std::string& message);

}  // namespace ppu
