// ppu-crd: writes or checks the PPUJob CRD that operator/src/crd/ renders whole (crd_document.h
// says from what), in manifests/crd/ and in the Helm chart's copy.
//   ppu-crd --write <source root>   rewrite both files
//   ppu-crd --check <source root>   exit 1 naming each file that differs from the rendering
// A development tool: not installed; run by `ninja generate-schema` and the ctest operator.crd_file.
#include "core/rendered_files.h"
#include "crd/crd_document.h"

int main(int argc, char** argv) {
  return ppu::rendered_files_main(argc, argv, "ppu-crd", "the PPUJob CRD and its chart copy", [] {
    const std::string text = ppu::op::crd::crd_yaml();
    return std::vector<ppu::RenderedFile>{{ppu::op::crd::kCrdPath, text}, {ppu::op::crd::kChartCrdPath, text}};
  });
}
