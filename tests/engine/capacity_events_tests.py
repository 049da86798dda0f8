"""Cheap capacity's everyday events (docs/RECOVERY.md, "Notices" and "Nothing hangs") with real
processes under ppu-launch: a notice to the whole job or to one rank, every rank lost at once, a
rank stopped for good, a frozen store. Each case fails without the fix it names.

usage: capacity_events_tests.py BIN_DIR SOURCE_DIR CASE
cases: notice-job  SIGTERM to ppu-launch mid-round (checkpoint.every_rounds = 100, so no scheduled
                   checkpoint exists): every rank trains to the round boundary, the job saves that
                   round's checkpoint and exits 143 well within checkpoint.notice_s; no round is
                   lost (the checkpoint's round is the one the notice fell in); the rerun resumes
                   from it and ends with the uninterrupted run's checksum, bit for bit; under
                   network.recovery live and gang (before: ppu-train _Exit'ed at once and the rerun
                   started from step 0)
       notice-bound a notice whose round does not end within checkpoint.notice_s (0.5 s, rounds of
                   2 s): every rank leaves at the bound saying so, exit 143, no checkpoint written
       notice-rank SIGTERM to rank 1 of a live job: it leaves at the round boundary and the others
                   re-form without it at once (no heartbeat window waited, nobody names it silent),
                   count the fault as "preempted", take its replacement back; exit 0, one checksum
                   (before: the others found it gone only through a failed collective)
       all-killed  every ppu-train process SIGKILLed at once, the store alive: the replacements find
                   no live member and the job restarts as a gang from its latest checkpoint within
                   seconds, then finishes; without checkpoint.dir the job ends with exit 2 naming
                   the key instead of training again from step 0 (before: four replacements waited
                   for a group that no longer existed, for ever)
       stopped-forever rank 1 SIGSTOPped and never continued, rounds of 10 short steps: ppu-launch
                   ends it (--kill-stopped-after), it is replaced and rejoins; no gang restart
                   although more than network.max_degraded_rounds = 2 rounds pass degraded (its
                   floor network.max_degraded_s holds); exit 0, one checksum (before: the stopped
                   process was left alone and the survivors restarted the gang after the rounds)
       frozen-store one watch process asks the store for 3 s (not a process per probe); then the
                   store is SIGSTOPped: ppu-launch's watch finds it frozen, it is SIGKILLed and
                   started again, the ranks rebuild its keys; no gang restart, exit 0, one
                   checksum (before: ppu-launch only waitpid'ed, and the ranks waited for the
                   store until network.timeout_s)
       checkpoint-stall rank 2's checkpoint write stalls for good (PPU_TEST_FAULT stall-checkpoint;
                   checkpoint.write_timeout_s = 2): past the bound it stops beating, the others
                   fence it and write the round without it, it exits 5 and is replaced; no gang
                   restart (before: the write counted as progress for ever and the job hung)
       disk-full   the checkpoint directory a tmpfs with room for one checkpoint: later rounds cannot
                   be written; each is logged and counted (recovery.checkpoints_failed), training
                   goes on to exit 0, and the disk holds round 10's checkpoint alone; live and gang
                   (before: the first failed write ended the rank, exit 1)
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from launch_harness import (
    Launch,
    events,
    fail,
    fault_count,
    no_gang_restart,
    one_checksum,
    plain,
    rank_pids,
    store_pid,
    store_watches,
    tiny_job,
)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ppu import files
from ppu.exit_codes import ExitCode, left_on_notice

BIN, SRC, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
H = 10
HEARTBEAT_S = 2.0
JOB = tiny_job(SRC, H, HEARTBEAT_S)
# A pause before each inner step: the runs outlast the events on any CPU.
PAUSED = dict(os.environ, PPU_TEST_STEP_PAUSE_MS="5")


def job(work, steps, recovery="live", extra=(), restarts=1, env=PAUSED):
    settings = ["--set", f"train.steps={steps}", "--set", f"network.recovery={recovery}", *extra]
    return Launch(work, [LAUNCH, *JOB, *settings, "--max-restarts", str(restarts)], env=env)


def work(name):
    return tempfile.mkdtemp(prefix=f"ppu-capacity-{name}-")


def case_notice_job():
    steps = 300
    for recovery in ("live", "gang"):
        reference = job(work(f"ref-{recovery}"), steps, recovery, restarts=0)
        if reference.finish() != 0:
            fail(f"uninterrupted {recovery} run failed:\n{events(reference.text())}")
        expected = one_checksum(reference)
        ckpt = tempfile.mkdtemp(prefix=f"ppu-capacity-notice-{recovery}-ckpt-")
        saving = ["--set", f"checkpoint.dir={ckpt}", "--set", "checkpoint.every_rounds=100"]
        run = job(work(f"notice-{recovery}"), steps, recovery, saving, restarts=0)
        run.wait_for(r"\[rank 0\] .* step 153/")
        noticed_round = 153 // H + 1  # the round rank 0 was in when told
        sent = time.monotonic()
        run.proc.send_signal(signal.SIGTERM)
        rc = run.finish(timeout=60)
        took = time.monotonic() - sent
        log = run.text()
        if rc != left_on_notice(signal.SIGTERM) or "a notice for the whole job" not in log:
            fail(f"{recovery}: SIGTERM to ppu-launch: exited {rc}, want {ExitCode.LEFT_ON_SIGTERM}\n{events(log)}")
        left = re.findall(rf"\[launch\] rank (\d) exited with code {ExitCode.LEFT_ON_SIGTERM}", log)
        if sorted(left) != ["0", "1", "2", "3"]:
            fail(f"{recovery}: not every rank left on the notice with {ExitCode.LEFT_ON_SIGTERM}:\n{events(log)}")
        saved = files.rounds_in(ckpt)
        if len(saved) != 1 or not noticed_round <= saved[0] <= noticed_round + 1:
            fail(f"{recovery}: notice in round {noticed_round}: checkpoints of rounds {saved}, want that round's")
        if took > 25:
            fail(f"{recovery}: the job took {took:.1f} s to act on the notice (checkpoint.notice_s = 25)")
        rerun = job(work(f"resume-{recovery}"), steps, recovery, saving, restarts=0)
        rc = rerun.finish()
        text = rerun.text()
        if rc != 0 or f"resumed from {ckpt}/{files.round_dir(saved[0])}" not in text:
            fail(f"{recovery}: the rerun did not resume from round {saved[0]}: exit {rc}\n{events(text)}")
        said = rerun.summary(0).recovery
        if said.resumed_after_notice != saved[0]:
            fail(f"{recovery}: the rerun's summary does not say it resumed from the notice's round {saved[0]}")
        stop = said.interruptions[-1] if said.interruptions else None
        if said.stops != 1 or said.rounds_lost != 0 or not stop_is(stop, "notice", saved[0], 0, round_=saved[0]):
            fail(f"{recovery}: the rerun's summary does not say the notice cost no round: {plain(said.interruptions)}")
        if one_checksum(rerun) != expected:
            fail(f"{recovery}: resumed after the notice: checksum {one_checksum(rerun)} != uninterrupted {expected}")
        print(
            f"{recovery}: notice in round {noticed_round}, state saved at round {saved[0]} ({took:.1f} s), "
            f"resumed bit for bit ({expected})"
        )


def case_notice_bound():
    ckpt = tempfile.mkdtemp(prefix="ppu-capacity-bound-ckpt-")
    settings = ["--set", f"checkpoint.dir={ckpt}", "--set", "checkpoint.every_rounds=100"]
    settings += ["--set", "checkpoint.notice_s=0.5"]
    run = job(work("bound"), 400, "live", settings, restarts=0, env=dict(os.environ, PPU_TEST_STEP_PAUSE_MS="200"))
    run.wait_for(r"\[rank 0\] .* step 3/")
    run.proc.send_signal(signal.SIGTERM)
    rc = run.finish(timeout=60)
    log = run.text()
    said_why = re.findall(r"no round boundary was reached \(checkpoint\.notice_s = 0\.5\)", log)
    if rc != ExitCode.LEFT_ON_SIGTERM or len(said_why) != 4:
        fail(
            f"a round longer than checkpoint.notice_s: exited {rc}, want {ExitCode.LEFT_ON_SIGTERM} with every rank "
            f"saying why\n{events(log)}"
        )
    left = re.findall(rf"\[launch\] rank (\d) exited with code {ExitCode.LEFT_ON_SIGTERM}", log)
    if sorted(left) != ["0", "1", "2", "3"]:
        fail(f"not every rank left with {ExitCode.LEFT_ON_SIGTERM}:\n{events(log)}")
    if files.rounds_in(ckpt):
        fail(f"a checkpoint was written past the bound: {files.rounds_in(ckpt)}")


def case_notice_rank():
    run = job(work("notice-rank"), 600)
    run.wait_for(r"\[rank 0\] .* step 50/")
    before = rank_pids(run.proc.pid)
    os.kill(before[1], signal.SIGTERM)
    run.wait_for(rf"rank 1 exited with code {ExitCode.LEFT_ON_SIGTERM}: restarting it in place")
    run.wait_for(r"rank\(s\) \[1\] left on notice in round \d+ \(step \d+\): generation \d+ has ranks \[0,2,3\]")
    run.wait_for(r"rank\(s\) \[1\] rejoined in round")
    rc = run.finish()
    log = run.text()
    no_gang_restart(run, rc, "SIGTERM to rank 1")
    if "rank 1 left the live group at the end of round" not in log:
        fail(f"rank 1 did not say it left on its notice:\n{events(log)}")
    if "rank 1 has sent no heartbeat" in log or "lost rank(s) [1]" in log:
        fail(f"the others waited for rank 1 to fall silent instead of letting it go:\n{events(log)}")
    reform = [float(s) for s in re.findall(r"left on notice in round .*\(([0-9.]+) s to re-form\)", log)]
    if not reform or max(reform) >= HEARTBEAT_S:
        fail(f"re-forming without the leaver took {reform} s (a heartbeat window is {HEARTBEAT_S} s)")
    survivor = run.summary(0)
    if fault_count(survivor, "preempted") != 1:
        fail(f"the survivors' faults {plain(survivor.recovery.faults)} do not count one 'preempted'")
    print(f"rank 1 left on notice, re-formed without it in {max(reform):.3f} s, taken back; {one_checksum(run)}")


def stop_is(stop, kind, resumed_round, rounds_lost, round_=None):
    """Interruption `stop` (of recovery.interruptions; None: there was none) is of `kind`, lost
    `rounds_lost` rounds resuming at `resumed_round`, stopped in round `round_` where given, and
    names no rank."""
    return (
        stop is not None
        and stop.kind == kind
        and stop.resumed_round == resumed_round
        and stop.rounds_lost == rounds_lost
        and (round_ is None or stop.round == round_)
        and stop.ranks == []
    )


def kill_every_rank(run):
    pids = rank_pids(run.proc.pid)
    if sorted(pids) != [0, 1, 2, 3]:
        fail(f"expected ranks 0-3 under ppu-launch, found {pids}")
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)


def case_all_killed():
    ckpt = tempfile.mkdtemp(prefix="ppu-capacity-all-ckpt-")
    run = job(work("all"), 600, extra=["--set", f"checkpoint.dir={ckpt}", "--set", "checkpoint.every_rounds=2"],
              restarts=6)  # fmt: skip
    run.wait_for(r"\[rank 0\] .* step 100/")
    killed = time.monotonic()
    kill_every_rank(run)
    run.wait_for(r"restarting the gang", timeout=60)
    run.wait_for(r"resumed from .* at step", timeout=60)
    resumed = time.monotonic() - killed
    rc = run.finish(timeout=180)
    log = run.text()
    if rc != 0:
        fail(f"every rank killed: exited {rc}\n{events(log)}")
    if "every member of the live group is gone" not in log:
        fail(f"no replacement said why it gave up:\n{events(log)}")
    step = int(re.search(r"resumed from .* at step (\d+)", log).group(1))
    if step < 80:
        fail(f"resumed at step {step}: not from the latest checkpoint before the loss (step 100)")
    # What the loss cost: the rounds between where the job had got (round 10, rank 0's step 100
    # logged) and the checkpoint it resumed from (every 2 rounds), in every rank's summary.
    for rank in range(4):
        said = run.summary(rank).recovery
        stop = said.interruptions[-1] if said.interruptions else None
        lost = (stop.round if stop else 0) - step // H
        if (
            said.stops != 1
            or not stop_is(stop, "restart", step // H, lost)
            or not 9 <= stop.round <= 12
            or said.rounds_lost > 3
        ):
            fail(f"rank {rank}: the summary does not say what losing every rank cost: {plain(said.interruptions)}")
    print(f"the loss cost {stop.rounds_lost} round(s): reached {stop.round}, resumed from {stop.resumed_round}")
    print(f"every rank killed at step 100: gang restart from step {step}, {resumed:.1f} s after the loss")
    # Without a checkpoint directory the same loss ends the job with a clear error.
    run = job(work("all-none"), 600, restarts=6)
    run.wait_for(r"\[rank 0\] .* step 100/")
    kill_every_rank(run)
    rc = run.finish(timeout=120)
    log = run.text()
    if rc != ExitCode.CONFIG_ERROR or "no checkpoint.dir" not in log or "restarting the gang" in log:
        fail(
            f"every rank killed, no checkpoint.dir: exited {rc}, want {ExitCode.CONFIG_ERROR} naming the key, no "
            f"restart\n{events(log)}"
        )


def case_stopped_forever():
    # max_degraded_rounds 2: the rounds bound alone would fall back within the stop's first
    # seconds; network.max_degraded_s (300 s by default) must hold it.
    run = job(work("stopped"), 2000, extra=["--set", "network.max_degraded_rounds=2"])
    run.wait_for(r"\[rank 0\] .* step 100/")
    os.kill(rank_pids(run.proc.pid)[1], signal.SIGSTOP)
    run.wait_for(r"lost rank\(s\) \[1\] in round")
    run.wait_for(r"rank 1 has been stopped for more than [0-9.]+ s \(--kill-stopped-after\)")
    run.wait_for(r"rank 1 exited with code 137: restarting it in place")
    run.wait_for(r"rank\(s\) \[1\] rejoined in round")
    rc = run.finish()
    no_gang_restart(run, rc, "rank 1 stopped for good")
    degraded = run.summary(0).recovery.rounds_degraded
    if degraded <= 2:
        fail(f"only {degraded} rounds degraded: the test no longer shows that the rounds bound alone is not used")
    print(f"rank 1 stopped: ended by ppu-launch, replaced; {degraded} rounds degraded, no gang restart")


def case_frozen_store():
    run = job(work("frozen-store"), 1500, restarts=0)
    run.wait_for(r"\[rank 0\] .* step 100/")
    # One watch process asks the store all along (LibTorch loaded once), not one process a probe.
    watches = set()
    for _ in range(30):
        watches.update(store_watches(run.proc.pid))
        time.sleep(0.1)
    if len(watches) != 1:
        fail(f"ppu-launch ran {len(watches)} store watch processes in 3 s, expected one: {sorted(watches)}")
    os.kill(store_pid(run.proc.pid), signal.SIGSTOP)
    frozen = time.monotonic()
    run.wait_for(r"the rendezvous store has not answered two probes in a row", timeout=60)
    run.wait_for(r"the rendezvous store exited with code 137: restarting it", timeout=30)
    found = time.monotonic() - frozen
    rc = run.finish()
    no_gang_restart(run, rc, "a frozen store")  # with no restarts: no rank process failed either
    print(f"store frozen: found and restarted after {found:.1f} s; one checksum {one_checksum(run)}")


def case_checkpoint_stall():
    ckpt = tempfile.mkdtemp(prefix="ppu-capacity-stall-ckpt-")
    settings = ["--set", f"checkpoint.dir={ckpt}", "--set", "checkpoint.every_rounds=5"]
    settings += ["--set", "checkpoint.write_timeout_s=2"]
    env = dict(PAUSED, PPU_TEST_FAULT="stall-checkpoint:2:100")
    run = job(work("stall"), 800, extra=settings, env=env)
    run.wait_for(r"the checkpoint write of rank 2 at step 100 stalls")
    stalled = time.monotonic()
    run.wait_for(r"\[rank 2\] .*this rank's checkpoint write has gone on past checkpoint\.write_timeout_s = 2 s")
    run.wait_for(rf"rank 2 exited with code {ExitCode.REJOIN}: restarting it in place")
    fenced = time.monotonic() - stalled
    run.wait_for(r"checkpoint round 10 written to .* with rank\(s\) \[2\] missing")
    run.wait_for(r"rank\(s\) \[2\] rejoined in round")
    rc = run.finish()
    no_gang_restart(run, rc, "a stalled checkpoint write")
    print(f"rank 2's checkpoint write stalled: fenced and replaced after {fenced:.1f} s, round 10 written without it")


def case_disk_full():
    # A checkpoint of this job is about 5.5 MB: the first round fits in 8 MiB, the next does not.
    ckpt = tempfile.mkdtemp(prefix="ppu-capacity-full-ckpt-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", ckpt], check=True)
    try:
        for recovery in ("live", "gang"):
            subprocess.run(["find", ckpt, "-mindepth", "1", "-delete"], check=True)
            settings = ["--set", f"checkpoint.dir={ckpt}", "--set", "checkpoint.every_rounds=10"]
            run = job(work(f"full-{recovery}"), 400, recovery, settings, restarts=0)
            rc = run.finish()
            log = run.text()
            if rc != 0:
                fail(f"{recovery}: a full checkpoint disk stopped training: exit {rc}\n{events(log)}")
            failed = run.summary(0).recovery.checkpoints_failed
            if failed != 3 or "the checkpoint of round 10 stays the resume point" not in log:
                fail(f"{recovery}: rounds 20, 30, 40 unwritable: {failed} counted\n{events(log)}")
            # Nothing half-written is left: round 10's checkpoint and the job's reached note.
            held = sorted(os.listdir(ckpt))
            if files.rounds_in(ckpt) != [10] or held != sorted([files.round_dir(10), files.REACHED_NOTE]):
                fail(f"{recovery}: the disk holds {held}, want round 10's checkpoint and the reached note alone")
            print(f"{recovery}: disk full after round 10: {failed} rounds not written, training went on, exit 0")
    finally:
        subprocess.run(["umount", ckpt], check=False)


{
    "notice-job": case_notice_job,
    "notice-bound": case_notice_bound,
    "notice-rank": case_notice_rank,
    "all-killed": case_all_killed,
    "stopped-forever": case_stopped_forever,
    "frozen-store": case_frozen_store,
    "checkpoint-stall": case_checkpoint_stall,
    "disk-full": case_disk_full,
}[CASE]()
print("PASS", CASE)
