#!/usr/bin/env bash
# The Dockerfile cannot be built here (no Docker engine), so check it is correct by construction:
# - every scripts/* it runs exists and is executable, and it runs CI's install-deps.sh + build.sh;
# - the binaries it ships (PPU_BINARIES and the runtime COPY) are exactly those CMake installs:
#   the install(TARGETS ...) rules in the sources and, given a build dir, its cmake_install files;
# - the build stage is Debian bookworm like CI, the image ends as a non-root numeric USER;
# - every FROM names the base image or an earlier stage literally: Debian's buildah 1.28 cannot
#   resolve a stage name built from an ARG (`FROM deps-${VARIANT}`: "image not known"), so the
#   variant is chosen by RUN steps reading the VARIANT build arg (valid for BuildKit as well);
# - .dockerignore keeps host build trees out of the context.
# tests/cluster/image_test.sh really builds the image (podman, no registry) and runs it.
# Usage: dockerfile_test.sh [BUILD_DIR]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DF="$ROOT/Dockerfile"
BUILD="${1:-}"

while read -r s; do
  [[ -x "$ROOT/$s" ]] || fail "Dockerfile runs $s, which does not exist or is not executable"
  pass "Dockerfile's $s exists"
done < <(grep -oE 'scripts/[A-Za-z0-9_./-]+\.sh' "$DF" | sort -u)
expect_grep '^RUN scripts/install-deps.sh' "$DF" "build deps come from CI's scripts/install-deps.sh"
if grep -qiE '^# *syntax *=' "$DF"; then
  fail "Dockerfile has a '# syntax=' directive: BuildKit would pull that frontend image from a registry"
fi
pass "no '# syntax=' directive: BuildKit's built-in frontend builds it without a registry"
expect_grep 'scripts/build.sh /build' "$DF" "the build is CI's scripts/build.sh"
expect_grep '^ARG DEBIAN=debian:bookworm$' "$DF" "build and runtime on Debian bookworm, as CI"
expect_grep '^ARG VARIANT=cpu$' "$DF" "CPU variant by default"
expect_grep 'if \[ "[$]VARIANT" = cuda \]' "$DF" "RUN steps read VARIANT to pick the CUDA toolchain"
stages=()
while read -r from image as name; do
  [[ "$from" == FROM ]] || continue
  if [[ "$image" != "\${DEBIAN}" ]]; then
    known=0
    for st in "${stages[@]}"; do [[ "$image" == "$st" ]] && known=1; done
    [[ $known == 1 ]] || fail "FROM $image is neither \${DEBIAN} nor an earlier stage (buildah 1.28 cannot resolve ARG-built stage names)"
  fi
  [[ "$as" == AS && -n "$name" ]] || fail "FROM $image has no 'AS name'"
  stages+=("$name")
done < <(grep -E '^FROM ' "$DF")
[[ "${stages[*]}" == "build runtime" ]] || fail "stages are '${stages[*]}', expected 'build runtime'"
pass "stages build, runtime: each FROM is the base image (no ARG-expanded stage name)"
expect_grep '^COPY --from=build /opt/rootfs/ /$' "$DF" "runtime stage copies only the collected runtime tree"
expect_grep "torch.utils.cmake_prefix_path" "$DF" "CUDA variant uses PyTorch's LibTorch prefix"
last_user="$(grep -E '^USER ' "$DF" | tail -1 | awk '{print $2}')"
[[ "$last_user" =~ ^[1-9][0-9]*(:[1-9][0-9]*)?$ ]] || fail "final USER '$last_user' is not a numeric non-root uid"
pass "image runs as USER $last_user"

declared="$(sed -n 's/^ENV PPU_BINARIES="\(.*\)"$/\1/p' "$DF" | tr ' ' '\n' | sort)"
[[ -n "$declared" ]] || fail "no PPU_BINARIES in the Dockerfile"
checked="$(sed -n '/^FROM \${DEBIAN} AS runtime/,$p' "$DF" | grep -oE 'for b in [a-z -]+; do' | head -1 \
  | sed 's/^for b in //; s/; do$//' | tr ' ' '\n' | sort)"
[[ "$declared" == "$checked" ]] || fail "PPU_BINARIES (${declared//$'\n'/ }) differs from the runtime stage's ldd check (${checked//$'\n'/ })"
pass "runtime stage checks the libraries of PPU_BINARIES: ${declared//$'\n'/ }"
installed="$(grep -rhoE --include=CMakeLists.txt 'install\(TARGETS [A-Za-z0-9_-]+ RUNTIME' \
  "$ROOT/runtime" "$ROOT/operator" | awk '{print $2}' | sort -u)"
[[ "$declared" == "$installed" ]] || fail "Dockerfile ships (${declared//$'\n'/ }) but CMake installs (${installed//$'\n'/ })"
pass "CMake install(TARGETS) rules match the Dockerfile"
if [[ -n "$BUILD" ]]; then
  # The generated install scripts list what `cmake --install` really puts into bin/.
  generated="$(grep -rhoE --include=cmake_install.cmake '/bin" TYPE EXECUTABLE FILES "[^"]+"' "$BUILD" \
    | sed 's|.*/||; s|"$||' | sort -u)"
  [[ -n "$generated" ]] || fail "no executables in $BUILD's cmake_install.cmake files"
  for b in $generated; do grep -qx "$b" <<<"$declared" || fail "$BUILD installs $b, which the Dockerfile does not ship"; done
  pass "build tree $BUILD installs only shipped binaries (${generated//$'\n'/ })"
fi
expect_grep '^build$' "$ROOT/.dockerignore" ".dockerignore excludes build/"
expect_grep '^build-\*$' "$ROOT/.dockerignore" ".dockerignore excludes build-*/"
echo "dockerfile_test: all checks passed"
