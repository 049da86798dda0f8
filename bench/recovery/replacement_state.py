"""A replacement's inner optimiser state: from a live co-owner, or fresh (network.replacement_inner_state).

usage: python3 bench/recovery/replacement_state.py [--build build] [--seeds 0,1,2] [--steps 200]
                                                   [--kill-step 105] [--victim 2]

For each seed, the tiny PPU job of tests/engine/live_recovery_tests.py (K = 4, N = 2, H = 10,
recovery live) runs three times under ppu-launch:
  uninterrupted  no fault (--max-restarts 0);
  coowner        rank --victim is killed (SIGKILL) once rank 0 logs --kill-step, restarted in
                 place (--max-restarts 1), and its replacement takes the AdamW moments and step of
                 the lowest live rank of its slice (rank victim - N or victim + N);
  fresh          the same kill; the replacement's moments start at zero.
It prints each run's final eval loss and, per choice, the mean and spread (min..max and sample
standard deviation) over seeds of |eval loss - the same seed's uninterrupted eval loss|. The kill
is placed by polling the log every 20 ms, so it lands a step or two after --kill-step; the
replacement rejoins at the next round boundary either way, which is what decides its state.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from ppu import files, summary


def rank_pid(launcher, rank):
    children = subprocess.run(["pgrep", "-P", str(launcher)], capture_output=True, text=True, check=False)
    for pid in children.stdout.split():
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "ppu-train":
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"RANK={rank}".encode() in f.read().split(b"\0"):
                    return int(pid)
        except OSError:
            continue
    return None


def launch(args, seed, choice, kill, work):
    summaries = os.path.join(work, f"{choice}-seed{seed}")
    log_path = summaries + ".log"
    cmd = [os.path.join(args.build, "bin", "ppu-launch"), "--nproc", "4", "--config"]
    cmd += [os.path.join(ROOT, "configs", "tiny.yaml"), "--summary-dir", summaries]
    cmd += ["--max-restarts", "1" if kill else "0"]
    for kv in [
        f"train.steps={args.steps}", "outer.sync_every=10", "train.eval_every=0", "train.log_every=1",
        "model.seq_len=32", "slicing.slices=2", "outer.overlap_steps=0", "network.recovery=live",
        "network.heartbeat_s=2", f"train.seed={seed}", f"network.replacement_inner_state={choice}",
    ]:  # fmt: skip
        cmd += ["--set", kv]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        if kill:
            pattern = re.compile(rf"^\[rank 0\] .* step {args.kill_step}/", re.MULTILINE)
            while proc.poll() is None:
                with open(log_path) as f:
                    if pattern.search(f.read()):
                        break
                time.sleep(0.02)
            pid = rank_pid(proc.pid, args.victim)
            if pid is None:
                sys.exit(f"{choice} seed {seed}: no rank {args.victim} to kill (see {log_path})")
            os.kill(pid, signal.SIGKILL)
        rc = proc.wait()
    if rc != 0:
        sys.exit(f"{choice} seed {seed}: ppu-launch exited {rc} (see {log_path})")
    with open(log_path) as f:
        text = f.read()
    if kill and not re.search(rf"rank\(s\) \[{args.victim}\] rejoined in round", text):
        sys.exit(f"{choice} seed {seed}: rank {args.victim} did not rejoin (see {log_path})")
    took = bool(re.search(rf"\[rank {args.victim}\] .*inner state of rank {args.victim} taken from rank", text))
    if kill and took != (choice == "coowner"):
        sys.exit(f"{choice} seed {seed}: the replacement {'did not take' if not took else 'took'} a co-owner's state")
    return summary.load(files.summary_file(summaries, 0)).eval_loss


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--kill-step", type=int, default=105)
    p.add_argument("--victim", type=int, default=2)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="ppu-replacement-state-")
    seeds = [int(s) for s in args.seeds.split(",")]
    gaps = {"coowner": [], "fresh": []}
    print(f"K=4 N=2 H=10, {args.steps} steps, rank {args.victim} killed at step {args.kill_step}; logs in {work}")
    print(f"{'seed':>4} {'uninterrupted':>13} {'coowner':>9} {'fresh':>9}")
    for seed in seeds:
        base = launch(args, seed, "coowner", False, work)
        losses = {choice: launch(args, seed, choice, True, work) for choice in gaps}
        for choice, loss in losses.items():
            gaps[choice].append(abs(loss - base))
        print(f"{seed:>4} {base:>13.4f} {losses['coowner']:>9.4f} {losses['fresh']:>9.4f}", flush=True)
    print("|eval loss - uninterrupted| over seeds:")
    for choice, g in gaps.items():
        sd = statistics.stdev(g) if len(g) > 1 else 0.0
        print(f"  {choice:8} mean {statistics.mean(g):.4f}  min {min(g):.4f}  max {max(g):.4f}  sd {sd:.4f}")
    diff = [f - c for c, f in zip(gaps["coowner"], gaps["fresh"], strict=True)]
    print(f"  fresh - coowner, per seed: {' '.join(f'{d:+.4f}' for d in diff)}")


if __name__ == "__main__":
    main()
