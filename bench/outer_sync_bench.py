#!/usr/bin/env python3
"""outer_sync_bench: the outer-sync options measured side by side in one run.

Runs the same ppu-launch job (default configs/tiny.yaml, 4 ranks) with fp32, bf16 and int8
delta exchange over the ring and the direct schedule, int8 with and without error feedback,
and with overlap tau = 0 and tau > 0 (Streaming DiLoCo's merge, alpha = outer.overlap_alpha),
and prints per variant: bytes sent and received per rank, seconds the inner loop waited on the
network, wall time, final eval loss, each relative to the fp32 / tau = 0 baseline.

usage: bench/outer_sync_bench.py BUILD_DIR [--config FILE] [--nproc K] [--steps N] [--tau T]
"""

import argparse
import os
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "python"))

from ppu import summary

p = argparse.ArgumentParser()
p.add_argument("build")
p.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "..", "configs", "tiny.yaml"))
p.add_argument("--nproc", type=int, default=4)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--tau", type=int, default=3)
args = p.parse_args()
launch = os.path.join(args.build, "bin", "ppu-launch")

I8 = ["outer.delta_dtype=int8"]
variants = [
    ("fp32 ring", []),
    ("bf16 ring", ["outer.delta_dtype=bf16"]),
    ("int8 ring", I8),
    ("int8 ring +EF", I8 + ["outer.error_feedback=true"]),
    ("fp32 direct", ["network.collective=direct"]),
    ("bf16 direct", ["outer.delta_dtype=bf16", "network.collective=direct"]),
    ("int8 direct", I8 + ["network.collective=direct"]),
    ("int8 direct +EF", I8 + ["network.collective=direct", "outer.error_feedback=true"]),
    (f"fp32 tau={args.tau}", [f"outer.overlap_steps={args.tau}"]),
    (f"int8 tau={args.tau} +EF", I8 + ["outer.error_feedback=true", f"outer.overlap_steps={args.tau}"]),
]
rows = []
for name, sets in variants:
    out = tempfile.mkdtemp(prefix="ppu-sync-bench-")
    cmd = [
        launch,
        "--nproc",
        str(args.nproc),
        "--config",
        args.config,
        "--summary-dir",
        out,
        "--set",
        f"train.steps={args.steps}",
        "--set",
        "train.eval_every=0",
        "--set",
        "train.log_every=100000",
    ]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    runs = summary.load_dir(out, args.nproc)
    rows.append(
        (
            name,
            runs[0].bytes_sent,
            runs[0].bytes_received,
            max(r.network_wait_seconds for r in runs),
            max(r.seconds for r in runs),
            runs[0].eval_loss,
        )
    )


base = rows[0]
print(f"{args.nproc} ranks, {args.steps} steps, config {os.path.basename(args.config)}")
print(
    f"{'variant':<18} {'sent/rank':>10} {'received':>10} {'x fp32':>7} {'wait s':>8} {'x base':>7} {'wall s':>8} {'x base':>7} "
    f"{'eval loss':>10} {'- fp32':>8}"
)
for name, b, rcv, wait, wall, loss in rows:
    print(
        f"{name:<18} {b:10.0f} {rcv:10.0f} {b / base[1]:7.3f} {wait:8.3f} {wait / base[3]:7.3f} {wall:8.2f} {wall / base[4]:7.3f} "
        f"{loss:10.4f} {loss - base[5]:+8.4f}"
    )
