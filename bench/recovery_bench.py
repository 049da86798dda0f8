"""Time from a kill to training again: live recovery against the gang restart (docs/RECOVERY.md).

usage: python3 bench/recovery_bench.py [--build build] [--ranks 4,8] [--kill-step 100] [--heartbeat 15]

For each K, the same tiny PPU job (N = 2, H = 10, a checkpoint every round) runs twice under
ppu-launch --max-restarts 1, and rank 1 is killed (SIGKILL) once rank 0 logs --kill-step:
  live  network.recovery=live: the survivors re-form, rank 1 is restarted alone and rejoins;
  gang  network.recovery=gang: ppu-launch stops the gang and starts it again, which resumes
        from the last checkpoint.
Measured from the kill, from the ranks' log timestamps (spdlog's wall clock, the same clock as
the kill's):
  training again   the first inner step any rank logs after the group re-formed (live) or after
                   the new gang resumed (gang)
  full strength    the first step logged once all K ranks train again (live: after the rejoin;
                   gang: the same as training again)
  steps redone     inner steps of the surviving ranks thrown away (gang: back to the checkpoint)
Both runs use the same machine, config and kill step in one invocation; the numbers are for
this tiny model on this machine (seconds of process start and rendezvous dominate), not a GPU
job's.
"""

import argparse
import datetime
import os
import re
import signal
import subprocess
import tempfile
import time

STAMP = re.compile(r"^\[rank (\d+)\] (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+) \w+ (.*)$")


def stamp(text):
    """spdlog's local wall-clock time as seconds since the epoch (a naive datetime is local)."""
    return datetime.datetime.fromisoformat(text).timestamp()


def read(path):
    with open(path) as f:
        return f.read()


def rank_pid(launcher, rank):
    children = subprocess.run(["pgrep", "-P", str(launcher)], capture_output=True, text=True, check=False)
    for pid in children.stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"RANK={rank}".encode() in f.read().split(b"\0"):
                    return int(pid)
        except OSError:
            continue
    raise SystemExit(f"no rank {rank} under ppu-launch {launcher}")


def run(build, ranks, policy, kill_step, heartbeat, work):
    ckpt = os.path.join(work, f"ckpt-{policy}-{ranks}")
    log_path = os.path.join(work, f"{policy}-{ranks}.log")
    args = [os.path.join(build, "bin", "ppu-launch"), "--nproc", str(ranks), "--max-restarts", "1"]
    args += ["--config", os.path.join(os.path.dirname(__file__), "..", "configs", "tiny.yaml")]
    for kv in [
        f"train.steps={kill_step * 3}",
        "train.eval_every=0",
        "train.log_every=1",
        "outer.sync_every=10",
        "slicing.slices=2",
        "checkpoint.every_rounds=1",
        f"checkpoint.dir={ckpt}",
        f"network.recovery={policy}",
        f"network.heartbeat_s={heartbeat}",
    ]:
        args += ["--set", kv]
    with open(log_path, "w") as log:
        launcher = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        while not re.search(rf"\[rank 0\] .* step {kill_step}/", read(log_path)):
            if launcher.poll() is not None:
                raise SystemExit(f"{policy} K={ranks} ended before step {kill_step}; see {log_path}")
            time.sleep(0.02)
        os.kill(rank_pid(launcher.pid, 1), signal.SIGKILL)
        killed = time.time()
        if launcher.wait(timeout=1800) != 0:
            raise SystemExit(f"{policy} K={ranks}: ppu-launch exited {launcher.returncode}; see {log_path}")
    lines = [m.groups() for m in map(STAMP.match, read(log_path).splitlines()) if m]
    steps_at_kill = max(s for _r, t, msg in lines if (s := _step(msg)) and stamp(t) <= killed)
    again = full = None
    ready = rejoined = False
    resumed_at = None
    for _rank, t, msg in lines:
        when = stamp(t)
        if when < killed:
            continue
        if policy == "live":
            ready = ready or "lost rank(s) [1]" in msg
            rejoined = rejoined or "rejoined in round" in msg
        elif "resumed from" in msg:
            ready = rejoined = True
            resumed_at = resumed_at or int(re.search(r"at step (\d+)", msg).group(1))
        if _step(msg) and ready and again is None:
            again = when - killed
        if _step(msg) and rejoined and full is None:
            full = when - killed
    redone = steps_at_kill - resumed_at if resumed_at is not None else 0
    return {"again": again, "full": full, "redone": redone, "log": log_path}


def _step(msg):
    m = re.match(r"step (\d+)/", msg)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", default="4,8")
    ap.add_argument("--kill-step", type=int, default=100)
    ap.add_argument("--heartbeat", type=float, default=15)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ppu-recovery-bench-")
    print(f"kill rank 1 at step {a.kill_step}; network.heartbeat_s {a.heartbeat}; logs in {work}")
    print("| K | policy | training again (s) | full strength (s) | steps redone per rank |")
    print("|---|---|---|---|---|")
    for k in (int(x) for x in a.ranks.split(",")):
        for policy in ("live", "gang"):
            r = run(a.build, k, policy, a.kill_step, a.heartbeat, work)
            print(f"| {k} | {policy} | {r['again']:.2f} | {r['full']:.2f} | {r['redone']} |", flush=True)


if __name__ == "__main__":
    main()
