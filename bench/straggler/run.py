#!/usr/bin/env python3
"""Straggler bench (issue 58): one slow rank against the job's pace, sync_mode all vs quorum.

usage: sudo python3 bench/straggler/run.py BUILD_DIR [--out DIR] [--ranks 4,8] [--caps 0.1,0.5]
           [--modes all,quorum-budget,quorum,quorum-drop] [--sit-out 16] [--steps 800] [--sync-every 20]
           [--goal 1.4] [--goal-mode quorum] [--set key=value]...

For each K, the tiny config (N = 2, live recovery off, no evaluation until the end) runs under
ppu-launch uncapped in every mode, then, for each cap c, with rank K-1 in a CPU cgroup capped at
c of one core (cgroup v1 cpu.cfs_quota_us or v2 cpu.max, from the rank's start) in every mode:
  all            outer.sync_mode all
  quorum-budget  outer.sync_mode quorum, quorum_sit_out 0: a slow rank takes part in every sync
                 point with what fits its time budget
  quorum         outer.sync_mode quorum as it comes (gang recovery): a slow rank sits out up to
                 --sit-out sync points (outer.quorum_sit_out, the default's 16) between two it
                 takes part in, its late work merged
  quorum-drop    the same with outer.quorum_late_work drop
Every run is measured in this one invocation on this machine:
  wall          ppu-launch's wall time, start to exit
  x uncapped    wall / the uncapped sync_mode all run's wall, same K
  tokens/s      tokens the ranks trained (the summaries' tokens, summed) per second of wall
  skipped       inner steps the capped rank skipped to reach a closed sync point (quorum), and
                (ahead) how many of them before the close, predicted to end after it
  sat out       sync points the capped rank sat out (quorum, quorum-drop)
  max wait      the longest a rank waited at a sync point for it to close (quorum; rank 0)
  eval loss     the final global parameters' (one number per run)
It prints a table, writes DIR/straggler.json, and exits 1 when the goal is missed: in the goal
mode and K = 4, the rank capped at the smallest cap, wall <= --goal x the uncapped all run's (the
job loses no more than the straggler's own share). Needs root (cgroups); removes its cgroups.
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "engine"))
sys.path.insert(0, os.path.join(SRC, "bench", "chaos"))
sys.path.insert(0, os.path.join(SRC, "python"))

from cpu_cap import run_capped
from ppu import choices, summary

ALL, QUORUM = choices.names("outer.sync_mode")
MERGE, DROP = choices.names("outer.quorum_late_work")
MODES = {  # mode -> its keys; {m}: --sit-out
    ALL: [f"outer.sync_mode={ALL}"],
    f"{QUORUM}-budget": [f"outer.sync_mode={QUORUM}", "outer.quorum_sit_out=0"],
    QUORUM: [f"outer.sync_mode={QUORUM}", "outer.quorum_sit_out={m}", f"outer.quorum_late_work={MERGE}"],
    f"{QUORUM}-{DROP}": [f"outer.sync_mode={QUORUM}", "outer.quorum_sit_out={m}", f"outer.quorum_late_work={DROP}"],
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build")
    p.add_argument("--out", default="out/straggler")
    p.add_argument("--ranks", default="4,8")
    p.add_argument("--caps", default="0.1,0.5", help="the slow rank's share of one core")
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--sync-every", type=int, default=20)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--sit-out", type=int, default=16, help="outer.quorum_sit_out of the quorum and quorum-drop modes")
    p.add_argument("--goal", type=float, default=1.4, help="the goal mode at K = 4, smallest cap: wall / uncapped")
    p.add_argument("--goal-mode", default=QUORUM)
    p.add_argument("--set", dest="sets", action="append", default=[], help="extra config override")
    return p.parse_args()


def one_run(args, out, ranks, mode, cap):
    name = f"k{ranks}-{mode}-" + (f"cap{cap}" if cap else "uncapped")
    work = os.path.join(out, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cmd = [
        os.path.join(args.build, "bin", "ppu-launch"), "--nproc", str(ranks),
        "--config", os.path.join(SRC, "configs", "tiny.yaml"), "--summary-dir", os.path.join(work, "summaries"),
        "--set", f"train.steps={args.steps}", "--set", f"outer.sync_every={args.sync_every}",
        "--set", "slicing.slices=2", "--set", "train.eval_every=0", "--set", "train.log_every=50",
        *[x for s in MODES[mode] + args.sets for x in ("--set", s.format(m=args.sit_out))],
    ]  # fmt: skip
    rc, wall = run_capped(cmd, os.path.join(work, "launch.log"), ranks - 1, cap, 3600)
    if rc != 0:
        sys.exit(f"{name}: ppu-launch exited {rc}; see {work}/launch.log")
    sums = summary.load_dir(os.path.join(work, "summaries"), ranks)
    last = sums[ranks - 1].outer_sync
    row = {
        "ranks": ranks, "mode": mode, "cap": cap, "wall_s": wall,
        "tokens_per_s": sum(s.tokens for s in sums) / wall, "loss": sums[0].eval_loss,
        "skipped": last.steps_skipped, "skipped_ahead": last.steps_skipped_ahead, "grace_closes": sums[0].outer_sync.closed_by_grace,
        "max_wait_s": sums[0].outer_sync.max_wait_seconds, "wait_s": sums[0].outer_sync.wait_seconds,
        "slow_rank_share": next((c.share for c in sums[0].outer_sync.ranks if c.rank == ranks - 1), None),
        "sitting_out": last.sat_out, "merged": last.late_merged, "dropped": last.late_dropped,
    }  # fmt: skip
    print(f"  {name}: {wall:.1f} s", flush=True)
    return row


def main():
    args = parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    caps = [float(c) for c in args.caps.split(",")]
    rows = []
    for ranks in (int(k) for k in args.ranks.split(",")):
        for cap in (None, *caps):
            for mode in args.modes.split(","):
                rows.append(one_run(args, out, ranks, mode, cap))
    base = {r["ranks"]: r["wall_s"] for r in rows if r["mode"] == ALL and r["cap"] is None}
    for r in rows:
        r["x_uncapped"] = r["wall_s"] / base[r["ranks"]]
    print("| K | slow rank | mode | wall | x uncapped | tokens/s | skipped (ahead) | sat out | closed by grace "
          "| max wait | eval loss |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cap = f"{r['cap']:.0%} of a core" if r["cap"] else "uncapped"
        print(f"| {r['ranks']} | {cap} | {r['mode']} | {r['wall_s']:.1f} s | {r['x_uncapped']:.2f} | "
              f"{r['tokens_per_s']:.0f} | {r['skipped']} ({r['skipped_ahead']}) | {r['sitting_out']} | {r['grace_closes']} | "
              f"{r['max_wait_s']:.2f} s | {r['loss']:.4f} |")  # fmt: skip
    goal_row = next(r for r in rows if r["ranks"] == 4 and r["mode"] == args.goal_mode and r["cap"] == min(caps))
    missed = goal_row["x_uncapped"] > args.goal
    with open(os.path.join(out, "straggler.json"), "w") as f:
        json.dump({"command": " ".join(sys.argv), "goal": args.goal, "rows": rows, "missed": missed}, f, indent=1)
    print(f"goal: {args.goal_mode} at K = 4 with one rank at {min(caps):.0%} of a core: {goal_row['x_uncapped']:.2f}x "
          f"the uncapped run (goal <= {args.goal}): {'MISSED' if missed else 'met'}")  # fmt: skip
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
