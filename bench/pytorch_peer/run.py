#!/usr/bin/env python3
"""ppu-train's inner step against a plain PyTorch implementation of the same step, side by side.

usage: bench/pytorch_peer/run.py BUILD_DIR [--reps 3] [--steps 10] [--threads 2] [--rows small,mlp-heavy]
                                 [--openblas-core auto|NAME] [--json OUT]

In one invocation, for each row (shape x slicing) and each repetition, interleaved:
  - ppu-train runs solo as rank 0 of K = 4 (method ppu; slicing none = full training), no
    evaluation during training, no outer sync inside the measured steps; its summary reports
    the median inner step (batch, forward, backward, clipping, AdamW);
  - reference_step.py (Debian's python3-torch, the same LibTorch 1.13, forced onto the same
    OpenMP OpenBLAS through LD_LIBRARY_PATH, same threads) runs the same step the same number
    of times and reports its median.
gemm_peak measures this machine's fp32 GEMM peak with the same BLAS and threads (every repetition), and
ppu-plan gives each configuration's exact matmul FLOPs per step, so each median becomes a
model-FLOPs utilisation (MFU). Prints a table: seconds per step, tokens/s ratio C++/Python, MFU.
All three run OpenBLAS with the same kernels: --openblas-core auto (the default) removes
OPENBLAS_CORETYPE from their environment, so the kernels for this CPU run (OpenBLAS's detection,
or where it fell back to narrower kernels than the CPU runs, the core ppu's binaries chose: the
first GEMM peak says which, and the reference is then given that core too); a NAME
(e.g. Haswell) sets it for all three. A machine's environment may set OPENBLAS_CORETYPE (this
project's dev machine sets Haswell, which halves the GEMM rate of its AVX-512 CPU); the bench
never inherits it silently, prints the core each process ran, and stops if they differ.
Needs Debian's python3-torch: `bash scripts/install-deps.sh --bench` installs it.
"""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))

from ppu import summary

OPENBLAS_OPENMP = "/usr/lib/x86_64-linux-gnu/openblas-openmp"

# name -> model keys; batch is inner.batch_size
SHAPES = {
    "small": {
        "model.preset": "small",
        "model.layers": 6,
        "model.d_model": 384,
        "model.heads": 8,
        "model.vocab": 4096,
        "model.seq_len": 256,
        "inner.batch_size": 8,
    },
    "mlp-heavy": {
        "model.preset": "",
        "model.layers": 4,
        "model.d_model": 768,
        "model.heads": 12,
        "model.vocab": 1024,
        "model.seq_len": 128,
        "inner.batch_size": 8,
    },
}
SLICINGS = {"full": ("none", 1), "1/4 MLPs + heads": ("mlp+heads", 4)}


# The environment of every process the bench starts: set by main() from --openblas-core.
BASE_ENV = dict(os.environ)


def run(cmd, env=None):
    r = subprocess.run(
        cmd, capture_output=True, text=True, env=env if env is not None else BASE_ENV, timeout=3600, check=False
    )
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


def sets(shape, mode, slices, steps, threads):
    kv = dict(SHAPES[shape])
    kv.update(
        {
            "method": "ppu",
            "ranks": 4,
            "slicing.mode": mode,
            "slicing.slices": slices,
            "train.steps": steps,
            "train.threads": threads,
            "train.eval_every": 0,
            "train.eval_batches": 1,
            "train.log_every": 1000,
            "outer.sync_every": steps,
            "inner.warmup_steps": 1,
        }
    )
    out = []
    for k, v in kv.items():
        if k == "model.preset" and v == "":
            continue
        out += ["--set", f"{k}={v}"]
    return out


def ours(build, shape, mode, slices, steps, threads):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "summary.json")
        env = {k: v for k, v in BASE_ENV.items() if k not in ("RANK", "WORLD_SIZE")}
        run(
            [
                os.path.join(build, "bin/ppu-train"),
                "--config",
                os.path.join(SRC, "configs/tiny.yaml"),
                *sets(shape, mode, slices, steps + 2, threads),
                "--summary",
                path,
            ],
            env=env,
        )
        s = summary.load(path)
        # the phases as a dict, {phase: median s}, like the reference's phases_median beside them
        return s.inner_step_seconds_median, (s.blas.library, s.blas.core), s.inner_step_phases_median.as_dict()


def reference(shape, mode, slices, steps, threads):
    m = SHAPES[shape]
    env = dict(BASE_ENV, LD_LIBRARY_PATH=OPENBLAS_OPENMP, OMP_NUM_THREADS=str(threads))
    out = run(
        [
            "/usr/bin/python3",
            os.path.join(HERE, "reference_step.py"),
            "--layers",
            str(m["model.layers"]),
            "--d-model",
            str(m["model.d_model"]),
            "--heads",
            str(m["model.heads"]),
            "--vocab",
            str(m["model.vocab"]),
            "--seq-len",
            str(m["model.seq_len"]),
            "--batch",
            str(m["inner.batch_size"]),
            "--slices",
            str(slices),
            "--mode",
            mode,
            "--steps",
            str(steps),
            "--warmup",
            "2",
            "--threads",
            str(threads),
        ],
        env=env,
    )
    r = json.loads(out.strip().splitlines()[-1])
    # contract: not a summary: the PyTorch reference's report
    return r["median_step_seconds"], (r["blas"], r["core"]), r["phases_median"]


def plan_flops(build, shape, mode, slices):
    out = run(
        [
            os.path.join(build, "bin/ppu-plan"),
            "--config",
            os.path.join(SRC, "configs/tiny.yaml"),
            *sets(shape, mode, slices, 10, 1),
            "--json",
        ]
    )
    f = json.loads(out)["flops_per_step"]
    return f["forward"] + f["backward"]


@dataclasses.dataclass
class Row:
    """One shape and slicing: an entry of --json's rows."""

    shape: str
    slicing: str  # the row's name in SLICINGS
    ours_s: float
    ref_s: float
    speedup: float
    paired_ratios: list[float]
    matmul_flops: float
    mfu_ours: float
    mfu_ref: float


@dataclasses.dataclass
class Report:
    """What --json writes. blas: {"ours" | "ref": (BLAS library, OpenBLAS core)}; openblas_core:
    the core each of the three processes ran."""

    peak_gflops: float
    peaks: list[dict]  # gemm_peak's outputs
    rows: list[Row]
    blas: dict
    openblas_core: dict


def print_phases(rows, phases):
    """Where each step's time goes, ours vs the reference: each phase's median over repetitions of
    its per-run median. Ours also times taking the batch (the reference draws it before its
    clock starts); `optimizer` is clipping + AdamW (+ zeroing the gradients)."""
    print("Per phase, seconds (median over repetitions); ours/ref > 1 means ours is slower there")
    # contract: not a summary: a column title
    print(f"{'shape':<10} {'slicing':<18} {'phase':<10} {'ours':>8} {'ref':>8} {'ours/ref':>8}")
    for shape, name in rows:
        mine, theirs = phases[((shape, name), "ours")], phases[((shape, name), "ref")]
        for ph in ("batch", "forward", "backward", "optimizer"):
            o = statistics.median(p.get(ph, 0) for p in mine)
            r = statistics.median(p[ph] for p in theirs) if ph in theirs[0] else None
            ratio = f"{o / r:8.3f}" if r else f"{'-':>8}"
            print(f"{shape:<10} {name:<18} {ph:<10} {o:8.4f} {r if r is not None else float('nan'):8.4f} {ratio}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rows", default="small,mlp-heavy")
    p.add_argument(
        "--openblas-core",
        default="auto",
        help="OpenBLAS kernels for ppu-train, the reference and the GEMM peak alike: auto (OpenBLAS's "
        "choice for this CPU; OPENBLAS_CORETYPE removed) or an OPENBLAS_CORETYPE name",
    )
    p.add_argument("--json", default="")
    a = p.parse_args()
    BASE_ENV.pop("OPENBLAS_CORETYPE", None)
    if a.openblas_core != "auto":
        BASE_ENV["OPENBLAS_CORETYPE"] = a.openblas_core
    build = os.path.abspath(a.build)
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True, check=False).returncode != 0:
        sys.exit("pytorch_peer: /usr/bin/python3 cannot import torch; run `bash scripts/install-deps.sh --bench`")
    rows = [(shape, name) for shape in a.rows.split(",") for name in SLICINGS]
    times = {(r, who): [] for r in rows for who in ("ours", "ref")}
    phases = {(r, who): [] for r in rows for who in ("ours", "ref")}  # per repetition: {phase: median s}
    blas, peaks = {}, []
    for rep in range(a.reps):
        # This VM's speed drifts by tens of percent over minutes (host contention), so the GEMM
        # peak is re-measured every repetition, each pair runs back to back, and the order within
        # a pair alternates between repetitions.
        peaks.append(
            json.loads(
                run(
                    [
                        os.path.join(build, "bench/gemm_peak"),
                        "--threads",
                        str(a.threads),
                        "--sizes",
                        "2048",
                        "--sizes",
                        "3072",
                        "--reps",
                        "3",
                    ]
                )
            )
        )
        # contract: not a summary: gemm_peak's report
        if a.openblas_core == "auto" and peaks[-1].get("core_source") == "runtime":
            # ppu's binaries re-executed onto wider kernels than OpenBLAS detected
            # (runtime/engine/cpu/blas_kernels.h); Python's torch would not: give it the same core.
            BASE_ENV["OPENBLAS_CORETYPE"] = peaks[-1]["core"]
        for shape, name in rows:
            mode, slices = SLICINGS[name]
            for who in ("ours", "ref") if rep % 2 == 0 else ("ref", "ours"):
                if who == "ours":
                    t, blas["ours"], ph = ours(build, shape, mode, slices, a.steps, a.threads)
                else:
                    t, blas["ref"], ph = reference(shape, mode, slices, a.steps, a.threads)
                times[((shape, name), who)].append(t)
                phases[((shape, name), who)].append(ph)
            print(
                f"rep {rep + 1}/{a.reps} {shape:>9} {name:<17} ours {times[((shape, name), 'ours')][-1]:.4f} s  "
                f"reference {times[((shape, name), 'ref')][-1]:.4f} s  (GEMM peak {peaks[-1]['gflops']:.0f})",
                file=sys.stderr,
                flush=True,
            )
    peak = max(p["gflops"] for p in peaks)
    cores = {"ppu-train": blas["ours"][1], "reference": blas["ref"][1], "gemm_peak": peaks[0].get("core", "")}
    if len(set(cores.values())) != 1:
        sys.exit(f"pytorch_peer: the processes ran different OpenBLAS kernels {cores}; the comparison is void")
    print(f"OpenBLAS core: {cores['ppu-train']} (--openblas-core {a.openblas_core}) in all three processes")
    print(
        f"BLAS: ppu-train {blas['ours'][0]}, reference {blas['ref'][0]}; {a.threads} threads; fp32 GEMM peak "
        f"{peak:.1f} GFLOP/s (best of {len(peaks)} measurements interleaved with the rows; "
        f"range {min(p['gflops'] for p in peaks):.0f}-{peak:.0f})"
    )
    print(
        "C++/Py = median over repetitions of the paired ratio ref/ours (range in brackets); "
        "MFU = matmul FLOPs per step (ppu-plan) / median step time / GEMM peak"
    )
    print(
        # contract: not a summary: a column title
        f"{'shape':<10} {'slicing':<18} {'ours s/step':>11} {'ref s/step':>10} {'C++/Py tok/s':>21} "
        f"{'MFU ours':>8} {'MFU ref':>8}"
    )
    results = []
    for shape, name in rows:
        mode, slices = SLICINGS[name]
        to, tr = times[((shape, name), "ours")], times[((shape, name), "ref")]
        o, r = statistics.median(to), statistics.median(tr)
        ratios = [y / x for x, y in zip(to, tr, strict=True)]
        ratio = statistics.median(ratios)
        flops = plan_flops(build, shape, mode, slices)
        mfu_o, mfu_r = flops / o / 1e9 / peak, flops / r / 1e9 / peak
        spread = f"{ratio:.3f} [{min(ratios):.2f}-{max(ratios):.2f}]"
        print(f"{shape:<10} {name:<18} {o:>11.4f} {r:>10.4f} {spread:>21} {100 * mfu_o:>7.1f}% {100 * mfu_r:>7.1f}%")
        results.append(
            Row(
                shape=shape,
                slicing=name,
                ours_s=o,
                ref_s=r,
                speedup=ratio,
                paired_ratios=ratios,
                matmul_flops=flops,
                mfu_ours=mfu_o,
                mfu_ref=mfu_r,
            )
        )
    print_phases(rows, phases)
    if a.json:
        report = Report(peak_gflops=peak, peaks=peaks, rows=results, blas=blas, openblas_core=cores)
        with open(a.json, "w") as f:
            json.dump(dataclasses.asdict(report), f, indent=2)


if __name__ == "__main__":
    main()
