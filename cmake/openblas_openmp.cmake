# Makes every LibTorch binary of this build load the OpenMP build of OpenBLAS, whatever the
# machine's `libblas.so.3` alternative points to.
#
# Debian's LibTorch links libblas.so.3 / liblapack.so.3, which update-alternatives resolves;
# libopenblas-dev pulls in the pthread variant, whose alternative wins by priority. Its own
# thread pool then runs beside LibTorch's OpenMP pool, and the full training step measured
# 1.5x slower on 2 cores (docs/BENCHMARKS.md). An old-style DT_RPATH on the executables (not
# DT_RUNPATH, which the loader ignores for libtorch's own dependencies) puts the OpenMP
# variant's directory first for every library the process loads. runtime/engine/cpu/compute_threads
# reports what was actually loaded, and a test checks it.
#
# Defines the interface target ppu_blas_openmp (link it into every LibTorch executable).
# PPU_OPENBLAS_OPENMP_DIR: the directory of the OpenMP variant; empty = not needed (a LibTorch
# that does not link the system libblas, e.g. PyTorch's wheel, which ships its own BLAS).
add_library(ppu_blas_openmp INTERFACE)

set(_ppu_torch_links_system_blas OFF)
find_library(_ppu_torch_cpu torch_cpu PATHS ${TORCH_INSTALL_PREFIX}/lib NO_DEFAULT_PATH)
if(NOT _ppu_torch_cpu)
  find_library(_ppu_torch_cpu torch_cpu)
endif()
if(_ppu_torch_cpu)
  execute_process(COMMAND readelf -d "${_ppu_torch_cpu}" OUTPUT_VARIABLE _ppu_torch_dyn ERROR_QUIET)
  if(_ppu_torch_dyn MATCHES "\\[libblas\\.so\\.3\\]")
    set(_ppu_torch_links_system_blas ON)
  endif()
endif()

set(_ppu_openblas_default "")
if(_ppu_torch_links_system_blas)
  set(_ppu_openblas_default "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp")
endif()
set(PPU_OPENBLAS_OPENMP_DIR "${_ppu_openblas_default}" CACHE PATH
    "Directory of the OpenMP OpenBLAS (libblas.so.3, liblapack.so.3) every LibTorch binary loads first")

if(PPU_OPENBLAS_OPENMP_DIR)
  if(NOT EXISTS "${PPU_OPENBLAS_OPENMP_DIR}/libblas.so.3")
    message(FATAL_ERROR "PPU_OPENBLAS_OPENMP_DIR: no libblas.so.3 in '${PPU_OPENBLAS_OPENMP_DIR}'. "
                        "Install Debian's libopenblas0-openmp (scripts/install-deps.sh does), or set "
                        "-DPPU_OPENBLAS_OPENMP_DIR to the OpenMP OpenBLAS directory.")
  endif()
  target_link_options(ppu_blas_openmp INTERFACE "LINKER:--disable-new-dtags" "LINKER:-rpath,${PPU_OPENBLAS_OPENMP_DIR}")
  # The CPU attention (runtime/engine/model/cpu_attention.h) calls this BLAS's CBLAS interface itself.
  find_path(PPU_CBLAS_INCLUDE_DIR cblas.h)
  if(NOT PPU_CBLAS_INCLUDE_DIR)
    message(FATAL_ERROR "cblas.h not found: install Debian's libopenblas-dev (scripts/install-deps.sh does)")
  endif()
  target_include_directories(ppu_blas_openmp INTERFACE "${PPU_CBLAS_INCLUDE_DIR}")
  target_link_libraries(ppu_blas_openmp INTERFACE "${PPU_OPENBLAS_OPENMP_DIR}/libblas.so.3")
  target_compile_definitions(ppu_blas_openmp INTERFACE PPU_HAVE_CBLAS=1)
  message(STATUS "PPU: LibTorch binaries load BLAS from ${PPU_OPENBLAS_OPENMP_DIR}")
endif()
