# syntax=docker/dockerfile:1.6
# PPU container image: ppu-train, ppu-launch, ppu-plan, ppu-data and ppu-operator, non-root.
#
#   docker build -t ppu:cpu .                                   # CPU: Debian's LibTorch 1.13
#   docker build -t ppu:cuda --build-arg VARIANT=cuda .         # CUDA: PyTorch 2.x LibTorch + NCCL
#
# The build stage runs the same scripts CI runs (scripts/install-deps.sh, scripts/build.sh) on
# the same OS (Debian bookworm), so an image build exercises exactly what CI tests.
# tests/packaging/dockerfile_test.sh checks that the scripts exist and that the binaries copied
# below are exactly the ones CMake installs.

ARG VARIANT=cpu
ARG DEBIAN=debian:bookworm
# CUDA variant: PyTorch wheel (ships LibTorch with CUDA + NCCL) and the matching CUDA toolkit
# from NVIDIA's Debian 12 repository (nvcc and headers are needed to compile against it).
ARG TORCH_VERSION=2.4.1
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu124
ARG CUDA_TOOLKIT=cuda-toolkit-12-4

# ---- build dependencies, CPU: Debian packages only -------------------------------------------
FROM ${DEBIAN} AS deps-cpu
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
# CMake reads CMAKE_PREFIX_PATH from the environment; empty = Debian's LibTorch.
ENV CMAKE_PREFIX_PATH=""

# ---- build dependencies, CUDA: the same, plus the CUDA toolkit and PyTorch's LibTorch -----------
FROM deps-cpu AS deps-cuda
ARG TORCH_VERSION
ARG TORCH_INDEX
ARG CUDA_TOOLKIT
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends wget gnupg python3 python3-venv \
 && wget -q https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb \
 && dpkg -i cuda-keyring_1.1-1_all.deb && rm cuda-keyring_1.1-1_all.deb \
 && apt-get update -qq && apt-get install -y -qq --no-install-recommends ${CUDA_TOOLKIT} \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/torch && /opt/torch/bin/pip install --no-cache-dir \
      --index-url ${TORCH_INDEX} torch==${TORCH_VERSION}
ENV PATH=/usr/local/cuda/bin:${PATH}
# Point CMake's find_package(Torch) at PyTorch's LibTorch instead of Debian's 1.13.
RUN /opt/torch/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)' >/opt/torch/prefix
ENV CMAKE_PREFIX_PATH=/opt/torch/lib/python3.11/site-packages/torch/share/cmake

# ---- build: CI's build script, then install into /opt/ppu --------------------------------------
FROM deps-${VARIANT} AS build
ARG VARIANT
WORKDIR /src
COPY . .
# The CUDA prefix must be the one torch reports (guards a Python/ABI layout change).
RUN if [ "$VARIANT" = cuda ]; then test "$(cat /opt/torch/prefix)" = "$CMAKE_PREFIX_PATH"; fi
# Pre-seed the cache so scripts/build.sh skips the test suites (it keeps cached options).
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPPU_BUILD_TESTS=OFF \
 && scripts/build.sh /build \
 && cmake --install /build --prefix /opt/ppu --strip
# The binaries the image ships; dockerfile_test.sh keeps this list equal to CMake's install set.
ENV PPU_BINARIES="ppu-train ppu-launch ppu-plan ppu-data ppu-operator"
# Record what the binaries need at run time: Debian packages owning their shared libraries
# (installed by name in the runtime stage), and libraries outside dpkg (PyTorch's LibTorch, CUDA,
# NCCL from the wheel) copied next to them.
RUN set -eu; mkdir -p /opt/ppu/lib; : >/opt/ppu/runtime-packages; \
    for b in $PPU_BINARIES; do test -x /opt/ppu/bin/$b; done; \
    for lib in $(for b in $PPU_BINARIES; do ldd /opt/ppu/bin/$b; done | awk '$3 ~ /^\// {print $3}' | sort -u); do \
      real="$(readlink -f "$lib")"; \
      pkg="$( (dpkg -S "$lib" || dpkg -S "/usr$lib" || dpkg -S "$real" || dpkg -S "/usr$real") 2>/dev/null | head -1 | cut -d: -f1)"; \
      if [ -n "$pkg" ]; then echo "$pkg" >>/opt/ppu/runtime-packages; else cp -L "$lib" /opt/ppu/lib/; fi; \
    done; \
    echo libopenblas0-openmp >>/opt/ppu/runtime-packages; \
    sort -u -o /opt/ppu/runtime-packages /opt/ppu/runtime-packages

# ---- runtime: shared libraries and the five binaries, nothing else ---------------------------
FROM ${DEBIAN} AS runtime
COPY --from=build /opt/ppu/runtime-packages /opt/ppu/runtime-packages
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates \
      $(cat /opt/ppu/runtime-packages) \
 && rm -rf /var/lib/apt/lists/*
# libopenblas0-openmp: LibTorch falls back to reference BLAS (~10x slower) without it.
RUN update-alternatives --set libblas.so.3-x86_64-linux-gnu \
      /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 || true
COPY --from=build /opt/ppu/lib/ /opt/ppu/lib/
COPY --from=build /opt/ppu/bin/ppu-train /opt/ppu/bin/ppu-launch /opt/ppu/bin/ppu-plan \
                  /opt/ppu/bin/ppu-data /opt/ppu/bin/ppu-operator /usr/local/bin/
COPY configs/ /etc/ppu/configs/
ENV LD_LIBRARY_PATH=/opt/ppu/lib
# 65532: the conventional "nonroot" uid; the chart's securityContext uses the same.
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT []
CMD ["ppu-train", "--help"]
