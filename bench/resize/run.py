#!/usr/bin/env python3
"""Resize bench (issue 59): a live job resized 4 -> 8 -> 4 ranks mid-run, against a fixed-size
4-rank run of the same seed at equal tokens.

usage: python3 bench/resize/run.py BUILD_DIR [--out DIR] [--seeds 0,1,2] [--steps 2400]
           [--sync-every 40] [--grow-at 800] [--shrink-at 1600] [--set key=value]...

The tiny config (N = 4, network.recovery live, network.min_ranks 4, heartbeat 2 s, evaluation at
the end only) under ppu-launch --nproc 8 --ranks 4. When rank 0 logs step --grow-at, the bench
sends ppu-launch four SIGUSR1 (slots 4-7 start and join as replacements do); when it logs step
--shrink-at, four SIGUSR2 (slots 4-7 retire at the next round boundary). Measured per new rank,
from the moment its SIGUSR1 was sent (the log's clock):
  taken in       its "rank r rejoined" line (the process started, asked, and was admitted at the
                 next round boundary or fragment sync point, with θ, momentum and inner state)
  first step     its first step line
  first round    rank 0's step line of the first round boundary after the rank was taken in:
                 by then every fragment of the model has merged its deltas
and per shrink, SIGUSR2 to the rank's "retired" line. Tokens: the members' summaries plus what
each retired process says it trained. Then the same seed at a fixed 4 ranks with train.steps
chosen so that its tokens equal the resized run's (the resized run's tokens / (4 x tokens per
rank-step), rounded), and the final eval loss of both. Prints a table, writes DIR/resize.json.
No goal: a measurement. Takes about 2 minutes a seed on 2 cores.
"""

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "python"))

from ppu import summary

SLOTS, SMALL = 8, 4
LINE = re.compile(r"^\[rank (\d+)\] (\S+) \w+ (.*)$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build")
    p.add_argument("--out", default="out/resize")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--steps", type=int, default=2400)
    p.add_argument("--sync-every", type=int, default=40)
    p.add_argument("--grow-at", type=int, default=800)
    p.add_argument("--shrink-at", type=int, default=1600)
    p.add_argument("--set", action="append", default=[], dest="sets")
    return p.parse_args()


def job_args(args, seed, steps):
    sets = [
        f"outer.sync_every={args.sync_every}", "train.eval_every=0", "train.log_every=1", "model.seq_len=32",
        "slicing.slices=4", "outer.overlap_steps=0", "network.heartbeat_s=2", "network.recovery=live",
        f"network.min_ranks={SMALL}", f"train.seed={seed}", f"train.steps={steps}", *args.sets,
    ]  # fmt: skip
    out = ["--config", os.path.join(SRC, "configs", "tiny.yaml")]
    for s in sets:
        out += ["--set", s]
    return out


def clock(stamp):
    """A log line's time stamp (local time, as spdlog writes it) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(stamp).timestamp()


def lines(log_path):
    with open(log_path) as f:
        for text in f:
            m = LINE.match(text.rstrip("\n"))
            if m:
                yield int(m.group(1)), clock(m.group(2)), m.group(3)


def wait_step(log_path, step, proc, timeout=600):
    want = re.compile(rf"^\[rank 0\] \S+ \w+ step {step}/")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path) as f:
            if any(want.match(t) for t in f):
                return
        if proc.poll() is not None:
            sys.exit(f"ppu-launch exited {proc.returncode} before step {step}: see {log_path}")
        time.sleep(0.05)
    sys.exit(f"no step {step} within {timeout} s: see {log_path}")


def resized_run(args, seed, work):
    log_path = os.path.join(work, "launch.log")
    cmd = [os.path.join(args.build, "bin", "ppu-launch"), "--nproc", str(SLOTS), "--ranks", str(SMALL),
           *job_args(args, seed, args.steps), "--summary-dir", os.path.join(work, "summaries")]  # fmt: skip
    start = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_step(log_path, args.grow_at, proc)
        grown = time.time()
        for _ in range(SLOTS - SMALL):
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(0.05)  # ppu-launch acts on each signal in turn
        wait_step(log_path, args.shrink_at, proc)
        shrunk = time.time()
        for _ in range(SLOTS - SMALL):
            os.kill(proc.pid, signal.SIGUSR2)
            time.sleep(0.05)
        if proc.wait(timeout=1800) != 0:
            sys.exit(f"the resized run exited {proc.returncode}: see {log_path}")
    wall = time.time() - start
    joined, first_step, retired, retired_tokens, steps_at = {}, {}, {}, 0.0, {}
    for rank, t, text in lines(log_path):
        if rank == 0 and (m := re.match(r"step (\d+)/", text)):
            steps_at[int(m.group(1))] = t
        if rank >= SMALL:
            if m := re.match(rf"rank {rank} rejoined in round \d+ \(step (\d+)\)", text):
                joined.setdefault(rank, (t, int(m.group(1))))  # the first time (a retired slot may come back)
            elif rank in joined and rank not in first_step and re.match(r"step \d+/", text):
                first_step[rank] = t
            elif m := re.search(r"retired: .* trained (\d+) tokens", text):
                retired[rank] = t
                retired_tokens += float(m.group(1))
    if sorted(joined) != list(range(SMALL, SLOTS)) or sorted(retired) != list(range(SMALL, SLOTS)):
        sys.exit(f"slots {SMALL}-{SLOTS - 1}: taken in {sorted(joined)}, retired {sorted(retired)}: see {log_path}")
    members = summary.load_dir(os.path.join(work, "summaries"), SMALL)
    tokens = sum(s.tokens for s in members) + retired_tokens
    h = args.sync_every
    per_rank = []
    for r in range(SMALL, SLOTS):
        t_join, step = joined[r]
        boundary = (step // h + 1) * h
        per_rank.append(
            {
                "rank": r,
                "taken_in_s": t_join - grown,
                "first_step_s": first_step[r] - grown,
                "first_round_s": steps_at[boundary] - grown,
                "joined_at_step": step,
                "retired_s": retired[r] - shrunk,
            }
        )
    return {"wall_s": wall, "tokens": tokens, "loss": members[0].eval_loss, "ranks": per_rank,
            "sizes": [c.as_dict() for c in members[0].recovery.size_history]}  # fmt: skip


def fixed_run(args, seed, work, steps):
    cmd = [os.path.join(args.build, "bin", "ppu-launch"), "--nproc", str(SMALL), *job_args(args, seed, steps),
           "--summary-dir", os.path.join(work, "summaries")]  # fmt: skip
    start = time.time()
    with open(os.path.join(work, "launch.log"), "w") as log:
        if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False).returncode != 0:
            sys.exit(f"the fixed run failed: see {work}/launch.log")
    members = summary.load_dir(os.path.join(work, "summaries"), SMALL)
    return {"wall_s": time.time() - start, "steps": steps, "tokens": sum(s.tokens for s in members),
            "loss": members[0].eval_loss}  # fmt: skip


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        work = os.path.join(args.out, f"seed{seed}")
        for part in ("resized", "fixed"):
            os.makedirs(os.path.join(work, part), exist_ok=True)
        resized = resized_run(args, seed, os.path.join(work, "resized"))
        tokens_per_rank_step = summary.load_dir(os.path.join(work, "resized", "summaries"), 1)[0].tokens / args.steps
        steps = round(resized["tokens"] / (SMALL * tokens_per_rank_step))
        fixed = fixed_run(args, seed, os.path.join(work, "fixed"), steps)
        results.append({"seed": seed, "resized": resized, "fixed": fixed})
        r = resized["ranks"]
        print(
            f"seed {seed}: resized 4->8->4 eval loss {resized['loss']:.4f} ({resized['tokens']:.0f} tokens, "
            f"{resized['wall_s']:.0f} s); fixed 4 ranks x {steps} steps {fixed['loss']:.4f} "
            f"({fixed['tokens']:.0f} tokens, {fixed['wall_s']:.0f} s); SIGUSR1 -> taken in "
            f"{min(x['taken_in_s'] for x in r):.2f}-{max(x['taken_in_s'] for x in r):.2f} s, first step "
            f"{min(x['first_step_s'] for x in r):.2f}-{max(x['first_step_s'] for x in r):.2f} s, first round "
            f"{min(x['first_round_s'] for x in r):.2f}-{max(x['first_round_s'] for x in r):.2f} s; SIGUSR2 -> "
            f"retired {min(x['retired_s'] for x in r):.2f}-{max(x['retired_s'] for x in r):.2f} s",
            flush=True,
        )
    diffs = [x["resized"]["loss"] - x["fixed"]["loss"] for x in results]
    print(f"resized - fixed eval loss by seed: {', '.join(f'{d:+.4f}' for d in diffs)}")
    with open(os.path.join(args.out, "resize.json"), "w") as f:
        json.dump({"args": vars(args), "seeds": results}, f, indent=2)


if __name__ == "__main__":
    main()
