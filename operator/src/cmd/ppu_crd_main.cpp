// ppu-crd: writes or checks the PPUJob CRD that operator/src/crd/ renders whole (crd_document.h
// says from what), in manifests/crd/ and in the Helm chart's copy.
//   ppu-crd --write <source root>   rewrite both files
//   ppu-crd --check <source root>   exit 1 naming each file that differs from the rendering
// A development tool: not installed; run by `ninja generate-schema` and the ctest operator.crd_file.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "crd/crd_document.h"

namespace {

bool same_as_file(const std::string& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str() == text;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-crd: render the PPUJob CRD (manifests/crd/ and the chart's copy)"};
  std::string root;
  bool write = false, check = false;
  auto* mode = app.add_option_group("mode");
  mode->add_flag("--write", write, "rewrite the CRD and its chart copy under the source root");
  mode->add_flag("--check", check, "exit 1 when a checked-in copy differs from the rendering");
  mode->require_option(1);
  app.add_option("root", root, "the source tree's root")->required()->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  try {
    const std::string text = ppu::op::crd::crd_yaml();
    int stale = 0;
    for (const char* rel : {ppu::op::crd::kCrdPath, ppu::op::crd::kChartCrdPath}) {
      const std::string path = root + "/" + rel;
      if (write) write_file(path, text);
      else if (!same_as_file(path, text)) {
        std::cerr << "out of date: " << rel << " (run: ninja -C build generate-schema)\n";
        ++stale;
      }
    }
    if (check && stale == 0) std::cout << "ppu-crd: the CRD and its chart copy are up to date\n";
    return stale ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "ppu-crd: " << e.what() << "\n";
    return 1;
  }
}
