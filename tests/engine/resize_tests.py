"""Resizing a running live job (network.min_ranks, docs/RESIZE.md) with real processes under
ppu-launch: --nproc 4 slots, N = 2, SIGUSR1 / SIGUSR2 to ppu-launch grow / shrink it by one.

usage: resize_tests.py BIN_DIR SOURCE_DIR CASE
cases: grow-shrink  the job starts with 2 of its 4 slots (network.max_degraded_rounds = 0 and
                    max_degraded_s = 0: a vacant slot counted as degraded would restart the gang
                    at the first boundary); two SIGUSR1 take slots 2 and 3 in (each joins as a
                    replacement does, its state from a co-owner), one SIGUSR2 retires slot 3 at
                    a round boundary (exit 0, no summary, not restarted); exit 0, no gang
                    restart, one checksum over the three members, rank 0's size history says
                    2 → 3 → 4 → 3, no degraded round
       grow-past-lost  3 of 4 slots; rank 1 is killed and SIGUSR1 sent at once (a resize during a
                    recovery): rank 1 is restarted in place and slot 3 started, both are taken
                    in, and the job ends with 4 members, one checksum and the fault named
       shrink-refused  4 of 4 slots, network.min_ranks 2, no restarts; rank 1 lost for good,
                    then SIGUSR2 three times: shrinking to 3 would leave slice 1 without a member
                    (slot 3 is its only one): the members say so and keep slot 3, at 2 the same,
                    and the third SIGUSR2 is refused by ppu-launch (network.min_ranks); slot 3
                    trains to the end, no round is degraded (3 members >= 2), ppu-launch exits
                    with the lost rank's code
       burst        two SIGUSR1 50 ms apart (2 -> 4): ppu-launch tells the store each size and
                    waits for each write to end, so that an older size cannot land after a newer
                    one (a signal once cut the wait for the first short, and the store kept 3
                    while ppu-launch wanted 4: rank 3 retired at every boundary); the job ends
                    with 4 members and one checksum
       grown-back   the store says 3 while ppu-launch still wants 4 (a size on the way, as when
                    signals race a round boundary): rank 3 retires (exit 0, its termination message
                    says so), ppu-launch starts it again because its slot is wanted, and once the
                    store says 4 again it stays; the job ends with 4 ranks and one checksum
       desired-file  the operator's way, without a cluster: a ppu-rendezvous started with
                    --desired-file (the store's pod mounts the job's ConfigMap) and ranks started
                    by hand with WORLD_SIZE 4; the file says 2, so ranks 0 and 1 form the first
                    group alone; rank 2 is started first (as the operator creates the pod before the
                    kubelet updates the file) and must wait three rounds untaken; the file says 3:
                    taken in; it says 2 again: rank 2 retires (exit 0) and ranks 0 and 1 finish with
                    one checksum
       quorum       grow-shrink under outer.sync_mode quorum, with rank 3 slow (150 ms a step) from
                    step 200: the job starts with 2 of 4 slots (the quorum is counted over the
                    members, so the two vacant slots hold no sync point open), grows to 4 (rank 3
                    joins and sync points close without it), shrinks to 3
                    (rank 3, the slow one, retires); exit 0, no gang restart, no degraded round,
                    one checksum over ranks 0-2, rank 0's size history 2 -> 3 -> 4 -> 3, and rank
                    3's share of slice 1's updates under half of rank 1's (waited for, as under
                    sync_mode all, it would train every step from its join: about 0.4 against 0.6)
       bad-flags    --ranks above --nproc, below network.min_ranks, or without an elastic job,
                    and network.min_ranks below slicing.slices: exit 2 naming the flag or key,
                    no rank started
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

from launch_harness import Launch, events, fail, fault_named, one_checksum, plain, rank_pids, tiny_job

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ppu import files, summary
from ppu.exit_codes import ExitCode, left_on_notice

BIN, SRC, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
STEPS = 1000
ELASTIC = [
    *tiny_job(SRC, 20, 2.0),
    "--set", f"train.steps={STEPS}", "--set", "network.recovery=live", "--set", "network.min_ranks=2",
]  # fmt: skip
# 20 ms a step: about 20 s of training, so that every resize lands mid-run on any CPU.
PAUSED = {**os.environ, "PPU_TEST_STEP_PAUSE_MS": "20"}


class Run(Launch):
    def __init__(self, work, extra=(), restarts=0, env=PAUSED):
        super().__init__(work, [LAUNCH, *ELASTIC, *extra, "--max-restarts", str(restarts)], env=env)

    def ask(self, sig):
        os.kill(self.proc.pid, sig)


def after_step(run, step, rank=0):
    run.wait_for(rf"\[rank {rank}\] .* step {step}/")


def timed(run, sig, pattern):
    """Sends `sig` to ppu-launch and waits for `pattern`; the seconds it took."""
    start = time.monotonic()
    run.ask(sig)
    run.wait_for(pattern)
    return time.monotonic() - start


def desired_sizes(s):
    """The desired sizes of a summary's size history, repeats dropped."""
    sizes = []
    for change in s.recovery.size_history:
        if not sizes or sizes[-1] != change.desired:
            sizes.append(change.desired)
    return sizes


def shrunk_to_three(run):
    """A job grown 2 -> 3 -> 4 and shrunk to 3 ended as one: one checksum over ranks 0-2, rank 0's
    size history says so, no degraded round. Returns the checksum and rank 0's summary."""
    checksum = one_checksum(run, ranks=3)
    s = run.summary(0)
    if desired_sizes(s) != [2, 3, 4, 3] or s.recovery.size_history[-1].ranks != 3:
        fail(f"rank 0's size history: {[c.as_dict() for c in s.recovery.size_history]}")
    if s.recovery.rounds_degraded != 0:
        fail(f"rank 0 counted {s.recovery.rounds_degraded} degraded rounds with every missing slot vacant")
    return checksum, s


def no_restart(run, rc, want_rc=0):
    log = run.text()
    if rc != want_rc or "restarting the gang" in log or f"exited with code {ExitCode.PEER_FAILURE}" in log:
        fail(f"ppu-launch exited {rc} (want {want_rc}, no gang restart):\n{events(log)}")


def case_grow_shrink():
    work = tempfile.mkdtemp(prefix="ppu-resize-")
    run = Run(work, ["--ranks", "2", "--set", "network.max_degraded_rounds=0", "--set", "network.max_degraded_s=0"])
    after_step(run, 100)
    if sorted(rank_pids(run.proc.pid)) != [0, 1]:
        fail(f"started with ranks {sorted(rank_pids(run.proc.pid))}, want [0, 1]")
    # Each size is let reach a round boundary (the members' line) before the next signal: a size
    # that no boundary saw is never acted on, nor recorded.
    grow2 = timed(run, signal.SIGUSR1, r"rank\(s\) \[2\] rejoined")
    run.wait_for(r"\[rank 0\] .*desired size is 3 of 4 slots")
    grow3 = timed(run, signal.SIGUSR1, r"rank\(s\) \[3\] rejoined")
    run.wait_for(r"\[rank 0\] .*desired size is 4 of 4 slots")
    shrink = timed(run, signal.SIGUSR2, r"rank\(s\) \[3\] retired at the end of round")
    rc = run.finish()
    no_restart(run, rc)
    log = run.text()
    if not re.search(r"\[rank 3\] .* retired: the job shrank to 3 ranks", log):
        fail(f"rank 3 did not say it retired:\n{events(log)}")
    if "rank 3 exited with code 0: its slot is vacant" not in log:
        fail(f"ppu-launch did not let rank 3's slot stay vacant:\n{events(log)}")
    if os.path.exists(files.summary_file(run.summaries, 3)):
        fail("the retired rank 3 left a summary file")
    checksum, _ = shrunk_to_three(run)
    print(
        f"grow to 3: {grow2:.1f} s from SIGUSR1 to taken in; to 4: {grow3:.1f} s; shrink to 3: {shrink:.1f} s "
        f"to retired; checksum {checksum}"
    )
    print("PASS grow-shrink")


def case_grow_past_lost():
    work = tempfile.mkdtemp(prefix="ppu-resize-lost-")
    run = Run(work, ["--ranks", "3"], restarts=1)
    after_step(run, 100)
    os.kill(rank_pids(run.proc.pid)[1], signal.SIGKILL)
    run.ask(signal.SIGUSR1)
    run.wait_for(r"rank 1 exited with code 137: restarting it in place")
    run.wait_for(r"\[rank 0\] .*rank\(s\) \[[0-9,]*1[0-9,]*\] rejoined")
    run.wait_for(r"\[rank 0\] .*rank\(s\) \[[0-9,]*3\] rejoined")
    rc = run.finish()
    no_restart(run, rc)
    one_checksum(run, ranks=4)
    s = run.summary(0)
    last = s.recovery.size_history[-1]
    if last.ranks != 4 or last.desired != 4:
        fail(f"rank 0's size history ends {last.as_dict()}, want 4 ranks of 4 desired")
    fault_named(run, 0, "killed", "rank 1 killed during a grow")
    print("PASS grow-past-lost")


def case_shrink_refused():
    work = tempfile.mkdtemp(prefix="ppu-resize-refused-")
    run = Run(work)
    after_step(run, 100)
    os.kill(rank_pids(run.proc.pid)[1], signal.SIGKILL)
    run.wait_for(r"\[rank 0\] .*lost rank\(s\) \[1\]")
    run.ask(signal.SIGUSR2)
    run.wait_for(r"\[rank 0\] .*not shrinking yet: slice\(s\) \[1\] would have no member left")
    run.ask(signal.SIGUSR2)
    run.wait_for(r"\[rank 0\] .*desired size is 2 of 4 slots")
    run.ask(signal.SIGUSR2)
    run.wait_for(r"SIGUSR2: the job has 2 ranks, network.min_ranks: it cannot shrink")
    rc = run.finish()
    no_restart(run, rc, want_rc=left_on_notice(signal.SIGKILL))  # 128 + signal: the lost rank's code
    log = run.text()
    if "retired" in log:
        fail(f"a rank retired although its slice had no other member:\n{events(log)}")
    checksum = one_checksum_of(run, [0, 2, 3])
    s0, s3 = run.summary(0), run.summary(3)
    if s3.steps != STEPS:
        fail(f"rank 3 trained {s3.steps} steps, want {STEPS}")
    if s0.recovery.rounds_degraded != 0:
        fail(
            f"3 members of an elastic job with network.min_ranks 2 counted {s0.recovery.rounds_degraded} degraded rounds"
        )
    if desired_sizes(s0)[-1] != 2 or s0.recovery.size_history[-1].ranks != 3:
        fail(f"rank 0's size history: {[c.as_dict() for c in s0.recovery.size_history]}")
    print(f"checksum {checksum}")
    print("PASS shrink-refused")


def one_checksum_of(run, ranks):
    checksums = {run.summary(r).param_checksum for r in ranks}
    if len(checksums) != 1:
        fail(f"ranks {ranks} disagree on the final parameters: {checksums}")
    return checksums.pop()


def case_burst():
    work = tempfile.mkdtemp(prefix="ppu-resize-burst-")
    run = Run(work, ["--ranks", "2"], restarts=0)
    after_step(run, 100)
    run.ask(signal.SIGUSR1)
    time.sleep(0.05)
    run.ask(signal.SIGUSR1)
    run.wait_for(r"\[rank 0\] .*desired size is 4 of 4 slots")
    rc = run.finish()
    no_restart(run, rc)
    one_checksum(run, ranks=4)
    last = run.summary(0).recovery.size_history[-1]
    if last.ranks != 4 or last.desired != 4:
        fail(f"rank 0's size history ends {last.as_dict()}, want 4 ranks of 4 desired")
    print("PASS burst")


def resize_store(run, ranks):
    port = re.search(r"rendezvous 127\.0\.0\.1:(\d+)", run.text()).group(1)
    subprocess.run(
        [os.path.join(BIN, "bin", "ppu-rendezvous"), "--resize", f"127.0.0.1:{port}", "--ranks", str(ranks)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def case_grown_back():
    work = tempfile.mkdtemp(prefix="ppu-resize-back-")
    run = Run(work)
    after_step(run, 100)
    resize_store(run, 3)
    run.wait_for(r"rank 3 retired, but the job has 4 ranks again: starting it again")
    resize_store(run, 4)
    run.wait_for(r"\[rank 0\] .*the job's desired size is 4 of 4 slots")
    rc = run.finish()
    no_restart(run, rc)
    checksum = one_checksum(run, ranks=4)
    last = run.summary(0).recovery.size_history[-1]
    if last.ranks != 4 or last.desired != 4:
        fail(f"rank 0's size history ends {last.as_dict()}, want 4 ranks of 4 desired")
    print(f"checksum {checksum}")
    print("PASS grown-back")


def case_desired_file():
    work = tempfile.mkdtemp(prefix="ppu-resize-file-")
    desired = os.path.join(work, "desired-ranks")
    with open(desired, "w") as f:
        f.write("2\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store_log = open(os.path.join(work, "store.log"), "w")  # noqa: SIM115  (closed at the end)
    store = subprocess.Popen(
        [os.path.join(BIN, "bin", "ppu-rendezvous"), "--port", str(port), "--desired-file", desired],
        stdout=store_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    ranks, logs = {}, {}
    args = ELASTIC[2:]  # the job's --config and --set flags, without --nproc

    def start(rank):
        env = {**PAUSED, "RANK": str(rank), "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
               "PPU_EXTERNAL_STORE": "1", "PPU_LOG_PREFIXED": "1"}  # fmt: skip
        logs[rank] = os.path.join(work, f"rank-{rank}.log")
        with open(logs[rank], "w") as out:
            ranks[rank] = subprocess.Popen(
                [os.path.join(BIN, "bin", "ppu-train"), *args, "--summary", files.summary_file(work, rank)],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip

    def wait_in(rank, pattern, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(logs[rank]) as f:
                if re.search(pattern, f.read()):
                    return
            time.sleep(0.05)
        with open(logs[rank]) as f:
            fail(f"rank {rank}: no /{pattern}/ within {timeout} s:\n{events(f.read())}")

    def say(n):
        with open(desired + ".tmp", "w") as f:
            f.write(f"{n}\n")
        os.replace(desired + ".tmp", desired)  # as the kubelet swaps a ConfigMap's files

    try:
        start(0)
        start(1)
        wait_in(0, r"step 100/")
        # The operator's order: the pod first, the store hears the size later (the kubelet's
        # update of the file). Rank 2 must wait for it, not be taken in and retired at once.
        start(2)
        wait_in(2, r"asking the live group to take it back")
        with open(logs[0]) as f:
            step = int(re.findall(r"step (\d+)/", f.read())[-1])
        wait_in(0, rf"step {step + 60}/")  # three round boundaries
        with open(logs[0]) as f:
            if "rank(s) [2] rejoined" in f.read():
                fail("rank 2 was taken in before the store had a size that covers its slot")
        say(3)
        wait_in(0, r"rank\(s\) \[2\] rejoined")
        wait_in(0, r"desired size is 3 of 4 slots")  # the store looks at its file once a second
        say(2)
        wait_in(0, r"rank\(s\) \[2\] retired at the end of round")
        codes = {r: p.wait(timeout=300) for r, p in ranks.items()}
    finally:
        for p in [*ranks.values(), store]:
            if p.poll() is None:
                p.kill()
                p.wait()
        store_log.close()
    if codes != {0: 0, 1: 0, 2: 0}:
        fail(f"exit codes {codes}, want 0 for every rank (rank 2 retired)")
    with open(os.path.join(work, "store.log")) as f:
        said = f.read()
    if said.count("the job's desired size is") != 3:
        fail(f"the store did not take 2, 3 and 2 from the file:\n{said}")
    checksums = {summary.load(files.summary_file(work, r)).param_checksum for r in (0, 1)}
    if len(checksums) != 1:
        fail(f"ranks 0 and 1 disagree on the final parameters: {checksums}")
    print("PASS desired-file")


def case_bad_flags():
    base = [LAUNCH, *tiny_job(SRC, 20, 2.0), "--set", "network.recovery=live", "--set", "train.steps=20"]
    bad = [
        (["--set", "network.min_ranks=2", "--ranks", "5"], "--ranks 5 must be within"),
        (["--set", "network.min_ranks=3", "--ranks", "2"], "--ranks 2 must be within"),
        (["--ranks", "2"], "needs an elastic job: set network.min_ranks"),
        (["--set", "network.min_ranks=1"], "network.min_ranks' (1) must be at least slicing.slices"),
    ]
    for extra, want in bad:
        p = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=120, check=False)
        out = p.stdout + p.stderr
        if p.returncode != ExitCode.CONFIG_ERROR or want not in out or "started" in out:
            fail(
                f"{extra}: exit {p.returncode} (want {ExitCode.CONFIG_ERROR} naming '{want}', no rank started):\n{out}"
            )
    print("PASS bad-flags")


def case_quorum():
    work = tempfile.mkdtemp(prefix="ppu-resize-quorum-")
    quorum = ["--set", "outer.sync_mode=quorum", "--set", "outer.quorum_grace_max_s=0.5"]
    env = {**PAUSED, "PPU_TEST_FAULT": "slow:3:200:150"}
    run = Run(work, [*quorum, "--ranks", "2"], env=env)
    after_step(run, 100)
    run.ask(signal.SIGUSR1)
    run.wait_for(r"\[rank 0\] .*desired size is 3 of 4 slots")
    run.ask(signal.SIGUSR1)
    run.wait_for(r"\[rank 0\] .*rank\(s\) \[3\] rejoined")
    run.wait_for(r"\[rank 0\] .*desired size is 4 of 4 slots")
    joined = int(re.findall(r"\[rank 0\] .* step (\d+)/", run.text())[-1])
    after_step(run, joined + 100)  # five sync points with the slow rank 3 a member
    run.ask(signal.SIGUSR2)
    run.wait_for(r"rank\(s\) \[3\] retired at the end of round")
    rc = run.finish()
    no_restart(run, rc)
    checksum, s = shrunk_to_three(run)
    sync = s.outer_sync
    share = {r.rank: r.share for r in sync.ranks}
    if sync.mode != "quorum" or share.get(3, 1) >= share.get(1, 0) / 2:
        fail(f"rank 0's outer sync: {plain(sync)}: the slow rank 3 weighed as much as if it had been waited for")
    print(f"checksum {checksum}; slice 1's updates: rank 1 {share[1]:.2f}, the slow rank 3 {share[3]:.2f}")
    print("PASS quorum")


CASES = {
    "grow-shrink": case_grow_shrink,
    "grow-past-lost": case_grow_past_lost,
    "shrink-refused": case_shrink_refused,
    "burst": case_burst,
    "grown-back": case_grown_back,
    "desired-file": case_desired_file,
    "bad-flags": case_bad_flags,
    "quorum": case_quorum,
}
CASES[CASE]()
