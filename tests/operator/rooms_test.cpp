// The rooms of operator/src (operator/src/README.md and each room's README.md): every source is
// in a room. What each room may include is its README's "May include:" line, checked with the
// runtime's folders by one rule (scripts/check-rooms.py, ctest lint.rooms), so the rooms depend
// one way: kube <- reconcile <- metrics <- controller <- main, and reconcile <- crd <- ppu-crd.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(PPU_SOURCE_DIR) / "operator" / "src";

TEST(Rooms, EverySourceLivesInARoom) {
  const std::set<std::string> expected = {"README.md", "cmd", "controller", "crd", "kube", "metrics", "reconcile"};
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(kSrc)) found.insert(entry.path().filename().string());
  EXPECT_EQ(found, expected);
  EXPECT_TRUE(fs::exists(kSrc / "cmd" / "ppu_operator_main.cpp")) << "the binary's main lives in cmd/";
}

}  // namespace
