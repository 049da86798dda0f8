// The main of a generator whose output is checked in (ppu-schema: docs/CONFIG.md and
// docs/RUN_SUMMARY.md; ppu-crd: the PPUJob CRD and its chart copy):
//   <tool> --write <source root>   rewrite every file from its rendering
//   <tool> --check <source root>   exit 1, naming on stderr each file that differs from its rendering
//                                  ("out of date: <path> (run: ninja -C build generate-schema)")
// `render` returns each file's path relative to the root and its text. Exit 0 when written or up
// to date, 1 when stale or on any error (a file that cannot be written, a rendering that throws).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ppu {

struct RenderedFile {
  std::string path;  // relative to the source root
  std::string text;
};

int rendered_files_main(int argc, char** argv, const std::string& tool, const std::string& what,
                        const std::function<std::vector<RenderedFile>()>& render);

}  // namespace ppu
