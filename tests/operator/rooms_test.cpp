// The rooms of operator/src (operator/src/README.md and each room's README.md): every source is
// in a room but the binary's main and its flags, includes name the room, and each room includes
// only what its README allows, so the rooms depend one way: kube <- reconcile <- metrics <-
// controller <- main.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(PPU_SOURCE_DIR) / "operator" / "src";

// The operator's own headers a file includes ("kube/kube_api.h", "flags.h"; not <...> nor the
// runtime's "core/...").
std::vector<std::string> own_includes(const fs::path& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const std::string prefix = "#include \"";
    if (line.rfind(prefix, 0) != 0) continue;
    const std::string target = line.substr(prefix.size(), line.find('"', prefix.size()) - prefix.size());
    if (target.rfind("core/", 0) != 0) out.push_back(target);
  }
  return out;
}

TEST(Rooms, EachRoomIncludesOnlyWhatItsReadmeAllows) {
  // A room may include the headers that start with one of these.
  const std::map<std::string, std::vector<std::string>> allowed = {
      {"kube", {"kube/"}},
      {"reconcile", {"reconcile/", "kube/resource_kind.h", "kube/typed_object.h", "kube/rfc3339.h"}},
      {"metrics", {"metrics/", "kube/", "reconcile/job_constants.h"}},
      {"controller", {"controller/", "kube/", "reconcile/", "metrics/"}},
      {"cmd", {"cmd/", "controller/", "kube/", "reconcile/", "metrics/"}},
  };
  int files = 0;
  for (const auto& [room, ok] : allowed) {
    ASSERT_TRUE(fs::exists(kSrc / room / "README.md")) << room << " has no README.md";
    for (const auto& entry : fs::directory_iterator(kSrc / room)) {
      const fs::path& p = entry.path();
      if (p.extension() != ".h" && p.extension() != ".cpp") continue;
      ++files;
      for (const auto& inc : own_includes(p)) {
        bool fine = false;
        for (const auto& prefix : ok) fine = fine || inc.rfind(prefix, 0) == 0;
        EXPECT_TRUE(fine) << room << "/" << p.filename().string() << " includes \"" << inc << "\"";
      }
    }
  }
  EXPECT_GT(files, 50) << "the rooms hold the operator's sources";
}

TEST(Rooms, EverySourceLivesInARoom) {
  const std::set<std::string> expected = {"README.md", "cmd", "controller", "kube", "metrics", "reconcile"};
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(kSrc)) found.insert(entry.path().filename().string());
  EXPECT_EQ(found, expected);
  EXPECT_TRUE(fs::exists(kSrc / "cmd" / "ppu_operator_main.cpp")) << "the binary's main lives in cmd/";
}

}  // namespace
