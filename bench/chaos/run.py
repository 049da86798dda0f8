#!/usr/bin/env python3
"""Chaos bench (issue 43): a K = 8 live PPU job (N = 4) under a seeded fault schedule.

usage: sudo python3 bench/chaos/run.py BUILD_DIR [--out DIR] [--seed S] [--no-store]
           [--rounds R] [--sync-every H] [--every E] [--heartbeat S] [--set key=value]...

Every rank runs in a network namespace of its own (tests/engine/rank_netns.py, ppu-launch
--rank-wrapper), for every run, so that fault-free and faulted runs take the same path. It runs
the config fault-free with seeds 0, 1 and 2 (the seed band of the final eval loss, and their
steps/s), then with seed 0 under a schedule of about one fault every E outer rounds, each at a
drawn step of its round (bench/chaos/schedule.py prints it): SIGKILL, SIGSTOP past the heartbeat window,
a hung training thread, the rank's link cut for 2 x heartbeat, the store (ppu-rendezvous)
killed, a second SIGKILL while the survivors re-form after a first, a preemption notice
(SIGTERM) to one rank, every rank of one node of 4 SIGKILLed at once, the store SIGSTOPped (a
frozen store) and a checkpoint write that stalls for good. --no-store leaves both store faults
out. The bench waits for each recovery to end before the next fault (so each is timed
alone) and reports:
  gang restarts         "restarting the gang" in ppu-launch's output (goal 0)
  goodput               tokens whose updates reached θ / the tokens the job would have trained at
                        its healthy rate in the same time (goal >= --goal, 0.93): the steps of
                        K ranks less the rank-steps lost, fragment by fragment (report.py's
                        rank_steps_lost), over (K x the training's span, first step line to
                        last, x the steps/s of the stretches no fault window overlaps). The rate
                        is the chaos run's own, so that the figure measures the faults and not
                        the machine: a shared VM's speed drifts by 10 % within minutes, more
                        than the goal's margin. Printed beside it: the same against the
                        fault-free seeds' steps/s, and how much faster the machine ran in the
                        chaos run's healthy stretches than in the seeds (the drift; without
                        drift the two figures agree, which checks the healthy rate).
  recovery per kind     seconds to fenced, to re-formed (the survivors' own figure) and back to
                        full strength (bench/chaos/report.py)
  θ mismatches          the summaries' recovery.theta_mismatches (goal 0)
  final eval loss       against seed 0's fault-free loss -/+ the seeds' range, max - min (goal:
                        inside; the faulted run is seed 0, and a fault may move it by no more
                        than changing the seed does: scripts/cluster/band.sh, the cluster's band)
It prints a table, writes DIR/chaos.json, and exits 1 when a goal is missed (exit code, gang
restarts, θ mismatches, the loss band, goodput); logs (lines prefixed with their arrival time)
and summaries stay in DIR. Needs root and iproute2; makes nothing outside its own namespaces.
"""

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "engine"))
sys.path.insert(0, os.path.join(SRC, "python"))

import faults
import report
import schedule
from job import Job
from ppu import files, summary
from rank_netns import RankNetwork


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build")
    p.add_argument("--out", default="out/chaos")
    p.add_argument("--seed", type=int, default=0, help="the fault schedule's seed")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--slices", type=int, default=4)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--sync-every", type=int, default=50)
    p.add_argument("--every", type=int, default=5, help="one fault per this many rounds, on average")
    p.add_argument("--heartbeat", type=float, default=3.0)
    p.add_argument("--no-store", action="store_true", help="leave the store fault out of the schedule")
    p.add_argument("--restarts", type=int, default=40, help="ppu-launch --max-restarts")
    p.add_argument("--set", dest="sets", action="append", default=[], help="extra config override")
    p.add_argument("--goal", type=float, default=0.93, help="goodput below this fails the bench (exit 1)")
    return p.parse_args()


def config(a, seed, ckpt):
    kvs = [
        f"train.steps={a.rounds * a.sync_every}",
        f"train.seed={seed}",
        f"outer.sync_every={a.sync_every}",
        f"slicing.slices={a.slices}",
        "outer.overlap_steps=0",
        "train.eval_every=0",
        "train.eval_batches=8",
        "train.log_every=5",
        "network.recovery=live",
        f"network.heartbeat_s={a.heartbeat}",
        f"checkpoint.dir={ckpt}",
        "checkpoint.every_rounds=5",
        f"checkpoint.write_timeout_s={2 * a.heartbeat}",  # a stalled write (ckpt-stall) is a fault
        *a.sets,
    ]
    return [x for kv in kvs for x in ("--set", kv)]


def launch(a, net, name, seed, extra_env=None):
    work = os.path.join(a.out, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cmd = [*net.hub_exec, os.path.join(a.build, "bin", "ppu-launch"), "--nproc", str(a.ranks)]
    cmd += ["--config", os.path.join(SRC, "configs", "tiny.yaml"), *config(a, seed, os.path.join(work, "ckpt"))]
    cmd += ["--rank-wrapper", net.wrapper, "--max-restarts", str(a.restarts)]
    cmd += ["--summary-dir", os.path.join(work, "summaries")]
    env = dict(os.environ, **(extra_env or {}))
    return Job(cmd, os.path.join(work, "launch.log"), env=env), work


@dataclasses.dataclass
class FaultFree:
    """One fault-free run: an entry of chaos.json's fault_free."""

    seed: int
    wall_s: float
    steps_per_s: float  # report.step_rate: from its first step line to its last
    eval_loss: float  # rank 0's summary's
    tokens: int  # the ranks' summaries' sum
    load: tuple  # os.getloadavg() at its end


@dataclasses.dataclass
class KindStats:
    """One fault kind in chaos.json's by_kind: faults injected, the mean seconds to fenced, to
    re-formed and to full strength (None: none measured), gang restarts."""

    faults: int
    fenced_s: float | None
    reform_s: float | None
    recovered_s: float | None
    gang_restarts: int


@dataclasses.dataclass
class Result:
    """chaos.json, in its order. faults: report.fault_outcome's records; theta_mismatches: the
    largest of the summaries' recovery.theta_mismatches (None: no summary); eval_loss: rank 0's;
    rank_steps_lost: report.rank_steps_lost (missing_rank_rounds: the summaries' whole-round count,
    a cross-check); goodput: against the healthy rate, goodput_vs_fault_free_seeds: against the
    seeds' (see the module doc); machine_drift: healthy rate / the seeds' rate - 1."""

    command: str
    ranks: int
    slices: int
    rounds: int
    sync_every: int
    heartbeat_s: float
    exit_code: int
    gang_restarts: int
    restarts_in_place: int
    wall_s: float
    fault_free: list[FaultFree]
    rank_steps_lost: float
    missing_rank_rounds: int
    tokens_in_theta: float
    goodput: float
    healthy_steps_per_s: float
    fault_free_steps_per_s: float
    goodput_vs_fault_free_seeds: float
    machine_drift: float
    load_average: dict
    theta_mismatches: int | None
    checksums: list[str]
    summaries: int
    eval_loss: float | None
    seed_band: list[float]
    inside_band: bool
    faults: list[dict]
    by_kind: dict[str, KindStats]
    goal: float
    missed: list[str] = dataclasses.field(default_factory=list)


def sync_offsets(a):
    """Each fragment's sync step within a round, from ppu-plan --json for the bench's config."""
    cmd = [os.path.join(a.build, "bin", "ppu-plan"), "--config", os.path.join(SRC, "configs", "tiny.yaml")]
    cmd += [*config(a, 0, os.path.join(a.out, "plan")), "--set", f"ranks={a.ranks}", "--json"]
    plan = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return [f["sync_offset"] for f in plan["fragments"]]


def summaries(work, ranks):
    """The summaries of the ranks that wrote one (python/ppu's Summary), in rank order."""
    out = []
    for r in range(ranks):
        path = files.summary_file(os.path.join(work, "summaries"), r)
        if os.path.exists(path):
            out.append(summary.load(path))
    return out


def fault_free(a, net, seed):
    job, work = launch(a, net, f"fault-free-seed{seed}", seed)
    rc = job.finish(timeout=3600)
    wall = job.ended - job.started
    load = os.getloadavg()
    sums = summaries(work, a.ranks)
    if rc != 0 or len(sums) != a.ranks:
        raise SystemExit(f"fault-free run (seed {seed}) exited {rc}; see {job.log_path}")
    rate = report.step_rate(report.top_steps(job.snapshot()))
    print(f"fault-free seed {seed}: {wall:.1f} s, {rate:.1f} steps/s, eval loss {sums[0].eval_loss:.4f}", flush=True)
    return FaultFree(seed, wall, rate, sums[0].eval_loss, sum(s.tokens for s in sums), load)


def chaos(a, net, plan):
    trigger = os.path.join(a.out, "triggers")
    shutil.rmtree(trigger, ignore_errors=True)
    os.makedirs(trigger)
    job, work = launch(a, net, "chaos", 0, {"PPU_TEST_FAULT_TRIGGER": trigger})
    records = []
    for f in plan:
        while job.running() and job.latest_step() < f.step(a.sync_every):
            time.sleep(0.05)
        if not job.running():
            records.append({"round": f.round, "kind": f.kind, "victims": [f.victim], "skipped": "the job had ended"})
            continue
        step, seen = job.latest_step(), job.count()
        rec = {**faults.inject(f, job, net, trigger, a.heartbeat, schedule.NODE_SIZE), "step": step}
        records.append(rec)
        print(f"injected {f.text()} at step {step}{'; ' + rec['skipped'] if 'skipped' in rec else ''}", flush=True)
        watch = report.RecoveryWatch(rec, a.ranks)
        deadline = time.monotonic() + 240
        while "skipped" not in rec and job.running() and time.monotonic() < deadline:
            new = job.snapshot(seen)
            seen += len(new)
            watch.feed(new)
            if watch.done(settle_s=a.heartbeat, absorb_s=max(30, 10 * a.heartbeat)):
                break
            time.sleep(0.2)
        for name in (f"hang-{f.victim}", f"stall-checkpoint-{f.victim}"):
            leftover = os.path.join(trigger, name)
            if os.path.exists(leftover):  # the victim never reached a step or a write: no fault happened
                os.remove(leftover)
                rec["skipped"] = f"the {name.rsplit('-', 1)[0]} trigger was never taken"
    rc = job.finish(timeout=3600)
    return job, work, rc, records


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    kinds = [k for k in schedule.KINDS if not (a.no_store and k in ("store", "store-stop"))]
    plan = schedule.draw(a.seed, a.rounds, a.every, kinds, a.ranks, a.slices, a.sync_every)
    print(f"K = {a.ranks}, N = {a.slices}, {a.rounds} rounds of H = {a.sync_every}; heartbeat {a.heartbeat} s")
    print(f"fault schedule (seed {a.seed}):")
    for f in plan:
        print(f"  {f.text()}  ({schedule.DESCRIPTION[f.kind]})")
    with RankNetwork(a.ranks) as net:
        free = [fault_free(a, net, seed) for seed in (0, 1, 2)]
        job, work, rc, records = chaos(a, net, plan)
    load = os.getloadavg()
    wall = job.ended - job.started
    sums = summaries(work, a.ranks)
    lines = job.snapshot()
    steps = a.rounds * a.sync_every
    per_rank_step = free[0].tokens / (a.ranks * steps)
    lost = report.rank_steps_lost(lines, a.sync_every, sync_offsets(a), steps)
    effective_steps = steps - lost / a.ranks
    ends = [r.get("at") for r in records[1:]] + [job.ended]
    outcomes = [
        report.fault_outcome(lines, rec, end or job.ended, a.ranks) for rec, end in zip(records, ends, strict=True)
    ]
    samples = report.top_steps(lines)
    span = samples[-1][0] - samples[0][0]
    healthy_rate = report.step_rate(samples, report.fault_windows(outcomes))
    free_rate = sum(f.steps_per_s for f in free) / len(free)
    spread = max(f.eval_loss for f in free) - min(f.eval_loss for f in free)
    band = [free[0].eval_loss - spread, free[0].eval_loss + spread]
    loss = sums[0].eval_loss if sums else None
    result = Result(
        command=" ".join(sys.argv),
        ranks=a.ranks,
        slices=a.slices,
        rounds=a.rounds,
        sync_every=a.sync_every,
        heartbeat_s=a.heartbeat,
        exit_code=rc,
        gang_restarts=sum("restarting the gang" in line for _t, line in lines),
        restarts_in_place=sum("restarting it in place" in line for _t, line in lines),
        wall_s=wall,
        fault_free=free,
        rank_steps_lost=lost,
        missing_rank_rounds=report.missing_rank_rounds(sums),
        tokens_in_theta=effective_steps * a.ranks * per_rank_step,
        goodput=effective_steps / (span * healthy_rate),
        healthy_steps_per_s=healthy_rate,
        fault_free_steps_per_s=free_rate,
        goodput_vs_fault_free_seeds=effective_steps / (span * free_rate),
        machine_drift=healthy_rate / free_rate - 1,
        load_average={"fault_free_seed0": free[0].load, "chaos": load},
        theta_mismatches=max((s.recovery.theta_mismatches for s in sums), default=None),
        checksums=sorted({s.param_checksum for s in sums}),
        summaries=len(sums),
        eval_loss=loss,
        seed_band=band,
        inside_band=loss is not None and band[0] <= loss <= band[1],
        faults=outcomes,
        by_kind=by_kind(outcomes),
        goal=a.goal,
    )
    result.missed = missed_goals(result)
    with open(os.path.join(a.out, "chaos.json"), "w") as f:
        json.dump(dataclasses.asdict(result), f, indent=2)
    print_table(result)
    if result.missed:
        print("chaos: goals missed: " + "; ".join(result.missed))
        sys.exit(1)
    print("chaos: every goal met")


def missed_goals(r):
    """The bench's goals, each a sentence when missed."""
    missed = []
    if r.exit_code != 0:
        missed.append(f"ppu-launch exited {r.exit_code}")
    if r.gang_restarts != 0:
        missed.append(f"{r.gang_restarts} gang restarts (goal 0)")
    if r.theta_mismatches != 0:
        missed.append(f"{r.theta_mismatches} θ mismatches (goal 0)")
    if not r.inside_band:
        missed.append(f"final eval loss {r.eval_loss} outside the fault-free band {r.seed_band}")
    if r.goodput < r.goal:
        missed.append(f"goodput {r.goodput:.3f} below {r.goal}")
    return missed


def by_kind(outcomes):
    """Per fault kind: how many were injected, and the mean seconds to fenced, re-formed, full strength."""
    out = {}
    for kind in schedule.KINDS:
        done = [o for o in outcomes if o["kind"] == kind and "skipped" not in o]
        if not done:
            continue

        def mean(key, done=done):
            xs = [o[key] for o in done if o[key] is not None]
            return sum(xs) / len(xs) if xs else None

        out[kind] = KindStats(
            faults=len(done),
            fenced_s=mean("fenced_s"),
            reform_s=mean("reform_s"),
            recovered_s=mean("recovered_s"),
            gang_restarts=sum(o["gang_restarts"] for o in done),
        )
    return out


def fmt(x):
    return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)


def print_table(r):
    print("\n| round | at step | fault | victims | fenced (s) | re-formed (s) | full strength (s) | restarts | gang |")
    print("|---|---|---|---|---|---|---|---|---|")
    for o in r.faults:
        if "skipped" in o:
            print(
                f"| {o['round']} | {fmt(o['step'])} | {o['kind']} | {o['victims']} | skipped: {o['skipped']} | | | | |"
            )
            continue
        print(
            f"| {o['round']} | {fmt(o['step'])} | {o['kind']} | {o['victims']} | {fmt(o['fenced_s'])} | {fmt(o['reform_s'])} "
            f"| {fmt(o['recovered_s'])} | {o['restarts_in_place']} | {o['gang_restarts']} |"
        )
    print("\n| fault kind | injected | fenced (s) | re-formed (s) | full strength (s) | gang restarts |")
    print("|---|---|---|---|---|---|")
    for kind, k in r.by_kind.items():
        print(
            f"| {kind} | {k.faults} | {fmt(k.fenced_s)} | {fmt(k.reform_s)} | {fmt(k.recovered_s)} | {k.gang_restarts} |"
        )
    print(
        f"\nexit code {r.exit_code}; gang restarts {r.gang_restarts} (goal 0); restarts in place {r.restarts_in_place}"
    )
    print(
        f"goodput {r.goodput:.3f} (goal >= {r.goal}): {r.tokens_in_theta:.0f} tokens in θ "
        f"({r.rank_steps_lost:.0f} rank-steps lost; {r.missing_rank_rounds} rank-rounds in the summaries' degraded "
        f"spans) against the run's healthy rate, {r.healthy_steps_per_s:.1f} steps/s"
    )
    print(
        f"against the fault-free seeds' rate ({r.fault_free_steps_per_s:.1f} steps/s, measured before the chaos run): "
        f"{r.goodput_vs_fault_free_seeds:.3f}; the machine ran {100 * r.machine_drift:+.1f} % faster in the chaos "
        f"run's healthy stretches (1-min load average at the end: fault-free seed 0 "
        f"{r.load_average['fault_free_seed0'][0]:.1f}, chaos {r.load_average['chaos'][0]:.1f}); wall {r.wall_s:.1f} s "
        f"vs the seeds' {sum(f.wall_s for f in r.fault_free) / len(r.fault_free):.1f} s"
    )
    print(f"θ mismatches {r.theta_mismatches} (goal 0); final checksums {r.checksums} over {r.summaries} summaries")
    print(
        f"eval loss {fmt(r.eval_loss)}, fault-free band (seed 0 -/+ the seeds' range) "
        f"[{r.seed_band[0]:.4f}, {r.seed_band[1]:.4f}]: "
        f"{'inside' if r.inside_band else 'OUTSIDE'}"
    )


if __name__ == "__main__":
    main()
