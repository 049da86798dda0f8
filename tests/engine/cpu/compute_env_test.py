#!/usr/bin/env python3
"""ppu-train runs on a BLAS that shares LibTorch's thread pool, sized by train.threads.

usage: compute_env_test.py BIN_DIR SOURCE_DIR

Runs a few steps of configs/tiny.yaml with train.threads = 1 and 2 and reads the summary's
"blas" block (what the process actually mapped, from dl_iterate_phdr, and what OpenBLAS reports):
with Debian's LibTorch 1.13 (BLAS_INFO "generic", it calls libblas.so.3) the library must be the
openblas-openmp build whatever alternative the machine selects, and both pools must have the
configured size. With a PyTorch 2.x wheel's LibTorch (BLAS_INFO "mkl", linked statically, sized
by LibTorch's own pool) no OpenBLAS other than the OpenMP one may be mapped and the intra-op pool
must have the configured size. It prints the machine's libblas.so.3 alternative, so a pass on a
machine whose alternative is the pthread variant shows the binary does not depend on it.

On OpenBLAS it also checks the kernels (engine/cpu/blas_kernels.h): with OPENBLAS_CORETYPE unset
the core that runs has kernels at least as wide as this CPU's widest vectors (AVX-512, or AVX2 +
FMA), read from /proc/cpuinfo, whoever chose it, so CI on any machine catches a regression. The
fallback path is driven for real through the test hook PPU_BLAS_TEST_LOADED_CORE=Prescott (as if
OpenBLAS had not known this CPU): ppu-train and the GEMM bench re-execute onto the widest core,
the summary says "runtime" and what was detected, and the log says why. With
OPENBLAS_CORETYPE=Haswell the summary names Haswell as forced, and on a CPU with AVX-512 the log
warns that the environment holds OpenBLAS to AVX2 kernels. (On a CPU without AVX2/FMA, which
those kernels need, the forced and fallback runs are skipped, saying so.) Nothing here depends
on the machine's core count: OMP_NUM_THREADS is set to 7 and train.threads overrides it.

And the oneDNN switch (engine/cpu/onednn_switch.h): the summary's "onednn" block says whether oneDNN
is on and where bf16 matmuls go; PPU_ONEDNN=off turns it off (bf16 matmuls on ATen's own kernels,
whatever the CPU); any other value stops ppu-train with the configuration exit code, naming it.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from ppu import summary
from ppu.exit_codes import ExitCode

BIN, SRC = sys.argv[1], sys.argv[2]
TRAIN = os.path.join(BIN, "bin", "ppu-train")
TINY = os.path.join(SRC, "configs", "tiny.yaml")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def train(threads, coretype, onednn=None, test_loaded_core=None):
    """ppu-train's summary and its log, OPENBLAS_CORETYPE set to `coretype` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "PPU_ONEDNN")}
    env["OMP_NUM_THREADS"] = "7"
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    if test_loaded_core:
        env["PPU_BLAS_TEST_LOADED_CORE"] = test_loaded_core
    if onednn is not None:
        env["PPU_ONEDNN"] = onednn
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "summary.json")
        proc = subprocess.run(
            [
                TRAIN,
                "--config",
                TINY,
                "--set",
                "train.steps=2",
                "--set",
                "train.eval_every=0",
                "--set",
                f"train.threads={threads}",
                "--summary",
                out,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )
        if proc.returncode != 0:
            fail(f"ppu-train exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        return summary.load(out), proc.stdout + proc.stderr


alternative = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
print("machine's libblas.so.3 alternative:", alternative)
for threads in (1, 2):
    blas = train(threads, None)[0].blas
    print(f"train.threads={threads}: {blas.as_dict()}")
    if blas.intra_op_threads != threads:
        fail(f"LibTorch's intra-op pool has {blas.intra_op_threads} threads, want {threads}")
    if blas.torch_blas == "mkl":  # a 2.x wheel: MKL inside libtorch_cpu, no BLAS to map
        if blas.library and blas.variant != "openmp":
            fail(f"LibTorch {blas.libtorch} uses MKL, but ppu-train also mapped {blas.library!r}")
        continue
    if blas.torch_blas not in ("generic", "open"):
        fail(f"LibTorch {blas.libtorch} was built with BLAS {blas.torch_blas!r}, which this test does not know")
    if "openblas-openmp" not in blas.library or blas.variant != "openmp":
        fail(f"ppu-train loaded {blas.library!r}, not the OpenMP OpenBLAS")
    if blas.threads != threads:
        fail(f"OpenBLAS's pool has {blas.threads} threads, want {threads}")
    if not blas.core or blas.core_env or blas.core_source not in ("detected", "runtime"):
        fail(
            f"with OPENBLAS_CORETYPE unset the summary should name the core that runs, not a forced one: "
            f"{blas.as_dict()}"
        )


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())


# OpenBLAS's x86-64 cores by the vectors their kernels use (0.3.21 names and SapphireRapids).
AVX512_CORES = {"SkylakeX", "Cooperlake", "SapphireRapids"}
AVX2_CORES = {"Haswell", "Zen"}
flags = cpu_flags()
if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"} <= flags:
    widest, wide_enough = "avx512", AVX512_CORES
elif {"avx2", "fma"} <= flags:
    widest, wide_enough = "avx2", AVX512_CORES | AVX2_CORES
else:
    widest, wide_enough = "older", None
print(f"CPU: widest vectors with OpenBLAS kernels {widest}")
if blas.torch_blas != "mkl" and blas.variant == "openmp":
    if blas.cpu_vectors != widest:
        fail(f"the summary says the CPU's widest vectors are {blas.cpu_vectors}, /proc/cpuinfo says {widest}")
    if wide_enough is not None and blas.core not in wide_enough:
        fail(f"ppu-train ran OpenBLAS's {blas.core} kernels on a CPU with {widest}: {blas.as_dict()}")
    print(f"OPENBLAS_CORETYPE unset: core {blas.core} ({blas.core_source}), at least as wide as {widest}")


# OPENBLAS_CORETYPE=Haswell forces AVX2/FMA kernels without checking the CPU: on one without them
# ppu-train would die of SIGILL, which says nothing about the report under test, so the forced-core
# check runs where the CPU can run those kernels (every x86-64 CPU since 2013-2015) and says so
# where it cannot.
haswell_runs = {"avx2", "fma"} <= flags
if not haswell_runs:
    print("forced-core and fallback checks skipped: this CPU lacks AVX2/FMA, which Haswell's kernels need")
if blas.torch_blas != "mkl" and blas.variant == "openmp" and haswell_runs:
    ran, log = train(1, "Haswell")
    forced = ran.blas
    print("OPENBLAS_CORETYPE=Haswell:", forced.as_dict())
    if forced.core != "Haswell" or forced.core_env != "Haswell" or forced.core_source != "environment":
        fail(f"OPENBLAS_CORETYPE=Haswell: the summary should name Haswell as forced: {forced.as_dict()}")
    warned = "OPENBLAS_CORETYPE=Haswell in the environment" in log
    if warned != (widest == "avx512"):
        fail(f"CPU's widest vectors {widest}, but the log {'has' if warned else 'lacks'} the forced-core warning")

    # OpenBLAS's detection fell back (as 0.3.21 does on CPU models it does not know): the runtime
    # re-executes onto the widest core. Driven by the test hook standing in for the detection.
    want = ("Cooperlake" if "avx512_bf16" in flags else "SkylakeX") if widest == "avx512" else "Haswell"
    ran, log = train(1, None, test_loaded_core="Prescott")
    chosen = ran.blas
    print("detection fell back to Prescott:", chosen.as_dict())
    if (chosen.core, chosen.core_source, chosen.core_detected, chosen.core_env) != (want, "runtime", "Prescott", ""):
        fail(f"after a Prescott detection ppu-train should run {want}, chosen by the runtime: {chosen.as_dict()}")
    if f"core {want} (chosen by ppu: OpenBLAS detected Prescott on a CPU with {widest})" not in log:
        fail(f"the log should say the runtime chose {want} over Prescott:\n{log[-1500:]}")
    env = dict(os.environ, PPU_BLAS_TEST_LOADED_CORE="Prescott")
    env.pop("OPENBLAS_CORETYPE", None)
    peak = subprocess.run(
        [os.path.join(BIN, "bench", "gemm_peak"), "--threads", "1", "--sizes", "64", "--reps", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    if peak.returncode != 0:
        fail(f"gemm_peak exited {peak.returncode}: {peak.stderr[-500:]}")
    peak_blas = json.loads(peak.stdout)
    # contract: not a summary: gemm_peak's report
    if (peak_blas["core"], peak_blas["core_source"]) != (want, "runtime"):
        fail(f"gemm_peak after a Prescott detection should run {want} chosen by the runtime: {peak_blas}")
    # contract: not a summary: gemm_peak's report
    print("gemm_peak after a Prescott detection:", peak_blas["core"], peak_blas["core_source"])
ran, log = train(1, None)
default = ran.onednn
print("oneDNN by default:", default.as_dict())
if default.bf16_matmul and not default.enabled:
    fail(f"bf16 matmuls on oneDNN with oneDNN off: {default.as_dict()}")
ran, log = train(1, None, onednn="off")
off = ran.onednn
print("PPU_ONEDNN=off:", off.as_dict())
# Both fields there (the summary was checked against the contract), both false.
if off.enabled or off.bf16_matmul or "bf16 matmuls on ATen's own kernels" not in log:
    fail(f"PPU_ONEDNN=off: the summary should say oneDNN is off and bf16 matmuls on ATen's kernels: {off.as_dict()}")
with tempfile.TemporaryDirectory() as work:
    env = dict(os.environ, PPU_ONEDNN="sometimes")
    proc = subprocess.run(
        [TRAIN, "--config", TINY, "--set", "train.steps=2"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=work,
        check=False,
    )
    said = proc.stdout + proc.stderr
    if proc.returncode != ExitCode.CONFIG_ERROR or "PPU_ONEDNN is 'sometimes'" not in said:
        fail(
            f"PPU_ONEDNN=sometimes: want exit {ExitCode.CONFIG_ERROR} naming PPU_ONEDNN, got {proc.returncode}: "
            f"{said[-500:]}"
        )
print("PASS compute-env")
