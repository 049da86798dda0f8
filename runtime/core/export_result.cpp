#include "core/export_result.h"

#include "core/result_message.h"

namespace ppu {

std::string format_export_result(const ExportResult& r) { return result_message::format_message(r); }

std::optional<ExportResult> parse_export_result(const std::string& message) {
  return result_message::parse_message<ExportResult>(message);
}

}  // namespace ppu
