// remove_tree (common/remove_tree.h): removes a directory tree bottom-up, removes symbolic links
// without following them, and treats a missing path as already removed, as
// std::filesystem::remove_all does (which it replaces; see its header).
#include "common/remove_tree.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>

namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  auto dir = fs::temp_directory_path() / ("ppu-remove-tree-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path) { std::ofstream(path) << "x"; }

TEST(RemoveTree, RemovesNestedDirectoriesAndFilesButNotWhatALinkPointsTo) {
  const auto root = scratch();
  const auto tree = root / "round-000003";
  fs::create_directories(tree / "a" / "b" / "c");
  write(tree / "rank-00000.pt");
  write(tree / "a" / "b" / "c" / "deep.bin");
  const auto outside = root / "keep";
  fs::create_directories(outside);
  write(outside / "precious");
  fs::create_directory_symlink(outside, tree / "a" / "link");
  ppu::remove_tree(tree.string());
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside / "precious"));
  ppu::remove_tree(root.string());
}

TEST(RemoveTree, MissingPathIsAlreadyRemovedAndAFileIsRemoved) {
  const auto root = scratch();
  std::error_code error;
  ppu::remove_tree((root / "absent").string(), error);
  EXPECT_FALSE(error) << error.message();
  EXPECT_NO_THROW(ppu::remove_tree((root / "absent").string()));
  write(root / "file");
  ppu::remove_tree((root / "file").string());
  EXPECT_FALSE(fs::exists(root / "file"));
  ppu::remove_tree(root.string());
}

}  // namespace
