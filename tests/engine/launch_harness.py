"""ppu-launch under test: a job run in the background, its output kept in a file and read as it
grows, and what a test asks of the processes it runs (their pids by rank, the store's pid) and of
their ends (exit codes, summaries, the checksums they agree on). Shared by live_recovery_tests.py
and capacity_events_tests.py."""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ppu import files, summary
from ppu.exit_codes import ExitCode
from ppu.record import Record

_RUNNING = []  # every Launch not yet finished: ended with the test when it fails


def fail(msg):
    print("FAIL:", msg)
    for launch in _RUNNING:
        launch.kill()
    sys.exit(1)


def events(log, lines=80):
    """The log without its step lines and stack frames: what happened, for a failure message."""
    noise = re.compile(r" info step \d|frame #|socket\.cpp|InitGoogleLogging")
    kept = [line for line in log.splitlines() if not noise.search(line)]
    return "\n".join(kept[-lines:])


def children_of(launcher_pid, comm):
    """{pid: environ} of the processes named `comm` that ppu-launch runs now."""
    found = {}
    children = subprocess.run(["pgrep", "-P", str(launcher_pid)], capture_output=True, text=True, check=False)
    for pid in children.stdout.split():
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != comm:
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                found[int(pid)] = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue
    return found


def rank_pids(launcher_pid):
    """{rank: pid} of the ppu-train processes ppu-launch runs now."""
    return {int(env[b"RANK"]): pid for pid, env in children_of(launcher_pid, "ppu-train").items()}


def _stores(launcher_pid, probes):
    """The pids of ppu-launch's ppu-rendezvous processes that are (probes) or are not its watch."""
    pids = []
    for pid in children_of(launcher_pid, "ppu-rendezvous"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if (b"--probe" in f.read().split(b"\0")) == probes:
                    pids.append(pid)
        except OSError:
            continue
    return pids


def serving_stores(launcher_pid):
    """The pids of the ppu-rendezvous processes of ppu-launch that serve the store (not the
    `ppu-rendezvous --probe --every` watch it runs beside it)."""
    return _stores(launcher_pid, probes=False)


def store_watches(launcher_pid):
    """The pids of ppu-launch's `ppu-rendezvous --probe --every` watch processes."""
    return _stores(launcher_pid, probes=True)


def store_pid(launcher_pid):
    """The pid of the ppu-rendezvous process that serves the store now."""
    pids = serving_stores(launcher_pid)
    if not pids:
        fail("ppu-launch runs no ppu-rendezvous")
    return pids[0]


class Launch:
    """`cmd` (ppu-launch and its arguments, --summary-dir added) in the background."""

    def __init__(self, work, cmd, env=None):
        self.work = work
        self.log = os.path.join(work, "launch.log")
        self.out = open(self.log, "w")  # noqa: SIM115  (ppu-launch writes it until finish() closes it)
        self.summaries = os.path.join(work, "summaries")
        self.proc = subprocess.Popen(
            [*cmd, "--summary-dir", self.summaries], stdout=self.out, stderr=subprocess.STDOUT, env=env
        )
        _RUNNING.append(self)

    def kill(self):
        """SIGKILL ppu-launch and what it runs (its ranks and store have process groups of their own)."""
        if self.proc.poll() is not None:
            return
        for comm in ("ppu-train", "ppu-rendezvous"):
            for pid in children_of(self.proc.pid, comm):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.proc.kill()
        self.proc.wait()

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait_for(self, pattern, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.text()):
                return
            if self.proc.poll() is not None:
                fail(f"ppu-launch exited {self.proc.returncode} before /{pattern}/:\n{events(self.text())}")
            time.sleep(0.05)
        fail(f"no /{pattern}/ within {timeout} s:\n{events(self.text())}")

    def finish(self, timeout=300):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            fail(f"ppu-launch still running after {timeout} s:\n{events(self.text())}")
        _RUNNING.remove(self)
        self.out.close()
        return self.proc.returncode

    def summary(self, rank):
        return summary.load(files.summary_file(self.summaries, rank))


def tiny_job(src, sync_every, heartbeat_s):
    """ppu-launch's arguments for the process tests' job: 4 ranks of configs/tiny.yaml, N = 2,
    rounds of `sync_every` steps, no evaluation, a log line per step, no overlap."""
    return [
        "--nproc", "4", "--config", os.path.join(src, "configs", "tiny.yaml"),
        "--set", f"outer.sync_every={sync_every}", "--set", "train.eval_every=0", "--set", "train.log_every=1",
        "--set", "model.seq_len=32", "--set", "slicing.slices=2", "--set", "outer.overlap_steps=0",
        "--set", f"network.heartbeat_s={heartbeat_s}",
    ]  # fmt: skip


def plain(value):
    """A summary's value as its JSON has it (a Record as its object, in lists and maps too): what a
    failure message shows."""
    if isinstance(value, Record):
        return value.as_dict()
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def fault_count(s, kind):
    """How many faults of `kind` summary `s` counts (recovery.faults; 0 when it names none)."""
    faults = s.recovery.faults
    return faults[kind].count if kind in faults else 0


def one_checksum(run, ranks=4):
    checksums = {run.summary(r).param_checksum for r in range(ranks)}
    if len(checksums) != 1:
        fail(f"ranks disagree on the final parameters: {checksums}")
    return checksums.pop()


def fault_named(run, survivor, kind, what):
    """The survivor's summary counts at least one fault of `kind` (recovery.faults: what happened
    to the rank, not how it was detected); returns the faults it counts."""
    s = run.summary(survivor)
    faults = plain(s.recovery.faults)
    if fault_count(s, kind) < 1:
        fail(f"{what}: rank {survivor}'s summary counts faults {faults}, no '{kind}'")
    return faults


def no_gang_restart(run, rc, what):
    log = run.text()
    if rc != 0 or "restarting the gang" in log or f"exited with code {ExitCode.PEER_FAILURE}" in log:
        fail(
            f"{what}: ppu-launch exited {rc} (want 0, no gang restart, no exit {ExitCode.PEER_FAILURE})\n{events(log)}"
        )
