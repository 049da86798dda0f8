"""CpuCap: one process of a launch held at a share of one core by a CPU cgroup, the slow rank of
the straggler bench (run.py) and of the quorum study (bench/study/quorum_study.py).

  cap = CpuCap(name, share)   a cgroup at `share` of one core (cgroup v1 cpu.cfs_quota_us over a
                              100 ms period, or v2 cpu.max); needs root
  cap.hold_rank(job, rank)    moves ppu-launch's rank `rank` (a bench/chaos Job) into it as soon as
                              the rank's process exists, so it runs capped from its start
  cap.close()                 removes the cgroup once its processes have exited
  run_capped(cmd, log, rank, share, timeout, env)
                              runs ppu-launch `cmd` (its output to `log`) with its rank `rank` held
                              at `share` of a core (None: uncapped); returns (exit code, wall
                              seconds), the cgroup removed
"""

import os
import time

from job import Job  # bench/chaos, on the path the caller sets

PERIOD_US = 100_000


class CpuCap:
    def __init__(self, name, share):
        quota = max(1000, int(share * PERIOD_US))
        v1 = "/sys/fs/cgroup/cpu"
        if os.path.isdir(v1):
            self.path = os.path.join(v1, name)
            os.makedirs(self.path, exist_ok=True)
            self._write("cpu.cfs_period_us", str(PERIOD_US))
            self._write("cpu.cfs_quota_us", str(quota))
        else:
            self.path = os.path.join("/sys/fs/cgroup", name)
            os.makedirs(self.path, exist_ok=True)
            self._write("cpu.max", f"{quota} {PERIOD_US}")

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def hold(self, pid):
        self._write("cgroup.procs", str(pid))  # every thread of the process, and those it makes later

    def hold_rank(self, job, rank):
        """Holds the job's ppu-train of `rank` once it exists; False when the job ended first."""
        while rank not in job.children("ppu-train"):
            if not job.running():
                return False
            time.sleep(0.005)
        self.hold(job.children("ppu-train")[rank])
        return True

    def close(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)  # its processes are still exiting


def run_capped(cmd, log_path, rank, share, timeout, env=None):
    cap = CpuCap(f"ppu-capped-{os.getpid()}", share) if share else None
    started = time.monotonic()
    job = Job(cmd, log_path, env=env)
    try:
        if cap and not cap.hold_rank(job, rank):
            return job.finish(timeout=timeout) or 1, time.monotonic() - started  # ended before the rank started
        rc = job.finish(timeout=timeout)
    finally:
        if cap:
            cap.close()
    return rc, time.monotonic() - started
