#!/usr/bin/env python3
"""Checkpoint upload bench (issue 60): what checkpoints in S3 cost training, against none and a
local directory, and how long a resume from S3 takes against one from a directory.

usage: python3 bench/checkpoint_upload/run.py BUILD_DIR [--out DIR] [--repeats 3] [--goal 0.02]
           [--configs tiny,demo]

A real SeaweedFS (tests/objectstore/seaweed.py) on loopback, on this machine beside the ranks. For
each config, every repeat runs these side by side (interleaved, so that drift in the machine's
speed hits each alike), a checkpoint every outer round:
  none            no checkpoint.dir
  dir             a local directory (checkpoint.upload auto: inline)
  s3-background   s3://... (auto: background)
  s3-inline       s3://... with checkpoint.upload inline
and reports, from rank 0's summary:
  seconds         training wall time (the summary's `seconds`, evaluation excluded), median
  overhead        median seconds / the none run's median - 1
  thread s/round  the training thread's checkpoint time per round while training goes on
                  (checkpoint_writes.training_wait_seconds over the rounds before the last) against
                  the median step time x H; the end's wait (end_wait_seconds: the last round's
                  checkpoint, which waits for room, and the drain of the uploads in flight) beside
                  it, once per run
  upload s/round  the upload thread's (or inline save's) seconds and MB per round
Resume: after the last repeat, the dir and s3-background runs are resumed for one more round;
each rank logs the seconds it took to find, read and load the checkpoint; the slowest rank's.
tiny: configs/tiny.yaml, 400 steps, H = 10 (40 checkpoints); demo: configs/demo.yaml, 200 steps,
H = 20 (10 checkpoints). Writes DIR/checkpoint_upload.json; exits 1 when the goal is missed:
s3-background's training-thread time per round above --goal of the round's steps (median step
time x H) at any config. That is the stall the upload adds to training (issue 60: "overhead per
round, <= 2 % of step time"). The wall overhead is printed beside it but is not the goal: here
the S3 server and the upload threads run on the same cores as the ranks, which already use them
all, so every cycle they take shows in the wall time; on a cluster the store runs elsewhere.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "objectstore"))
sys.path.insert(0, os.path.join(SRC, "python"))

from ppu import summary
from seaweed import BUCKET, Seaweed

CONFIGS = {"tiny": ("configs/tiny.yaml", 400, 10), "demo": ("configs/demo.yaml", 200, 20)}
MODES = ("none", "dir", "s3-background", "s3-inline")
RESUMED = re.compile(r"^\[rank (\d+)\] .*resumed from \S+ at step (\d+) .*; ([\d.]+) s to find, read and load it\)")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build")
    p.add_argument("--out", default="out/checkpoint-upload")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--goal", type=float, default=0.02, help="s3-background: most training-thread time per round, "
                   "as a share of the round's steps")  # fmt: skip
    p.add_argument("--configs", default="tiny,demo")
    return p.parse_args()


def launch(a, s3, config, steps, mode, location, summaries):
    """One ppu-launch run; its log text."""
    cfg, _, _ = CONFIGS[config]
    cmd = [os.path.join(a.build, "bin", "ppu-launch"), "--config", os.path.join(SRC, cfg), "--set",
           f"train.steps={steps}", "--set", "train.eval_every=0", "--summary-dir", summaries]  # fmt: skip
    if mode != "none":
        cmd += [
            "--set",
            f"checkpoint.dir={location}",
            "--set",
            "checkpoint.every_rounds=1",
            "--set",
            "checkpoint.keep=2",
        ]
    if mode == "s3-inline":
        cmd += ["--set", "checkpoint.upload=inline"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=s3.env(), check=False)
    if r.returncode != 0:
        sys.exit(f"{config} {mode}: ppu-launch exited {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    return r.stdout + r.stderr


def location_of(mode, work, config, repeat):
    if mode.startswith("s3"):
        return f"s3://{BUCKET}/{config}-{mode}-{repeat}/"
    return os.path.join(work, f"{config}-{mode}-{repeat}")


def measure(a, s3, work, config):
    _, steps, h = CONFIGS[config]
    runs = {m: [] for m in MODES}
    for repeat in range(a.repeats):
        for mode in MODES:
            summaries = os.path.join(work, f"{config}-{mode}-{repeat}-summaries")
            launch(a, s3, config, steps, mode, location_of(mode, work, config, repeat), summaries)
            s = summary.load_dir(summaries)[0]
            runs[mode].append(s)
            print(f"  {config} {mode} #{repeat}: {s.seconds:.2f} s", flush=True)
    row = {}
    base = statistics.median(s.seconds for s in runs["none"])
    rounds = steps // h
    for mode, ss in runs.items():
        med = statistics.median(s.seconds for s in ss)
        w = [s.checkpoint_writes for s in ss]
        step_s = statistics.median(s.inner_step_seconds_median for s in ss)
        thread_s = statistics.median(x.training_wait_seconds for x in w) / (rounds - 1)
        row[mode] = {
            "seconds": [s.seconds for s in ss],
            "median_seconds": med,
            "overhead": med / base - 1,
            "median_step_s": step_s,
            "thread_seconds_per_round": thread_s,
            "thread_share_of_round": thread_s / (step_s * h) if step_s else None,
            "end_wait_s": statistics.median(x.end_wait_seconds for x in w),
            "write_seconds_per_round": statistics.median(x.write_seconds for x in w) / rounds,
            "mb_per_round": statistics.median(x.bytes for x in w) / rounds / 1e6,
            "skipped": [x.skipped for x in w],
        }
    row["resume"] = resume(a, s3, work, config, steps + h)
    return row


def resume(a, s3, work, config, steps):
    """The slowest rank's seconds to find, read and load the newest checkpoint, dir and S3."""
    out = {}
    for mode in ("dir", "s3-background"):
        log = launch(a, s3, config, steps, mode, location_of(mode, work, config, a.repeats - 1),
                     os.path.join(work, f"{config}-{mode}-resume"))  # fmt: skip
        seconds = [float(m.group(3)) for m in map(RESUMED.match, log.splitlines()) if m]
        if len(seconds) < 4:
            sys.exit(f"{config} {mode}: not every rank logged its resume:\n{log[-3000:]}")
        out[mode] = max(seconds)
    return out


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ppu-ckpt-bench-")
    results = {}
    try:
        with Seaweed(a.build, SRC, volumes=256) as s3:  # 16 GB: the runs write gigabytes
            for config in a.configs.split(","):
                results[config] = measure(a, s3, work, config)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(a.out, "checkpoint_upload.json"), "w") as f:
        json.dump(results, f, indent=2)
    missed = []
    for config, row in results.items():
        _, steps, h = CONFIGS[config]
        print(f"\n{config} ({steps} steps, a checkpoint every {h} steps; {a.repeats} repeats, medians)")
        print(
            "| mode | seconds | overhead | thread s/round | of a round's steps | end wait s | write s/round "
            "| MB/round | skipped |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for mode in MODES:
            r = row[mode]
            share = r["thread_share_of_round"] or 0
            print(f"| {mode} | {r['median_seconds']:.2f} | {100 * r['overhead']:+.1f} % | "
                  f"{r['thread_seconds_per_round']:.4f} | {100 * share:.1f} % | {r['end_wait_s']:.3f} | "
                  f"{r['write_seconds_per_round']:.4f} | "
                  f"{r['mb_per_round']:.2f} | {sum(r['skipped'])} |")  # fmt: skip
        print(
            f"resume (slowest rank): directory {row['resume']['dir']:.3f} s, S3 {row['resume']['s3-background']:.3f} s"
        )
        share = row["s3-background"]["thread_share_of_round"]
        if share is None or share > a.goal:
            missed.append(f"{config}: s3-background's training thread spends "
                          f"{'?' if share is None else f'{100 * share:.1f}'} % of a round's steps on it, "
                          f"> {100 * a.goal:.0f} %")  # fmt: skip
    if missed:
        print("GOAL MISSED: " + "; ".join(missed))
        return 1
    print(f"goal met: s3-background's training thread spends <= {100 * a.goal:.0f} % of a round's steps on it "
          "at every config")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
