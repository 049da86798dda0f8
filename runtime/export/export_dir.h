// ExportDir: writes an export so that no reader ever sees a partial model. Files go into a
// staging directory beside the target (<out>.partial-<pid>); commit() moves it into place
// (an existing target is renamed aside first and removed after), so `out` is either absent,
// the previous model or the complete new one — a crash leaves at most the staging or the
// set-aside directory, never a loadable half.
//
// What may be replaced: a missing or empty `out`, or an export whose ppu_provenance.json names
// the same identity (the same checkpoint round, contents, format and dtype: re-running an export
// is idempotent). Anything else — another model, or files this tool did not write — is refused
// with ExportRefused unless `overwrite`.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

#include "core/exit_status.h"

namespace ppu {

inline constexpr const char* kProvenanceFile = "ppu_provenance.json";

// --out holds something else (exit 2: the user chooses --overwrite or another --out).
struct ExportRefused : ConfigError {
  using ConfigError::ConfigError;
};

class ExportDir {
 public:
  // `identity`: compared with the "identity" object of an existing target's provenance file.
  ExportDir(std::string out, const nlohmann::json& identity, bool overwrite);
  ExportDir(const ExportDir&) = delete;
  ExportDir& operator=(const ExportDir&) = delete;
  ~ExportDir();  // removes the staging directory unless committed

  const std::string& staging() const { return staging_; }
  std::string file(const std::string& name) const { return staging_ + "/" + name; }
  void commit();

 private:
  std::string out_, staging_;
  bool committed_ = false;
};

}  // namespace ppu
