// remove_tree: delete a file or a directory and everything under it (std::filesystem::remove_all's
// contract: a missing path is not an error), with POSIX nftw(3) instead of libstdc++.
//
// Why not remove_all: PyTorch 2.x wheels' libtorch_cpu.so exports its own copy of libstdc++'s
// std::filesystem internals, and wherever it precedes libstdc++.so.6 in the loader's search order
// (Ubuntu's GCC puts it there whatever our link line says), libstdc++'s remove_all calls
// libtorch's recursive_directory_iterator, which jumps to address 0: every resumed run crashed at
// its first checkpoint pruning on the GPU machines (docs/GPU.md). The rest of std::filesystem we
// use (status, create_directories, rename, directory_iterator) does not go through that copy.
#pragma once

#include <string>
#include <system_error>

namespace ppu {

// Throws std::system_error naming the path that could not be removed.
void remove_tree(const std::string& path);
// The same, reporting the first failure in `error` instead of throwing (for destructors).
void remove_tree(const std::string& path, std::error_code& error) noexcept;

}  // namespace ppu
