#include "export/export_dir.h"

#include <unistd.h>

#include <fcntl.h>

#include <filesystem>
#include <fstream>

#include "common/remove_tree.h"

namespace ppu {

namespace fs = std::filesystem;

namespace {

// Why `out` may not be replaced, or "" when it may.
std::string refusal(const fs::path& out, const nlohmann::json& identity) {
  if (!fs::exists(out)) return "";
  if (!fs::is_directory(out)) return "exists and is not a directory";
  if (fs::is_empty(out)) return "";
  std::ifstream in(out / kProvenanceFile);
  if (!in) return std::string("holds files but no ") + kProvenanceFile + " (not a ppu-export directory)";
  const auto provenance = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!provenance.is_object() || !provenance.contains("identity"))
    return std::string("has an unreadable ") + kProvenanceFile;
  if (provenance["identity"] != identity)
    return "holds a different model (" + provenance["identity"].dump() + ", this export is " + identity.dump() + ")";
  return "";
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

ExportDir::ExportDir(std::string out, const nlohmann::json& identity, bool overwrite) : out_(std::move(out)) {
  while (out_.size() > 1 && out_.back() == '/') out_.pop_back();
  if (const auto why = refusal(out_, identity); !why.empty() && !overwrite)
    throw ExportRefused("--out " + out_ + " " + why + "; pass --overwrite to replace it");
  staging_ = out_ + ".partial-" + std::to_string(::getpid());
  remove_tree(staging_);
  fs::create_directories(staging_);
}

ExportDir::~ExportDir() {
  if (committed_) return;
  std::error_code ignored;
  remove_tree(staging_, ignored);
}

void ExportDir::commit() {
  const fs::path out(out_), aside(out_ + ".replaced-" + std::to_string(::getpid()));
  for (const auto& entry : fs::directory_iterator(staging_)) {
    const int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  sync_directory(staging_);
  const bool replacing = fs::exists(out);
  if (replacing) fs::rename(out, aside);
  fs::rename(staging_, out);
  committed_ = true;
  sync_directory(out.has_parent_path() ? out.parent_path() : fs::path("."));
  if (replacing) remove_tree(aside.string());
}

}  // namespace ppu
