"""Live recovery (network.recovery=live, docs/RECOVERY.md) with real processes under ppu-launch.

usage: live_recovery_tests.py BIN_DIR SOURCE_DIR CASE
cases: kill-each-rank  an uninterrupted live run ends with the gang run's bits; then
                   kill -9 rank 0, a middle rank and the last rank of a 4-rank PPU run
                   (N = 2) at a random step, --max-restarts 1: only the killed rank is started
                   again, the others keep their processes; the run completes; the log names the
                   round each rank was lost and rejoined; the final eval loss differs from the
                   same seed's uninterrupted run by less than the spread of uninterrupted runs
                   over seeds 0, 1, 2 (max - min of their eval losses, measured in the test);
                   a survivor's summary names the fault "killed"
       boundaries  kill -9 a rank (1, 2, 3, then 0) just as another rank logs a round boundary's
                   step, four times in one run: a rank can die while the others are in different
                   collectives of the boundary (one completed an all-gather that another saw
                   fail); each is taken back, and the run ends with one checksum on every rank
       between-boundaries  rounds of H = 600 steps (3 fragments: sync points at steps 200, 400 and
                   the boundary 600), 10 ms a step: rank 1 killed at step 20 is taken back at a
                   fragment's sync point inside the round, not at the boundary (it waited for the
                   boundary before, and the work from its predecessor's last syncs to there was
                   lost); one checksum, no gang restart
       frozen      SIGSTOP a rank: the others name it within network.heartbeat_s and re-form
                   without it; after SIGCONT it finds the group gone on (exit 5, "out of the
                   live group"), is restarted, rejoins, and every rank ends with one checksum;
                   a survivor's summary names the fault "stopped"
       late-replacement  a rank killed after the last sync point that takes replacements back:
                   the job finishes without it, and the replacement reports the job's result
       hung        rank 2's training thread hangs at step 40 (PPU_TEST_FAULT; its process, heartbeat
                   thread and sockets stay up): past its progress window it stops beating and
                   exits 5, is restarted alone and rejoins; no other process changes, and every
                   rank ends with one checksum (before progress was watched, the survivors
                   waited network.timeout_s twice and the gang restarted); a survivor's summary
                   names the fault "hung"
       second-loss rank 1 killed, then rank 2 killed the moment a survivor starts re-forming
                   without rank 1 (a loss during a recovery): both are taken back, nothing exits
                   3 and the gang is never restarted, and re-forming never waits for
                   network.timeout_s (60 s here; a member that died while the Gloo group formed
                   used to hold the others that long, then exit 3)
       lost-for-good rank 3 killed with no restarts left: the job finishes without it, the
                   survivors' summaries count the degraded rounds, and ppu-launch exits with the
                   lost rank's code (137), not 0
       store-restart  the rendezvous store SIGKILLed twice mid-run (ppu-launch starts it again on its
                   port, empty): the ranks rebuild its keys and go on; no rank process changes, no
                   gang restart, the summaries count the restarts (recovery.faults.store),
                   and the final parameters are bit-identical to the same seed's uninterrupted run
                   (a store restart loses no exchange and changes no bit)
       store-during-recovery  rank 1 SIGKILLed, then the store SIGKILLed the moment a survivor starts
                   re-forming without rank 1 (a fault during a recovery): the group re-forms in the
                   new store, rank 1 is taken back, nothing exits 3, every rank ends with one checksum
       store-and-rank  the store and rank 1 SIGKILLed together: ppu-launch starts both again at once,
                   so the replacement meets a new, empty store before any member has written its
                   account there; it must wait for the members' accounts and join as a replacement
                   (it used to take itself for a first rank, wait for generation 0 and exit)
       fallback    ranks 0 and 2 (both owners of slice 0) killed, no restarts: the survivors
                   exit 3 once the slice has had no live owner for more than
                   network.max_uncovered_rounds rounds; one rank killed with
                   network.min_live_fraction = 0.9 and no checkpoint.dir: they exit 2 at once,
                   naming checkpoint.dir, instead of a gang restart that would start from step 0
       degraded-checkpoint  rank 3 lost for good: every checkpoint after the loss still holds four
                   parts, rank 3's written by rank 1 (its slice's live co-owner); a gang restart
                   from the last one resumes the digests of θ + momentum and of each live rank's
                   inner state that the live job logged as it wrote it, rank 3 resumes rank 1's
                   inner state, and the final checksum is the live job's; a restart from an
                   earlier degraded checkpoint trains on to the end with one checksum
       degraded-bound  rank 3 lost with network.max_degraded_rounds = 2 (max_degraded_s = 0: rounds
                   alone): after 3 degraded rounds
                   the survivors exit 3 naming the key, after writing that round's checkpoint;
                   the gang restart resumes from it and names the fallback in its summary
       coowner-state  rank 2 killed and replaced: with replacement_inner_state coowner the
                   replacement's inner state has the digest rank 0 (its slice's co-owner) logged
                   sending it; with fresh nobody sends one
       network-blip every rank in a network namespace of its own (tests/engine/rank_netns.py,
                   ppu-launch --rank-wrapper); rank 2's link is cut for 2 x network.heartbeat_s,
                   then restored (2000 steps, H = 200, PPU_TEST_STEP_PAUSE_MS=5 so that the run
                   outlasts the recovery on any CPU): rank 2 is fenced (the others re-form without it), replaced
                   alone and rejoins; no gang restart, exit 0, every rank ends with one checksum,
                   and no namespace, veth or bridge of the test is left; a survivor's summary
                   names the fault "unreachable" (so do the other cut cases)
       cut-past-timeout  the same namespaces; rank 1's link is cut for 26 s, more than twice
                   network.timeout_s = 8 (a collective's wait, then the store's): it cannot reach
                   the store past the timeout, exits 5 and is replaced alone (at most three times:
                   a replacement may start while the link is down);
                   no gang restart, one checksum
       partition   the same namespaces; ranks 1 and 2 cannot reach each other while both reach
                   the store and the others (rank_netns.py's partition): one of them (rank 2) is
                   left out while the partition holds, well before network.timeout_s (60 s); its
                   replacement waits until it reaches every member, and rejoins once healed; no
                   gang restart, a survivor names the fault "unreachable", one checksum
       cut-during-sync  the same namespaces; rank 0 arrives 4 s late at a round boundary
                   (PPU_TEST_FAULT=late:0:399:4000), and rank 1's link is cut while rank 1 waits
                   for it in the outer sync, for 8 s (longer than a store request may take, so
                   rank 1's connection to the store is lost): the others fence rank 1 and re-form;
                   once the link is back rank 1 must hear it (its abort probe asks through a new
                   connection) and be replaced within 60 s, not wait in the old group's
                   collective for network.timeout_s (300 s); no gang restart, exit 0, one checksum
"""

import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

from launch_harness import (
    Launch,
    events,
    fail,
    fault_count,
    fault_named,
    no_gang_restart,
    one_checksum,
    plain,
    rank_pids,
    store_pid,
    tiny_job,
)
from rank_netns import RankNetwork

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ppu import files
from ppu.exit_codes import ExitCode

BIN, SRC, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
STEPS = 200
HEARTBEAT_S = 2.0
LIVE = [*tiny_job(SRC, 10, HEARTBEAT_S), "--set", f"train.steps={STEPS}", "--set", "network.recovery=live"]


class Run(Launch):
    """The live job of this file (LIVE, plus `extra`) under ppu-launch with `restarts`."""

    def __init__(self, work, extra=(), restarts=1, env=None, prefix=()):
        super().__init__(work, [*prefix, LAUNCH, *LIVE, *extra, "--max-restarts", str(restarts)], env=env)


def uninterrupted(seed, recovery="live"):
    work = tempfile.mkdtemp(prefix=f"ppu-{recovery}-seed{seed}-")
    run = Run(work, ["--set", f"train.seed={seed}", "--set", f"network.recovery={recovery}"], restarts=0)
    if run.finish() != 0:
        fail(f"uninterrupted run (seed {seed}, {recovery}) failed:\n{events(run.text())}")
    return run.summary(0)


def case_kill_each_rank():
    # Without a failure, live recovery changes nothing: the same bits as the gang policy.
    live, gang = uninterrupted(0), uninterrupted(0, "gang")
    if live.param_checksum != gang.param_checksum:
        fail(f"uninterrupted live run {live.param_checksum} != gang run {gang.param_checksum}")
    losses = {0: live.eval_loss, **{seed: uninterrupted(seed).eval_loss for seed in (1, 2)}}
    spread = max(losses.values()) - min(losses.values())
    print(f"uninterrupted eval loss by seed {losses}; spread {spread:.4f}")
    for victim in (0, 1, 3):
        run = Run(tempfile.mkdtemp(prefix=f"ppu-live-kill{victim}-"))
        step = random.randint(12, STEPS * 3 // 4)
        watched = 1 if victim == 0 else 0
        run.wait_for(rf"\[rank {watched}\] .* step {step}/")
        before = rank_pids(run.proc.pid)
        if sorted(before) != [0, 1, 2, 3]:
            fail(f"expected ranks 0-3 under ppu-launch, found {before}")
        os.kill(before[victim], signal.SIGKILL)
        run.wait_for(rf"rank {victim} exited with code 137: restarting it in place")
        run.wait_for(rf"rank\(s\) \[{victim}\] rejoined in round")
        after = rank_pids(run.proc.pid)
        for r in (0, 1, 2, 3):
            if r != victim and after.get(r) != before[r]:
                fail(f"rank {r} has process {after.get(r)}, was {before[r]}: restarted though rank {victim} died")
        if after.get(victim) in (None, before[victim]):
            fail(f"rank {victim} was not started again ({after})")
        rc = run.finish()
        log = run.text()
        if rc != 0:
            fail(f"kill rank {victim}: ppu-launch exited {rc}\n{events(log)}")
        lost = re.search(rf"\[rank \d\] .*lost rank\(s\) \[{victim}\] in round (\d+) \(step (\d+)\)", log)
        rejoined = re.search(rf"\[rank {victim}\] .*rank {victim} rejoined in round (\d+) \(step (\d+)\)", log)
        if not lost or not rejoined:
            fail(f"the log does not name the round rank {victim} was lost and rejoined:\n{events(log)}")
        if log.count("restarting it in place") != 1:
            fail("more than one rank was restarted")
        sums = [run.summary(r) for r in range(4)]
        checksums = {s.param_checksum for s in sums}
        if len(checksums) != 1:
            fail(f"ranks disagree on the final parameters: {checksums}")
        fault_named(run, watched, "killed", f"rank {victim} SIGKILLed")
        survivor = sums[watched].recovery
        if survivor.recoveries < 1 or survivor.rejoins < 1 or survivor.live_ranks != 4:
            fail(f"survivor's recovery summary {plain(survivor)}")
        if sums[victim].recovery.rejoined_at_step <= 0:
            fail(f"the replacement's summary {plain(sums[victim].recovery)}")
        loss = sums[0].eval_loss
        print(
            f"rank {victim} killed at step {step}: lost in round {lost.group(1)}, rejoined in round "
            f"{rejoined.group(1)} (step {rejoined.group(2)}); eval loss {loss:.4f} vs {losses[0]:.4f} uninterrupted"
        )
        if abs(loss - losses[0]) > spread:
            fail(f"eval loss {loss:.4f} is {abs(loss - losses[0]):.4f} from the uninterrupted run's, above the spread")


def case_boundaries():
    # 1000 steps: after the last kill, time enough for a replacement to start under load.
    run = Run(tempfile.mkdtemp(prefix="ppu-live-boundaries-"), ["--set", "train.steps=1000"], restarts=4)
    pids = {}
    for kill, (victim, step) in enumerate([(1, 30), (2, 70), (3, 110), (0, 150)], start=1):
        watched = 1 if victim == 0 else 0
        run.wait_for(rf"\[rank {watched}\] .* step {step}/")
        pids = rank_pids(run.proc.pid)
        os.kill(pids[victim], signal.SIGKILL)
        run.wait_for(rf"rank {victim} exited with code 137: restarting it in place \({kill} of 4")
        run.wait_for(rf"rank\(s\) \[{victim}\] rejoined in round")
        after = rank_pids(run.proc.pid)
        for r in pids:
            if r != victim and after.get(r) != pids[r]:
                fail(f"rank {r} has process {after.get(r)}, was {pids[r]}: restarted though rank {victim} died")
    rc = run.finish()
    log = run.text()
    if rc != 0:
        fail(f"ppu-launch exited {rc}\n{events(log)}")
    if log.count("restarting it in place") != 4:
        fail(f"expected 4 restarts in place:\n{events(log)}")
    checksums = {run.summary(r).param_checksum for r in range(4)}
    if len(checksums) != 1:
        fail(f"ranks disagree on the final parameters: {checksums}")
    print(f"4 ranks killed at round boundaries, each taken back; one checksum {checksums.pop()}")


def case_between_boundaries():
    h = 600
    extra = ["--set", f"outer.sync_every={h}", "--set", f"train.steps={2 * h}"]
    run = Run(tempfile.mkdtemp(prefix="ppu-live-between-"), extra, env=dict(os.environ, PPU_TEST_STEP_PAUSE_MS="10"))
    run.wait_for(r"\[rank 0\] .* step 20/")
    os.kill(rank_pids(run.proc.pid)[1], signal.SIGKILL)
    run.wait_for(r"rank\(s\) \[1\] rejoined in round", timeout=120)
    rc = run.finish()
    no_gang_restart(run, rc, "rank 1 killed at step 20")
    log = run.text()
    joined = re.search(r"\[rank 1\] .*rank 1 rejoined in round \d+ \(step (\d+)\)", log)
    if not joined or int(joined.group(1)) % h == 0:
        fail(f"rank 1's replacement rejoined at {joined and joined.group(0)}: want a fragment's sync point "
             f"(step 200 or 400), not a round boundary\n{events(log)}")  # fmt: skip
    print(f"rank 1 killed at step 20, taken back at step {joined.group(1)}; one checksum {one_checksum(run)}")


def case_frozen():
    run = Run(tempfile.mkdtemp(prefix="ppu-live-frozen-"))
    run.wait_for(r"\[rank 0\] .* step 30/")
    pids = rank_pids(run.proc.pid)
    os.kill(pids[2], signal.SIGSTOP)
    stopped = time.monotonic()
    run.wait_for(r"lost rank\(s\) \[2\] in round")
    named = re.findall(r"rank 2 has sent no heartbeat for ([0-9.]+) s", run.text())
    if not named or min(float(s) for s in named) > HEARTBEAT_S * 1.5 + 1:
        fail(f"rank 2's silence was not named within network.heartbeat_s={HEARTBEAT_S}: {named}")
    print(f"re-formed without rank 2 {time.monotonic() - stopped:.1f} s after SIGSTOP; silence named at {named}")
    os.kill(pids[2], signal.SIGCONT)
    run.wait_for(rf"rank 2 exited with code {ExitCode.REJOIN}: restarting it in place")
    run.wait_for(r"rank\(s\) \[2\] rejoined in round")
    rc = run.finish()
    log = run.text()
    if rc != 0:
        fail(f"ppu-launch exited {rc}\n{events(log)}")
    if "out of the live group" not in log:
        fail("the resumed rank did not say it was out of the live group")
    fault_named(run, 0, "stopped", "rank 2 SIGSTOPped")
    checksums = {run.summary(r).param_checksum for r in range(4)}
    if len(checksums) != 1:
        fail(f"ranks disagree on the final parameters after SIGCONT: {checksums}")


def same_processes(before, after, replaced):
    for r, pid in before.items():
        if r not in replaced and after.get(r) != pid:
            fail(f"rank {r} has process {after.get(r)}, was {pid}: restarted though only {replaced} failed")


def kill_store(run, times_before):
    """SIGKILL the store and wait until ppu-launch has started it again."""
    os.kill(store_pid(run.proc.pid), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while run.text().count("the rendezvous store exited") <= times_before:
        if time.monotonic() > deadline or run.proc.poll() is not None:
            fail(f"ppu-launch did not restart the store:\n{events(run.text())}")
        time.sleep(0.05)


def case_store_restart():
    reference = uninterrupted(0)
    run = Run(tempfile.mkdtemp(prefix="ppu-live-store-"), restarts=0)
    run.wait_for(r"\[rank 0\] .* step 40/")
    before = rank_pids(run.proc.pid)
    kill_store(run, 0)
    run.wait_for(r"\[rank 0\] .* step 125/", timeout=240)
    kill_store(run, 1)
    run.wait_for(r"\[rank 0\] .* step 160/", timeout=240)
    same_processes(before, rank_pids(run.proc.pid), set())
    rc = run.finish()
    no_gang_restart(run, rc, "the store killed twice")
    restarts = [fault_count(run.summary(r), "store") for r in range(4)]
    if min(restarts) < 1:
        fail(f"store restarts counted per rank {restarts}: every rank met the restarted store")
    checksum = one_checksum(run)
    if checksum != reference.param_checksum:
        fail(
            f"after two store restarts the parameters differ from the uninterrupted run's: {checksum} vs "
            f"{reference.param_checksum}\n{events(run.text())}"
        )
    print(f"store killed at steps ~40 and ~125: rebuilt, restarts seen per rank {restarts}; bit-identical {checksum}")


def case_store_and_rank():
    run = Run(tempfile.mkdtemp(prefix="ppu-live-store-rank-"), ["--set", "network.timeout_s=60"], restarts=1)
    run.wait_for(r"\[rank 0\] .* step 40/")
    before = rank_pids(run.proc.pid)
    os.kill(store_pid(run.proc.pid), signal.SIGKILL)
    os.kill(before[1], signal.SIGKILL)
    run.wait_for(r"rank 1 is a replacement: asking the live group", timeout=120)
    run.wait_for(r"rank\(s\) \[[0-9,]*1[0-9,]*\] rejoined in round", timeout=240)
    same_processes(before, rank_pids(run.proc.pid), {1})
    rc = run.finish()
    no_gang_restart(run, rc, "the store and rank 1 killed together")
    print(f"store and rank 1 killed together: rank 1 joined the rebuilt store; one checksum {one_checksum(run)}")


def kill_rank_1_and_wait_for_reforming(run):
    """SIGKILL rank 1 at step 30 and wait until a survivor starts re-forming; the pids before."""
    run.wait_for(r"\[rank 0\] .* step 30/")
    before = rank_pids(run.proc.pid)
    os.kill(before[1], signal.SIGKILL)
    run.wait_for(r"\[rank [023]\] .*the group lost a member")
    return before


def case_store_during_recovery():
    run = Run(tempfile.mkdtemp(prefix="ppu-live-store-reform-"), ["--set", "network.timeout_s=60"], restarts=1)
    before = kill_rank_1_and_wait_for_reforming(run)
    kill_store(run, 0)  # during the re-formation without rank 1
    run.wait_for(r"rank\(s\) \[[0-9,]*1[0-9,]*\] rejoined in round", timeout=240)
    same_processes(before, rank_pids(run.proc.pid), {1})
    rc = run.finish()
    no_gang_restart(run, rc, "the store killed while the group re-formed")
    print(f"store killed while re-forming without rank 1: rank 1 rejoined; one checksum {one_checksum(run)}")


def case_hung():
    env = dict(os.environ, PPU_TEST_FAULT="hang:2:40")
    run = Run(tempfile.mkdtemp(prefix="ppu-live-hung-"), env=env)
    run.wait_for(r"\[rank 2\] .*PPU_TEST_FAULT: the training thread of rank 2 hangs before step 40")
    before = rank_pids(run.proc.pid)
    hung_at = time.monotonic()
    run.wait_for(r"\[rank 2\] .*training thread has made no progress for")
    run.wait_for(rf"rank 2 exited with code {ExitCode.REJOIN}: restarting it in place")
    fenced = time.monotonic() - hung_at
    run.wait_for(r"rank\(s\) \[2\] rejoined in round")
    same_processes(before, rank_pids(run.proc.pid), {2})
    no_gang_restart(run, run.finish(), "a hung training thread")
    fault_named(run, 0, "hung", "rank 2's training thread hung")
    print(f"rank 2 hung at step 40: fenced and replaced {fenced:.1f} s later; one checksum {one_checksum(run)}")


def case_second_loss():
    # Rank 2 arrives at the re-formation without rank 1, is listed in generation 1 and dies just
    # before it connects (PPU_TEST_FAULT die-forming): the survivors, inside Gloo's forming of
    # generation 1, must give up on it once the heartbeat finds it silent, not wait out the
    # connect timeout (its address never comes).
    env = dict(os.environ, PPU_TEST_FAULT="die-forming:2:1")
    run = Run(tempfile.mkdtemp(prefix="ppu-live-second-"), ["--set", "network.timeout_s=60"], restarts=2, env=env)
    before = kill_rank_1_and_wait_for_reforming(run)
    run.wait_for(r"\[rank 2\] .*PPU_TEST_FAULT: rank 2 is killed before it forms generation 1")
    run.wait_for(r"rank\(s\) \[[0-9,]*1[0-9,]*\] rejoined in round", timeout=240)
    run.wait_for(r"rank\(s\) \[[0-9,]*2[0-9,]*\] rejoined in round", timeout=240)
    same_processes(before, rank_pids(run.proc.pid), {1, 2})
    rc = run.finish()
    log = run.text()
    if rc != 0 or "restarting the gang" in log or f"exited with code {ExitCode.PEER_FAILURE}" in log:
        fail(
            f"a second loss during a recovery: ppu-launch exited {rc} (want 0, no exit {ExitCode.PEER_FAILURE})\n"
            f"{events(log)}"
        )
    abandoned = re.search(
        r"\[rank [03]\] .*forming generation 1 abandoned: rank 2 (is silent|has sent no heartbeat)", log
    )
    if not abandoned:
        fail(
            "rank 2 died inside the survivors' forming of generation 1: no survivor gave up on it when the "
            f"heartbeat found it silent (want 'forming generation 1 abandoned: rank 2 is silent')\n{events(log)}"
        )
    waits = [float(x) for x in re.findall(r"\(([0-9.]+) s to re-form\)", log)]
    if not waits or max(waits) >= 60:
        fail(f"re-forming took {waits} s: a wait of the live path ran to network.timeout_s")
    # The survivors' line names both losses (the chaos bench counts the work lost from it).
    named = re.findall(r"\[rank [03]\] .*lost rank\(s\) \[([0-9,]*)\] in round", log)
    if not named or any(n != "1,2" for n in named):
        fail(f"the survivors' loss lines name rank(s) {named}, want [1,2] in each\n{events(log)}")
    print(
        f"ranks 1 and 2 lost, the second inside the forming: abandoned as silent; re-formed in {waits} s; "
        f"one checksum {one_checksum(run)}"
    )


def case_lost_for_good():
    run = Run(tempfile.mkdtemp(prefix="ppu-live-lost-"), restarts=0)
    run.wait_for(r"\[rank 0\] .* step 30/")
    os.kill(rank_pids(run.proc.pid)[3], signal.SIGKILL)
    rc = run.finish()
    log = run.text()
    if rc != 137 or "the job finished without rank(s) 3" not in log:
        fail(f"rank 3 lost for good: ppu-launch exited {rc}, want 137 naming it\n{events(log)}")
    recovery = run.summary(0).recovery
    degraded, spans = recovery.rounds_degraded, recovery.degraded
    if degraded < 1:
        fail(f"the survivors' summary counts {degraded} degraded rounds")
    # The list says which rounds and without whom: one span, rank 3 missing, to the last round.
    if len(spans) != 1 or spans[0].missing != [3] or spans[0].last_round != run.summary(0).outer_rounds:
        fail(f"the survivors' summary lists the degraded rounds as {plain(spans)}")
    if spans[0].last_round - spans[0].first_round + 1 != degraded:
        fail(f"degraded spans {plain(spans)} do not add up to {degraded} rounds")
    print(f"rank 3 lost for good: exit {rc}, {degraded} rounds degraded: {plain(spans)}")


def case_fallback():
    # Ranks 0 and 2 train slice 0 (rank mod N): with both gone it has no live owner.
    ckpt = ["--set", f"checkpoint.dir={tempfile.mkdtemp(prefix='ppu-live-uncovered-ckpt-')}"]
    run = Run(tempfile.mkdtemp(prefix="ppu-live-uncovered-"), ["--set", "network.max_uncovered_rounds=1", *ckpt], 0)
    run.wait_for(r"\[rank 1\] .* step 30/")
    pids = rank_pids(run.proc.pid)
    os.kill(pids[0], signal.SIGKILL)
    os.kill(pids[2], signal.SIGKILL)
    rc = run.finish()
    log = run.text()
    if (
        rc != ExitCode.PEER_FAILURE
        or "has had no live owner for 2 rounds (network.max_uncovered_rounds = 1)" not in log
    ):
        fail(
            f"two owners of one slice lost: ppu-launch exited {rc}, expected {ExitCode.PEER_FAILURE} naming the rule\n"
            f"{events(log)}"
        )
    # Without a checkpoint directory the same fallback would train from step 0 again: the job
    # ends instead, with a configuration error (2, no retry) that names the rule and the key.
    run = Run(tempfile.mkdtemp(prefix="ppu-live-fraction-"), ["--set", "network.min_live_fraction=0.9"], 0)
    run.wait_for(r"\[rank 0\] .* step 30/")
    os.kill(rank_pids(run.proc.pid)[3], signal.SIGKILL)
    rc = run.finish()
    log = run.text()
    if (
        rc != ExitCode.CONFIG_ERROR
        or "below network.min_live_fraction = 0.9" not in log
        or "no checkpoint.dir" not in log
    ):
        fail(
            f"one of four lost with min_live_fraction 0.9, no checkpoint.dir: exited {rc}, want "
            f"{ExitCode.CONFIG_ERROR}\n{events(log)}"
        )
    if "restarting the gang" in log:
        fail(f"a job without checkpoint.dir was restarted from step 0:\n{events(log)}")


def case_late_replacement():
    # Killed after the last point that takes replacements back (H = 10 with 3 fragments: the
    # sync point of step 196; step 200 is the last and takes none): the job finishes without the
    # replacement, which reports the job's result as its own summary. Rank 0 past step 197 means
    # rank 3 has done the sync of step 196 too.
    run = Run(tempfile.mkdtemp(prefix="ppu-live-late-"))
    run.wait_for(rf"\[rank 0\] .* step {STEPS - 2}/")
    os.kill(rank_pids(run.proc.pid)[3], signal.SIGKILL)
    rc = run.finish()
    log = run.text()
    if rc != 0 or "the job finished before rank 3 could rejoin" not in log:
        fail(f"ppu-launch exited {rc}; expected 0 and the replacement to report the job's result\n{events(log)}")
    sums = [run.summary(r) for r in range(4)]
    if len({s.param_checksum for s in sums}) != 1 or sums[3].eval_loss != sums[0].eval_loss:
        fail(f"the late replacement's summary is not the job's result: {[s.param_checksum for s in sums]}")
    if sums[3].tokens != 0 or sums[3].recovery.live_ranks != 0:
        fail(f"the late replacement claims work it did not do: {sums[3].tokens} tokens, {plain(sums[3].recovery)}")


def cut_off(rank, cut_s, ready, extra, env, work, restarts=1):
    """The live job with every rank in a network namespace of its own (rank_netns.py): once every
    pattern of `ready` is in the log, `rank`'s link is cut for cut_s and restored. Then `rank` alone
    must be fenced, replaced (`restarts` at most, every one of that rank) and back in the group
    within 60 s, the job must exit 0 with no gang restart, every rank with one checksum, and no
    namespace may be left. Returns the fenced process's exit code and the checksum."""
    with RankNetwork(4) as net:
        wrapped = ["--rank-wrapper", net.wrapper, *extra]
        run = Run(tempfile.mkdtemp(prefix=work), wrapped, restarts=restarts, env=env, prefix=net.hub_exec)
        try:
            for pattern in ready:
                run.wait_for(pattern)
            before = rank_pids(run.proc.pid)
            if sorted(before) != [0, 1, 2, 3]:
                fail(f"expected ranks 0-3 under ppu-launch, found {before}")
            net.cut(rank)
            time.sleep(cut_s)
            net.restore(rank)
            run.wait_for(rf"lost rank\(s\) \[{rank}\] in round")
            run.wait_for(rf"rank\(s\) \[{rank}\] rejoined in round", timeout=60)
            same_processes(before, rank_pids(run.proc.pid), {rank})
            rc = run.finish()
        finally:
            if run.proc.poll() is None:
                run.proc.kill()
        log = run.text()
        if rc != 0 or "restarting the gang" in log:
            fail(f"rank {rank} cut off for {cut_s} s: ppu-launch exited {rc} (want 0, no gang restart)\n{events(log)}")
        code = re.search(rf"rank {rank} exited with code (\d+): restarting it in place", log)
        replaced = re.findall(r"rank (\d+) exited with code \d+: restarting it in place", log)
        if not code or set(replaced) != {str(rank)} or len(replaced) > restarts:
            fail(f"rank {rank} was not replaced alone (at most {restarts} times):\n{events(log)}")
        checksum = one_checksum(run)
        fault_named(run, 0 if rank != 0 else 1, "unreachable", f"rank {rank} cut off for {cut_s} s")
    if net.leftovers():
        fail(f"network namespaces left behind: {net.leftovers()}")
    return code.group(1), checksum


def case_network_blip():
    # After the link is back, TCP's retransmission back-off takes seconds before rank 2 hears it
    # was fenced: rounds of 200 steps keep that, the restart and the rejoin within a few rounds.
    # A pause of 5 ms before each step makes the run last at least 10 s on any CPU, so that it
    # outlasts them (an idle machine once trained the 2000 steps in 7 s and finished before
    # rank 2 was back).
    cut_s = 2 * HEARTBEAT_S
    extra = ["--set", "train.steps=2000", "--set", "outer.sync_every=200"]
    env = dict(os.environ, PPU_TEST_STEP_PAUSE_MS="5")
    code, checksum = cut_off(2, cut_s, [r"\[rank 0\] .* step 30/"], extra, env, "ppu-live-blip-")
    print(f"rank 2 cut off for {cut_s} s: fenced, exited {code}, replaced and rejoined; one checksum {checksum}")


def case_cut_past_timeout():
    # Cut off for longer than network.timeout_s (8 s here) twice over: rank 1 waits in a collective
    # for up to the timeout, then its store requests reconnect for that long, and then it leaves
    # to be replaced alone (exit 5); it used to exit 3, and the whole job restarted because one
    # rank was unreachable. Its replacement may start while the link is still down and fail to
    # reach the store once more, so three restarts are allowed, all of rank 1.
    extra = ["--set", "train.steps=5000", "--set", "outer.sync_every=200", "--set", "network.timeout_s=8"]
    env = dict(os.environ, PPU_TEST_STEP_PAUSE_MS="10")
    code, checksum = cut_off(1, 26, [r"\[rank 0\] .* step 30/"], extra, env, "ppu-live-cut-long-", restarts=3)
    if int(code) != ExitCode.REJOIN:
        fail(f"rank 1 cut off past network.timeout_s exited {code}, want {ExitCode.REJOIN} (replaced alone)")
    print(f"rank 1 cut off for 26 s (timeout 8 s): exited {code}, replaced alone; one checksum {checksum}")


def case_partition():
    # Ranks 1 and 2 cannot reach each other while both reach the store and the other ranks (a
    # pairwise partition: a bad link, a firewall between two hosts). Both still beat, so no
    # heartbeat fences either. Before the partition check the sync waited network.timeout_s (60 s
    # here), the survivors re-formed with both, failed to connect and did it again for as long as
    # the partition lasted. Now a member stuck in the sync for a heartbeat window probes the
    # others, and the re-formation leaves one of the two out (rank 2, the higher on a tie) while
    # the partition still holds; its replacement asks to rejoin only once it reaches every member.
    extra = ["--set", "train.steps=3000", "--set", "outer.sync_every=100", "--set", "network.timeout_s=60"]
    env = dict(os.environ, PPU_TEST_STEP_PAUSE_MS="10")
    with RankNetwork(4) as net:
        wrapped = ["--rank-wrapper", net.wrapper, *extra]
        run = Run(tempfile.mkdtemp(prefix="ppu-live-partition-"), wrapped, restarts=2, env=env, prefix=net.hub_exec)
        try:
            run.wait_for(r"\[rank 0\] .* step 30/")
            before = rank_pids(run.proc.pid)
            net.partition(1, 2)
            parted = time.monotonic()
            run.wait_for(r"cannot be reached from rank \d while they beat \(a partition\)", timeout=40)
            run.wait_for(r"lost rank\(s\) \[2\] in round", timeout=40)
            left_out = time.monotonic() - parted
            if left_out >= 60:
                fail(f"rank 2 was left out {left_out:.1f} s after the partition, not before network.timeout_s")
            run.wait_for(r"rank 2 cannot reach member\(s\) \[1\] of the live group", timeout=60)
            net.heal(1, 2)
            run.wait_for(r"rank\(s\) \[2\] rejoined in round", timeout=60)
            same_processes(before, rank_pids(run.proc.pid), {2})
            rc = run.finish()
        finally:
            if run.proc.poll() is None:
                run.proc.kill()
        no_gang_restart(run, rc, "a partition between ranks 1 and 2")
        faults = fault_named(run, 0, "unreachable", "ranks 1 and 2 partitioned")
        checksum = one_checksum(run)
    if net.leftovers():
        fail(f"network namespaces left behind: {net.leftovers()}")
    print(
        f"ranks 1 and 2 partitioned: rank 2 left out {left_out:.1f} s later, rejoined after the heal; "
        f"faults {faults}; one checksum {checksum}"
    )


def case_cut_during_sync():
    # Rank 0 sleeps 4 s before the last step of round 2, so that ranks 1-3 wait for it in that
    # round's outer sync; rank 1 is cut as it logs step 399 (it is then in, or a step before, that
    # wait). The cut outlasts a store request (2 s here) and the heartbeat window. 3000 steps of
    # at least 10 ms: the survivors still train when rank 1 is back, restarted and at a boundary.
    # network.timeout_s = 300 (the default, named): a rank that waits it out fails the 60 s bound.
    cut_s = 4 * HEARTBEAT_S
    extra = [
        "--set", "train.steps=3000", "--set", "outer.sync_every=200",
        "--set", "network.timeout_s=300", "--set", "network.progress_timeout_s=20",
    ]  # fmt: skip
    env = dict(os.environ, PPU_TEST_STEP_PAUSE_MS="10", PPU_TEST_FAULT="late:0:399:4000")
    ready = [r"rank 0 sleeps 4000 ms before step 399", r"\[rank 1\] .* step 399/"]
    code, checksum = cut_off(1, cut_s, ready, extra, env, "ppu-live-cut-sync-")
    print(f"rank 1 cut off in a sync for {cut_s} s: fenced, exited {code}, replaced; one checksum {checksum}")


def checkpoint_digests(log, pattern):
    """{rank: (outer digest, inner digest)} of the log lines matching pattern (with the digests)."""
    found = {}
    for m in re.finditer(rf"^\[rank (\d)\] .*{pattern}.*\(.*digests: outer (\w+), inner (\w+)", log, re.MULTILINE):
        found[int(m.group(1))] = (m.group(2), m.group(3))
    return found


def lose_rank_3_for_good(name, *settings_kv):
    """A checkpointing live run (with `settings_kv`, key=values) that loses rank 3 at step 30 and has
    no restarts; after it ends: (its Run, exit code, log, checkpoint dir, the settings to restart with)."""
    ckpt = tempfile.mkdtemp(prefix=f"ppu-live-{name}-ckpt-")
    settings = ["--set", f"checkpoint.dir={ckpt}"]
    for kv in settings_kv:
        settings += ["--set", kv]
    run = Run(tempfile.mkdtemp(prefix=f"ppu-live-{name}-"), settings, restarts=0)
    run.wait_for(r"\[rank 0\] .* step 30/")
    os.kill(rank_pids(run.proc.pid)[3], signal.SIGKILL)
    rc = run.finish()
    return run, rc, run.text(), ckpt, settings


def case_degraded_checkpoint():
    run, rc, log, ckpt, keep = lose_rank_3_for_good("degraded", "checkpoint.keep=100")
    if rc != 137:
        fail(f"rank 3 lost for good: ppu-launch exited {rc}, want 137\n{events(log)}")
    live = run.summary(0)
    rounds = files.rounds_in(ckpt)
    degraded = []
    for r in rounds:
        with open(os.path.join(ckpt, files.round_dir(r), files.MANIFEST)) as f:
            manifest = json.load(f)
        parts = sorted(k for k in manifest["files"] if files.is_rank_part(k))
        # contract: not a summary: the checkpoint manifest
        if parts != [files.rank_part(i) for i in range(4)] or manifest["world_size"] != 4:
            # contract: not a summary: the checkpoint manifest
            fail(f"checkpoint round {r} lists {parts} of world size {manifest['world_size']}")
        if manifest.get("stand_ins"):
            if manifest["stand_ins"] != {"3": 1}:
                fail(f"round {r}: rank 3's part should be written by rank 1 (co-owner), got {manifest['stand_ins']}")
            degraded.append(r)
    last = live.outer_rounds
    if not degraded or degraded[-1] != last or len(degraded) < live.recovery.rounds_degraded:
        fail(f"degraded checkpoints {degraded}: want every degraded round to round {last}")
    wrote = checkpoint_digests(log, rf"checkpoint round {last} written to \S+ with rank\(s\) \[3\] missing")
    if sorted(wrote) != [0, 1, 2]:
        fail(f"the live ranks' digests of round {last}: {wrote}\n{events(log)}")

    # The gang restart from the last (degraded) checkpoint: nothing is left to train, so it holds
    # exactly what it loaded.
    restart = Run(tempfile.mkdtemp(prefix="ppu-live-degraded-restart-"), keep, restarts=0)
    if restart.finish() != 0:
        fail(f"the restart from the degraded checkpoint failed:\n{events(restart.text())}")
    resumed = checkpoint_digests(restart.text(), rf"resumed from \S+{files.round_dir(last)} at step")
    want = {0: wrote[0], 1: wrote[1], 2: wrote[2], 3: wrote[1]}  # rank 3: θ and rank 1's inner state
    if resumed != want:
        fail(f"resumed digests {resumed}, the live job held {want}")
    if {restart.summary(r).param_checksum for r in range(4)} != {live.param_checksum}:
        fail("the restart's parameters are not the live job's")
    if restart.summary(0).tokens != live.tokens:
        fail(f"rank 0's counters: {restart.summary(0).tokens} tokens resumed, {live.tokens} held")

    # From an earlier degraded checkpoint the restart trains on, rank 3 from its stand-in part.
    middle = degraded[len(degraded) // 2]
    early = tempfile.mkdtemp(prefix="ppu-live-degraded-early-")
    shutil.copytree(os.path.join(ckpt, files.round_dir(middle)), os.path.join(early, files.round_dir(middle)))
    again = Run(tempfile.mkdtemp(prefix="ppu-live-degraded-again-"), ["--set", f"checkpoint.dir={early}"], 0)
    if again.finish() != 0 or f"{files.round_dir(middle)} at step" not in again.text():
        fail(f"the restart from degraded round {middle} failed:\n{events(again.text())}")
    print(
        f"rank 3 lost: rounds {degraded} checkpointed degraded; restart from {last}: rank 3 resumed {resumed[3]}; "
        f"from round {middle}: trained to the end, one checksum {one_checksum(again)}"
    )


def case_degraded_bound():
    _, rc, log, ckpt, extra = lose_rank_3_for_good("bound", "network.max_degraded_rounds=2", "network.max_degraded_s=0")
    gave_up = re.search(
        r"missing for 3 consecutive rounds \(network\.max_degraded_rounds = 2\) and [0-9.]+ s "
        r"\(network\.max_degraded_s = 0\): gang restart from the "
        r"checkpoint of round (\d+)",
        log,
    )
    if rc != ExitCode.PEER_FAILURE or not gave_up:
        fail(
            f"degraded past network.max_degraded_rounds: ppu-launch exited {rc}, want {ExitCode.PEER_FAILURE} naming "
            f"the key\n{events(log)}"
        )
    at = int(gave_up.group(1))
    with open(os.path.join(ckpt, files.FALLBACK_NOTE)) as f:
        note = json.load(f)
    if note["round"] != at or "network.max_degraded_rounds" not in note["reason"]:
        fail(f"the fallback note {note} does not name round {at} and the key")
    # The gang restart (by hand: this ppu-launch had no restarts left) resumes from the round the
    # job gave up at and names the fallback.
    restart = Run(tempfile.mkdtemp(prefix="ppu-live-bound-restart-"), extra, restarts=0)
    rc = restart.finish()
    text = restart.text()
    if rc != 0 or f"resumed from {ckpt}/{files.round_dir(at)}" not in text:
        fail(f"the gang restart did not resume from round {at}: exit {rc}\n{events(text)}")
    fallback = restart.summary(0).recovery.fallback
    if "network.max_degraded_rounds = 2" not in fallback or "gang restart that live recovery fell back" not in text:
        fail(f"the restart's summary names the fallback as {fallback!r}")
    print(
        f"degraded for 3 rounds: exit {ExitCode.PEER_FAILURE} at round {at}, restarted from it; "
        f"recovery.fallback = {fallback!r}"
    )


def case_coowner_state():
    for choice in ("coowner", "fresh"):
        extra = ["--set", f"network.replacement_inner_state={choice}"]
        run = Run(tempfile.mkdtemp(prefix=f"ppu-live-{choice}-"), extra)
        run.wait_for(r"\[rank 0\] .* step 45/")
        os.kill(rank_pids(run.proc.pid)[2], signal.SIGKILL)
        run.wait_for(r"rank\(s\) \[2\] rejoined in round")
        rc = run.finish()
        log = run.text()
        if rc != 0:
            fail(f"{choice}: ppu-launch exited {rc}\n{events(log)}")
        slice0 = r"\(co-owner of slice 0\): digest (\w+)"
        taken = re.findall(rf"\[rank 2\] .*inner state of rank 2 taken from rank 0 {slice0}", log)
        sent = re.findall(rf"\[rank 0\] .*inner state of rank 2 sent by rank 0 {slice0}", log)
        if choice == "fresh":
            if taken or sent:
                fail(f"fresh: a co-owner's state was sent: {taken} {sent}")
            continue
        if len(taken) != 1 or taken != sent:
            fail(f"coowner: rank 2 took digest {taken}, rank 0 sent {sent}\n{events(log)}")
        print(f"coowner: rank 2's replacement took rank 0's inner state, digest {taken[0]} on both sides")
    print("fresh: no inner state sent")


{
    "network-blip": case_network_blip,
    "cut-during-sync": case_cut_during_sync,
    "partition": case_partition,
    "kill-each-rank": case_kill_each_rank,
    "boundaries": case_boundaries,
    "between-boundaries": case_between_boundaries,
    "cut-past-timeout": case_cut_past_timeout,
    "frozen": case_frozen,
    "fallback": case_fallback,
    "late-replacement": case_late_replacement,
    "hung": case_hung,
    "store-restart": case_store_restart,
    "store-during-recovery": case_store_during_recovery,
    "store-and-rank": case_store_and_rank,
    "second-loss": case_second_loss,
    "lost-for-good": case_lost_for_good,
    "degraded-checkpoint": case_degraded_checkpoint,
    "degraded-bound": case_degraded_bound,
    "coowner-state": case_coowner_state,
}[CASE]()
print("PASS", CASE)
