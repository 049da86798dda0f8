// ppu-schema: writes or checks the docs rendered from the runtime's tables: docs/CONFIG.md from the
// config schema (core/config_keys.h) and docs/RUN_SUMMARY.md from the run summary's field list
// (core/run_summary.h). The CRD, whose spec.training is the same config schema, is rendered whole
// by the operator's ppu-crd (operator/src/crd/), which reads core/config_reference.h too.
//   ppu-schema --write <source root>   rewrite them
//   ppu-schema --check <source root>   exit 1 naming each file that differs from its rendering
// A development tool: not installed, run by `ninja generate-schema` and the schema_files test.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "core/config_reference.h"
#include "core/run_summary.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-schema: render the config schema into docs/CONFIG.md and the run summary into docs/RUN_SUMMARY.md"};
  std::string root;
  bool write = false;
  auto* mode = app.add_option_group("mode");
  mode->add_flag("--write", write, "rewrite the rendered files under the source root");
  bool check = false;
  mode->add_flag("--check", check, "exit 1 when a rendered file differs from its checked-in copy");
  mode->require_option(1);
  app.add_option("root", root, "the source tree's root")->required()->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  try {
    const std::pair<std::string, std::string> files[] = {
        {"docs/CONFIG.md", ppu::config_reference_markdown()},
        {"docs/RUN_SUMMARY.md", ppu::run_summary_reference_markdown()},
    };
    int stale = 0;
    for (const auto& [rel, text] : files) {
      const std::string path = root + "/" + rel;
      if (write) {
        write_file(path, text);
        continue;
      }
      std::ifstream probe(path);
      if (!probe || read_file(path) != text) {
        std::cerr << "out of date: " << rel << " (run: ninja -C build generate-schema)\n";
        ++stale;
      }
    }
    if (check && stale == 0) std::cout << "ppu-schema: docs/CONFIG.md and docs/RUN_SUMMARY.md are up to date\n";
    return stale ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "ppu-schema: " << e.what() << "\n";
    return 1;
  }
}
