# Compiles every source that includes LibTorch with OpenMP when LibTorch's ATen runs its
# intra-op parallelism on OpenMP (AT_PARALLEL_OPENMP in ATen/Config.h: Debian's LibTorch and
# PyTorch's wheels alike).
#
# ATen's OpenMP at::parallel_for is a header template: its `#pragma omp parallel` sits behind
# `#ifdef _OPENMP`, so in a source compiled without -fopenmp it silently runs the whole range on
# the calling thread. TorchConfig.cmake does not add the flag (PyTorch's own extension builder
# does). Without it our fused AdamW and the CPU attention ran on one core of two; mixing
# sources with and without the flag would also give the same inline function two definitions.
# Adds OpenMP to the imported `torch` target, so every target that links LibTorch gets it.
set(_ppu_aten_config "")
foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
  if(EXISTS "${dir}/ATen/Config.h")
    set(_ppu_aten_config "${dir}/ATen/Config.h")
    break()
  endif()
endforeach()
if(NOT _ppu_aten_config)
  message(FATAL_ERROR "ATen/Config.h not found in TORCH_INCLUDE_DIRS (${TORCH_INCLUDE_DIRS})")
endif()
file(STRINGS "${_ppu_aten_config}" _ppu_aten_openmp REGEX "^#define AT_PARALLEL_OPENMP 1")
if(_ppu_aten_openmp)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_LIBRARIES OpenMP::OpenMP_CXX)
  message(STATUS "PPU: ATen parallelises with OpenMP; LibTorch sources compile with ${OpenMP_CXX_FLAGS}")
else()
  message(STATUS "PPU: ATen does not parallelise with OpenMP (${_ppu_aten_config}); no -fopenmp")
endif()
