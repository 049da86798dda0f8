#include "core/run_result.h"

#include "core/result_message.h"

namespace ppu {

std::string format_run_result(const RunResult& r) { return result_message::format_message(r); }

std::optional<RunResult> parse_run_result(const std::string& message) {
  return result_message::parse_message<RunResult>(message);
}

}  // namespace ppu
