#include "common/termination_message.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/job_contract.h"

namespace ppu {

void write_termination_message(const std::string& message) {
  const char* override_path = std::getenv(contract::env::kTerminationLogPath);
  const char* path = override_path != nullptr ? override_path : contract::kTerminationLog;
  std::error_code ignored;
  if (override_path == nullptr && !std::filesystem::exists(path, ignored)) return;
  std::ofstream out(path);
  if (out) out << message << "\n";
}

}  // namespace ppu
