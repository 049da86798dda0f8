// ppu-schema: writes or checks the docs rendered from the runtime's tables: docs/CONFIG.md from the
// config schema (core/config_keys.h) and docs/RUN_SUMMARY.md from the run summary's field list
// (core/run_summary.h). The CRD, whose spec.training is the same config schema, is rendered whole
// by the operator's ppu-crd (operator/src/crd/), which reads core/config_reference.h too.
//   ppu-schema --write <source root>   rewrite them
//   ppu-schema --check <source root>   exit 1 naming each file that differs from its rendering
// A development tool: not installed, run by `ninja generate-schema` and the schema_files test.
#include "core/config_reference.h"
#include "core/rendered_files.h"
#include "core/run_summary.h"

int main(int argc, char** argv) {
  return ppu::rendered_files_main(argc, argv, "ppu-schema", "docs/CONFIG.md and docs/RUN_SUMMARY.md", [] {
    return std::vector<ppu::RenderedFile>{{"docs/CONFIG.md", ppu::config_reference_markdown()},
                                          {"docs/RUN_SUMMARY.md", ppu::run_summary_reference_markdown()}};
  });
}
