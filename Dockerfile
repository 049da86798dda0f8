# PPU container image: ppu-train, ppu-launch, ppu-rendezvous, ppu-plan, ppu-data, ppu-export and ppu-operator, non-root.
#
# Without a registry (Debian's podman/buildah 1.28; the base image comes from debootstrap):
#   scripts/build-image.sh                       # = base image + podman build, prints time and size
# With Docker BuildKit, also without a registry (a private dockerd, the same debootstrap base):
#   scripts/build-image-buildkit.sh              # = DOCKER_BUILDKIT=1 docker build, checks, cleanup
# or with any BuildKit where a registry is at hand (the FROM line's default pulls debian:bookworm):
#   docker build -t ppu:cpu .                                   # CPU: Debian's LibTorch 1.13
#   docker build -t ppu:cuda --build-arg VARIANT=cuda .         # CUDA: PyTorch 2.x LibTorch + NCCL
# No `# syntax=` line: BuildKit would fetch that frontend image from a registry; the built-in
# Dockerfile frontend reads this file.
#
# Two stages, both FROM the base image: no FROM names a stage through an ARG (buildah 1.28
# cannot resolve `FROM deps-${VARIANT}`: "image not known"); VARIANT is a plain build arg read
# by RUN steps instead. The build stage runs the scripts CI runs (scripts/install-deps.sh,
# scripts/build.sh) on the same OS (Debian bookworm), so an image build exercises exactly what
# CI tests. The runtime stage is the base image plus the binaries and the shared libraries they
# load (their ldd closure, copied to the same paths), not the Debian packages that own them
# (whose dependencies made the image ~1.4 GB). tests/packaging/dockerfile_test.sh checks the
# structure; tests/cluster/image_test.sh builds it and runs the binaries inside.

ARG DEBIAN=debian:bookworm

# ---- build: dependencies, CI's build script, install into /opt/ppu, collect the runtime tree ----
FROM ${DEBIAN} AS build
ARG VARIANT=cpu
# CUDA variant: PyTorch wheel (ships LibTorch with CUDA + NCCL) and the matching CUDA toolkit
# from NVIDIA's Debian 12 repository (nvcc and headers are needed to compile against it). The
# wheel's lib directory goes into ld.so.conf.d: the installed binaries carry no RPATH to it, and
# the runtime stage copies that file, so ldd (here) and the loader (there) find LibTorch; the
# wheel's own $ORIGIN RPATHs find the nvidia-* libraries at the same relative paths.
ARG TORCH_VERSION=2.4.1
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu124
ARG CUDA_TOOLKIT=cuda-toolkit-12-4
WORKDIR /src
RUN case "$VARIANT" in cpu|cuda) ;; *) echo "VARIANT must be cpu or cuda, got '$VARIANT'" >&2; exit 1 ;; esac
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
RUN if [ "$VARIANT" = cuda ]; then set -e; \
      apt-get update -qq; \
      apt-get install -y -qq --no-install-recommends wget gnupg python3 python3-venv; \
      wget -q https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb; \
      dpkg -i cuda-keyring_1.1-1_all.deb; rm cuda-keyring_1.1-1_all.deb; \
      apt-get update -qq; apt-get install -y -qq --no-install-recommends ${CUDA_TOOLKIT}; \
      rm -rf /var/lib/apt/lists/*; \
      python3 -m venv /opt/torch; \
      /opt/torch/bin/pip install --no-cache-dir --index-url ${TORCH_INDEX} torch==${TORCH_VERSION}; \
      /opt/torch/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)' >/opt/torch/prefix; \
      /opt/torch/bin/python -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")' \
        >/etc/ld.so.conf.d/ppu-torch.conf; \
      ldconfig; \
    fi
COPY . .
# CPU: Debian's LibTorch (empty prefix). CUDA: find_package(Torch) at PyTorch's LibTorch, the
# prefix torch itself reports, and nvcc on PATH. The cache is pre-seeded so scripts/build.sh
# skips the test suites (it keeps cached options).
RUN set -e; prefix=""; \
    if [ "$VARIANT" = cuda ]; then prefix="$(cat /opt/torch/prefix)"; export PATH=/usr/local/cuda/bin:$PATH; fi; \
    cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPPU_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$prefix"; \
    scripts/build.sh /build; \
    cmake --install /build --prefix /opt/ppu --strip
# The binaries the image ships; dockerfile_test.sh keeps this list equal to CMake's install set.
ENV PPU_BINARIES="ppu-train ppu-launch ppu-rendezvous ppu-plan ppu-data ppu-export ppu-operator"
# The runtime tree /opt/rootfs: the binaries in /usr/local/bin, configs in /etc/ppu/configs, and
# every shared library the binaries' ldd resolves, at the path ldd resolved it to (so DT_RPATH,
# e.g. the OpenMP OpenBLAS one, finds the same file) with symlinked directories resolved (/lib is
# a symlink to usr/lib in bookworm: copying into a real /lib would replace it), except glibc's,
# which the base image has at the same version (both stages start from the same base). libcuda
# comes from the host's NVIDIA runtime, never from the image.
RUN set -eu; root=/opt/rootfs; mkdir -p $root/usr/local/bin $root/etc/ppu $root/etc/ld.so.conf.d; \
    update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 || true; \
    for b in $PPU_BINARIES; do test -x /opt/ppu/bin/$b; cp /opt/ppu/bin/$b $root/usr/local/bin/; done; \
    cp -r configs $root/etc/ppu/configs; \
    cp -r /etc/ld.so.conf.d/. $root/etc/ld.so.conf.d/; \
    for b in $PPU_BINARIES; do ldd /opt/ppu/bin/$b; done | awk '$3 ~ /^\// {print $3}' | sort -u >/opt/libs; \
    dpkg -L libc6 | sed 's|.*/||' | sort -u >/opt/libc6-files; \
    while read -r lib; do \
      name="${lib##*/}"; grep -qxF "$name" /opt/libc6-files && continue; \
      dir="$(readlink -f "${lib%/*}")"; mkdir -p "$root$dir"; cp -L "$lib" "$root$dir/$name"; \
    done </opt/libs; \
    echo "runtime tree: $(wc -l </opt/libs) libraries resolved, $(du -sh $root | cut -f1) copied"

# ---- runtime: the base image, the six binaries and the libraries they load, nothing else -------
FROM ${DEBIAN} AS runtime
COPY --from=build /opt/rootfs/ /
# Index the copied libraries, then prove every binary resolves all of them (libcuda excepted).
RUN ldconfig && for b in ppu-train ppu-launch ppu-rendezvous ppu-plan ppu-data ppu-export ppu-operator; do \
      if ldd /usr/local/bin/$b | grep -v 'libcuda\.so' | grep 'not found'; then echo "$b: missing libraries" >&2; exit 1; fi; \
    done
# 65532: the conventional "nonroot" uid; the chart's securityContext uses the same.
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT []
CMD ["ppu-train", "--help"]
