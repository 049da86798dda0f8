#include "core/rendered_files.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace ppu {

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

int rendered_files_main(int argc, char** argv, const std::string& tool, const std::string& what,
                        const std::function<std::vector<RenderedFile>()>& render) {
  CLI::App app{tool + ": render " + what};
  std::string root;
  bool write = false, check = false;
  auto* mode = app.add_option_group("mode");
  mode->add_flag("--write", write, "rewrite the rendered files under the source root");
  mode->add_flag("--check", check, "exit 1 when a checked-in file differs from its rendering");
  mode->require_option(1);
  app.add_option("root", root, "the source tree's root")->required()->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);
  try {
    int stale = 0;
    for (const auto& file : render()) {
      const std::string path = root + "/" + file.path;
      if (write) {
        write_file(path, file.text);
      } else if (!same_as_file(path, file.text)) {
        std::cerr << "out of date: " << file.path << " (run: ninja -C build generate-schema)\n";
        ++stale;
      }
    }
    if (check && stale == 0) std::cout << tool << ": " << what << " are up to date\n";
    return stale ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ppu
