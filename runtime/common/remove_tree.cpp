#include "common/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

namespace ppu {

namespace {

// nftw's callback has no user pointer: the first failure goes here (one walk at a time per thread).
thread_local std::string failed_path;
thread_local int failed_errno = 0;

int remove_entry(const char* path, const struct stat* /*status*/, int /*type*/, struct FTW* /*where*/) {
  if (std::remove(path) == 0 || errno == ENOENT) return 0;
  failed_path = path;
  failed_errno = errno;
  return 1;  // stop the walk
}

}  // namespace

void remove_tree(const std::string& path, std::error_code& error) noexcept {
  error.clear();
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    if (errno != ENOENT) error.assign(errno, std::generic_category());
    return;
  }
  failed_path.clear();
  failed_errno = 0;
  // Children before their directory (FTW_DEPTH); symbolic links removed, never followed (FTW_PHYS).
  if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    error.assign(failed_errno != 0 ? failed_errno : errno, std::generic_category());
}

void remove_tree(const std::string& path) {
  std::error_code error;
  remove_tree(path, error);
  if (error) throw std::system_error(error, "cannot remove " + (failed_path.empty() ? path : failed_path));
}

}  // namespace ppu
