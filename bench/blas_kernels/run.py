#!/usr/bin/env python3
"""The OpenBLAS fallback and the runtime's answer to it, side by side in one run.

usage: bench/blas_kernels/run.py BUILD_DIR [--reps 2] [--steps 50] [--config configs/demo.yaml]

OpenBLAS 0.3.21 runs its SSE3 `Prescott` kernels on a CPU model its table does not know (an
Emerald Rapids Xeon, issue 41). On any machine this bench runs the demo (`ppu-launch --nproc 2`,
2 ranks, no evaluation) under four kernel settings, alternated `--reps` times:
  fallback        OPENBLAS_CORETYPE=Prescott: what such a CPU ran before the runtime chose
  runtime choice  PPU_BLAS_TEST_LOADED_CORE=Prescott: OpenBLAS's detection reads as Prescott and
                  ppu-train re-executes onto the widest core the CPU runs (blas_kernels.h)
  SkylakeX        OPENBLAS_CORETYPE=SkylakeX (the forced core the issue measured; AVX-512 CPUs only)
  detected        nothing set: OpenBLAS's own choice on this CPU
and prints, per setting, the core each rank's summary names, tokens/s per rank (tokens per step
over the median inner step, averaged over the ranks; the median over repetitions) and the ratio
to the fallback.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from ppu import summary


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())


def run(build, config, steps, env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "PPU_BLAS_TEST_LOADED_CORE")}
    env.update(env_extra)
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            os.path.join(build, "bin", "ppu-launch"),
            "--nproc",
            "2",
            "--config",
            config,
            "--set",
            "ranks=2",
            "--set",
            f"train.steps={steps}",
            "--set",
            "train.eval_every=0",
            "--summary-dir",
            out,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
        if proc.returncode != 0:
            sys.exit(f"blas_kernels: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        ranks = summary.load_dir(out)
    cores = sorted({(r.blas.core, r.blas.core_source) for r in ranks})
    # Tokens per step over the median inner step: robust to this VM's pauses and to start-up.
    return statistics.mean(r.tokens / r.steps / r.inner_step_seconds_median for r in ranks), cores


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "demo.yaml"))
    a = p.parse_args()
    settings = [
        ("fallback (Prescott)", {"OPENBLAS_CORETYPE": "Prescott"}),
        ("runtime choice", {"PPU_BLAS_TEST_LOADED_CORE": "Prescott"}),
    ]
    if "avx512f" in cpu_flags():
        settings.append(("SkylakeX (forced)", {"OPENBLAS_CORETYPE": "SkylakeX"}))
    settings.append(("detected", {}))
    rates = {name: [] for name, _ in settings}
    cores = {}
    for rep in range(a.reps):
        for name, env in settings if rep % 2 == 0 else reversed(settings):
            rate, cores[name] = run(os.path.abspath(a.build), a.config, a.steps, env)
            rates[name].append(rate)
            print(f"rep {rep + 1}/{a.reps} {name:<20} {rate:8.0f} tok/s per rank  {cores[name]}", file=sys.stderr)
    base = statistics.median(rates["fallback (Prescott)"])
    print(f"{'setting':<20} {'core (source)':<28} {'tok/s per rank (median)':>24} {'vs fallback':>12}")
    for name, _ in settings:
        med = statistics.median(rates[name])
        core = ", ".join(f"{c} ({s})" for c, s in cores[name])
        runs = " / ".join(f"{r:.0f}" for r in rates[name])
        print(f"{name:<20} {core:<28} {med:>10.0f} ({runs}) {med / base:>11.2f}x")


if __name__ == "__main__":
    main()
