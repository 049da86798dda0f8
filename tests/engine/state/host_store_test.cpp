// HostStore: θ and the outer momentum in memory or in unlinked, file-backed mappings.
#include "engine/state/host_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config.h"

namespace fs = std::filesystem;
using ppu::HostStore;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "ppu-host-store-XXXXXX").string();
    path = ::mkdtemp(templ.data());
  }
  ~TempDir() { fs::remove_all(path); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
};

// Lines of /proc/self/maps that name a (deleted) ppu-outer-state file in `dir`.
int mapped_files(const fs::path& dir) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find((dir / "ppu-outer-state-").string()) != std::string::npos &&
        line.find("(deleted)") != std::string::npos)
      ++n;
  return n;
}

std::string config_error_of(const std::string& dir) {
  try {
    HostStore store(dir);
  } catch (const ppu::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(HostStore, InMemoryIsAPlainCopy) {
  const HostStore store;
  EXPECT_FALSE(store.on_disk());
  const auto src = torch::arange(12, torch::kFloat32).view({3, 4}).to(torch::kBFloat16);
  const auto copy = store.copy_of(src);
  EXPECT_EQ(copy.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(copy.equal(src.to(torch::kFloat32)));
  EXPECT_NE(copy.data_ptr(), src.data_ptr());
  EXPECT_TRUE(store.zeros({5}).equal(torch::zeros({5})));
}

TEST(HostStore, OnDiskTensorsAreUnlinkedMappingsThatHoldTheirValuesAndVanishWhenFreed) {
  const TempDir dir;
  const HostStore store(dir.path.string());
  EXPECT_TRUE(store.on_disk());
  {
    auto z = store.zeros({300, 700});  // > 1 page, not a multiple of one
    EXPECT_EQ(z.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(z.equal(torch::zeros({300, 700})));
    const auto src = torch::randn({64, 33}).to(torch::kBFloat16);
    auto c = store.copy_of(src);
    EXPECT_TRUE(c.equal(src.to(torch::kFloat32)));
    z.narrow(0, 100, 50).fill_(3.5f);  // writes go to the mapping
    EXPECT_EQ(z.sum().item<double>(), 3.5 * 50 * 700);
    EXPECT_EQ(mapped_files(dir.path), 2);
    EXPECT_EQ(dir.entries(), 0U) << "files are unlinked as soon as they are mapped";
  }
  EXPECT_EQ(mapped_files(dir.path), 0) << "freeing the tensors unmaps their files";
}

TEST(HostStore, ABadDirectoryIsAConfigErrorNamingTheKey) {
  const TempDir dir;
  const auto missing = (dir.path / "absent").string();
  EXPECT_NE(config_error_of(missing).find("outer.host_state_dir '" + missing + "': not a directory"), std::string::npos)
      << config_error_of(missing);
  const auto file = dir.path / "a-file";
  std::ofstream(file) << "x";
  EXPECT_NE(config_error_of(file.string()).find("not a directory"), std::string::npos);
  EXPECT_EQ(config_error_of(dir.path.string()), "");
}
