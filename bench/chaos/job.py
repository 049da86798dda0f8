"""Job: one ppu-launch run whose output lines are kept with the time each one arrived.

Job(cmd, log_path) starts `cmd` (ppu-launch, possibly behind `ip netns exec`); a reader thread
appends (arrival time.time(), line) to `lines` and to log_path. Arrival times put the
launcher's own lines ("[launch] ...", untimed) and the ranks' lines on one clock with the
faults the bench injects. The query helpers read `lines` without blocking the reader.
"""

import re
import subprocess
import threading
import time

from launch_harness import children_of, serving_stores  # tests/engine, on the path run.py sets

STEP = re.compile(r"^\[rank (\d+)\] .* step (\d+)/")


class Job:
    def __init__(self, cmd, log_path, env=None):
        self.log_path = log_path
        self.lines = []
        self.lock = threading.Lock()
        self.started = time.time()
        self.ended = None
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", env=env
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        with open(self.log_path, "w") as log:
            for line in self.proc.stdout:
                now = time.time()
                with self.lock:
                    self.lines.append((now, line.rstrip("\n")))
                log.write(f"{now:.3f} {line}")
        self.proc.wait()
        self.ended = time.time()

    def snapshot(self, since=0):
        with self.lock:
            return self.lines[since:]

    def count(self):
        """How many lines have arrived: snapshot(count()) later gives only the newer ones."""
        with self.lock:
            return len(self.lines)

    def running(self):
        return self.proc.poll() is None

    def wait_for(self, pattern, since=0, timeout=300):
        """Index and time of the first line from index `since` on matching `pattern`, or None when
        the job ended or `timeout` passed first."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        i = since
        while time.monotonic() < deadline:
            new = self.snapshot(i)
            for k, (t, line) in enumerate(new):
                if rx.search(line):
                    return i + k, t
            i += len(new)
            if not self.running() and not self.reader.is_alive():
                return None
            time.sleep(0.02)
        return None

    def latest_step(self):
        with self.lock:
            for _t, line in reversed(self.lines):
                m = STEP.match(line)
                if m:
                    return int(m.group(2))
        return 0

    def finish(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=30)
        return self.proc.returncode

    def store(self):
        """The pid of the ppu-rendezvous that serves the store now (not a --probe beside it), or None."""
        pids = serving_stores(self.proc.pid)
        return pids[0] if pids else None

    def children(self, comm):
        """{RANK (or -1 when unset): pid} of ppu-launch's children whose command is `comm`."""
        return {int(env.get(b"RANK", b"-1")): pid for pid, env in children_of(self.proc.pid, comm).items()}
