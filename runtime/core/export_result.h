// What ppu-export reports on success, as its pod's termination message, and the operator reads
// back into status.export (docs/OPERATOR.md, "Export"). A message of the scheme in
// core/result_message.h:
//   {"ppu_export":1,"format":"hf","dtype":"fp32","path":"/checkpoints/model","round":20}
// On failure ppu-export writes its error line instead, which parse_export_result() refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ppu {

// ppu-export's --format and --dtype, which a PPUJob's spec.export.format and .dtype pass on (the
// CRD's enums are checked against these lists: CrdDocument.ExportChoicesArePpuExportsOwn). The
// first of each is the default.
namespace export_choice {
inline constexpr const char* kHf = "hf";    // a Hugging Face model directory (GPT-NeoX)
inline constexpr const char* kPpu = "ppu";  // PPU's own parameter names
inline constexpr const char* kFormats[] = {kHf, kPpu};
inline constexpr const char* kFp32 = "fp32";  // the global parameters exactly
inline constexpr const char* kBf16 = "bf16";  // rounded, half the size
inline constexpr const char* kDtypes[] = {kFp32, kBf16};
}  // namespace export_choice

struct ExportResult {
  static constexpr const char* kKind = "ppu_export";
  static constexpr int kVersion = 1;
  static constexpr size_t kMaxBytes = 1024;
  std::string format;  // hf or ppu
  std::string dtype;   // fp32 or bf16
  std::string path;    // the model's directory, as the export pod saw it
  int64_t round = 0;   // the checkpoint round the model was read from

  // Each field's key, once (result_message.h).
  template <class R, class Visit>
  static void visit(R& r, Visit&& v) {
    v("format", r.format);
    v("dtype", r.dtype);
    v("path", r.path);
    v("round", r.round);
  }
};

// The message; throws std::length_error beyond kMaxBytes (a path of absurd length).
std::string format_export_result(const ExportResult& r);
std::optional<ExportResult> parse_export_result(const std::string& message);

}  // namespace ppu
