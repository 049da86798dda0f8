# ppu_precompile_torch(TARGET [SKIP source...]): TARGET's sources compile against a precompiled
# <torch/torch.h> (PPU_PCH, on by default): a target with many LibTorch sources parses LibTorch's
# headers once instead of once per source (ppu_runtime from scratch: -19 %, docs/TESTING.md,
# "Build time"). The sources after SKIP parse them themselves: those compiled with options that
# change the headers' meaning (GCC refuses a precompiled header built under other options, and
# PPU_WERROR makes that an error), and those given another fmt than LibTorch's (PPU_FMT_OVERRIDE:
# a precompiled LibTorch would bring its fmt in first). clang-tidy never sees the precompiled
# header (scripts/check-tidy.sh strips it: clang cannot read GCC's).
# PPU_PCH: cmake/common_pch.cmake.

function(ppu_precompile_torch target)
  if(NOT PPU_PCH)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 _pch "" "" "SKIP")
  target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  if(_pch_SKIP)
    set_source_files_properties(${_pch_SKIP} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
endfunction()
