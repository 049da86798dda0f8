#!/usr/bin/env python3
"""outer_sync_bench: the outer-sync options measured side by side in one run.

Runs the same ppu-launch job (default configs/tiny.yaml, 4 ranks) with fp32, bf16 and int8
delta exchange and with overlap tau = 0 and tau > 0, and prints per variant: bytes put on the
wire per rank, seconds spent in syncs (the time the inner loop waited on them), wall time,
final eval loss, each relative to the fp32 / tau = 0 baseline.

usage: bench/outer_sync_bench.py BUILD_DIR [--config FILE] [--nproc K] [--steps N] [--tau T]
"""
import argparse
import json
import os
import subprocess
import tempfile

p = argparse.ArgumentParser()
p.add_argument("build")
p.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "..", "configs", "tiny.yaml"))
p.add_argument("--nproc", type=int, default=4)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--tau", type=int, default=3)
args = p.parse_args()
launch = os.path.join(args.build, "runtime", "launch", "ppu-launch")

variants = [("fp32, tau=0", []), ("bf16, tau=0", ["outer.delta_dtype=bf16"]), ("int8, tau=0", ["outer.delta_dtype=int8"]),
            (f"fp32, tau={args.tau}", [f"outer.overlap_steps={args.tau}"]),
            (f"int8, tau={args.tau}", ["outer.delta_dtype=int8", f"outer.overlap_steps={args.tau}"])]
rows = []
for name, sets in variants:
    out = tempfile.mkdtemp(prefix="ppu-sync-bench-")
    cmd = [launch, "--nproc", str(args.nproc), "--config", args.config, "--summary-dir", out,
           "--set", f"train.steps={args.steps}", "--set", "train.eval_every=0", "--set", "train.log_every=100000"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    runs = [json.load(open(os.path.join(out, f"rank-{r}.json"))) for r in range(args.nproc)]
    rows.append((name, runs[0]["bytes_allreduced"], max(r["sync_seconds"] for r in runs),
                 max(r["seconds"] for r in runs), runs[0]["eval_loss"]))

base = rows[0]
print(f"{args.nproc} ranks, {args.steps} steps, config {os.path.basename(args.config)}")
print(f"{'variant':<14} {'bytes/rank':>12} {'x fp32':>7} {'sync s':>8} {'x base':>7} {'wall s':>8} {'x base':>7} {'eval loss':>10}")
for name, b, sync, wall, loss in rows:
    print(f"{name:<14} {b:12.0f} {b / base[1]:7.3f} {sync:8.3f} {sync / base[2]:7.3f} {wall:8.2f} {wall / base[3]:7.3f} {loss:10.4f}")
