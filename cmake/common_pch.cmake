# ppu_precompile_common(TARGET [TESTS]): TARGET's sources compile against a precompiled header of
# the heavy headers nearly all of them include: nlohmann/json (every Kubernetes object the
# operator handles, the run summary, the contract) and the standard containers; with TESTS also
# GoogleTest. Parsing those is a third of an operator source's compile time in the sanitizer
# lanes (which build them from nothing in every CI run; docs/TESTING.md, "Build time"). Off with
# PPU_PCH=OFF. clang-tidy never sees the precompiled header (scripts/check-tidy.sh strips it), so
# a source that forgets an include still fails the lint.
option(PPU_PCH "Precompile the headers most sources parse (LibTorch's, nlohmann/json's, GoogleTest's)" ON)

function(ppu_precompile_common target)
  if(NOT PPU_PCH)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 _pch "TESTS" "" "")
  set(headers <nlohmann/json.hpp> <functional> <map> <memory> <optional> <string> <vector>)
  if(_pch_TESTS)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
