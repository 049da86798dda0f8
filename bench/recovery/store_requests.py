"""What failure detection costs the rendezvous store, by job size (docs/RECOVERY.md, issue 56).

usage: python3 bench/recovery/store_requests.py [--build build] [--ranks 8,16,32]
                                                [--heartbeat 1] [--steps 300]

For each K, one fault-free live job (configs/tiny.yaml, N = 2, H = 10, network.recovery=live,
network.heartbeat_s as given) runs under ppu-launch on this machine. From every rank's summary
(recovery.store_requests) it prints the store requests of the heartbeat (beats on the board and
the member's account) and of the live group (agreements, join all-gathers, abort probes) per
heartbeat window, for the job and per rank, next to what the heartbeat cost when each rank read
each peer's counter (computed: per beat 1 add, K - 1 reads and the 2 requests of the member's
account, 5 beats a window: 5 K (K + 2) for the job; the design this replaced). O(K) for the job means the per-rank
figure stays flat as K grows.

Goals (exit 1 when one is missed): no rank is ever reported silent ("has sent no heartbeat")
in these fault-free runs, and the heartbeat's requests per rank and window at the largest K are
at most 1.5 times those at the smallest.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))

from ppu import summary

BEATS_PER_WINDOW = 5  # the heartbeat beats every fifth of its window (engine/comm/heartbeat.h)


def run(build, ranks, heartbeat, steps, work):
    summaries = os.path.join(work, f"k{ranks}")
    log_path = os.path.join(work, f"k{ranks}.log")
    args = [os.path.join(build, "bin", "ppu-launch"), "--nproc", str(ranks), "--summary-dir", summaries]
    args += ["--config", os.path.join(SRC, "configs", "tiny.yaml")]
    for kv in [
        f"train.steps={steps}",
        "train.eval_every=0",
        "outer.sync_every=10",
        "slicing.slices=2",
        "model.seq_len=32",
        "network.recovery=live",
        f"network.heartbeat_s={heartbeat}",
    ]:
        args += ["--set", kv]
    with open(log_path, "w") as log:
        rc = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT, check=False, timeout=3600).returncode
    with open(log_path) as f:
        text = f.read()
    if rc != 0:
        sys.exit(f"K={ranks}: ppu-launch exited {rc}; see {log_path}")
    sums = summary.load_dir(summaries, ranks)
    seconds = max(s.seconds for s in sums)
    windows = seconds / heartbeat
    heartbeat_requests = sum(s.recovery.store_requests.heartbeat for s in sums)
    group_requests = sum(s.recovery.store_requests.group for s in sums)
    return {
        "seconds": seconds,
        "heartbeat_job": heartbeat_requests / windows,
        "heartbeat_rank": heartbeat_requests / windows / ranks,
        "group_job": group_requests / windows,
        "per_peer_reads_job": BEATS_PER_WINDOW * ranks * (ranks + 2),
        "silent": len(re.findall(r"has sent no heartbeat", text)),
        "lost": len(re.findall(r"lost rank\(s\)", text)),
        "log": log_path,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", default="8,16,32")
    ap.add_argument("--heartbeat", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ppu-store-requests-")
    print(f"network.heartbeat_s {a.heartbeat}; {a.steps} steps per job; logs in {work}")
    print(
        "| K | run (s) | heartbeat requests / window, job | per rank | group requests / window, job "
        "| per-peer reads would be (computed) | reported silent | re-formations |"
    )
    print("|---|---|---|---|---|---|---|---|")
    results = {}
    for k in (int(x) for x in a.ranks.split(",")):
        r = results[k] = run(a.build, k, a.heartbeat, a.steps, work)
        print(
            f"| {k} | {r['seconds']:.1f} | {r['heartbeat_job']:.0f} | {r['heartbeat_rank']:.1f} | "
            f"{r['group_job']:.0f} | {r['per_peer_reads_job']} | {r['silent']} | {r['lost']} |",
            flush=True,
        )
    missed = []
    if any(r["silent"] or r["lost"] for r in results.values()):
        missed.append("a rank was reported silent or lost in a fault-free run")
    smallest, largest = results[min(results)], results[max(results)]
    growth = largest["heartbeat_rank"] / smallest["heartbeat_rank"]
    print(f"heartbeat requests per rank and window, K={max(results)} over K={min(results)}: {growth:.2f}")
    if growth > 1.5:
        missed.append(f"per-rank heartbeat requests grew {growth:.2f}x from K={min(results)} to K={max(results)}")
    for m in missed:
        print(f"GOAL MISSED: {m}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
