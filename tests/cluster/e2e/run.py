"""One end-to-end program's run: the cluster, the image, what runs beside them, and the one cleanup.

Contract: Run(program, keep, rebuild_image) exports PPU_CLUSTER_DIR and PPU_CLUSTER_PORT (the
program's defaults unless the environment sets them) and names the image under test ($PPU_IMAGE,
default localhost/ppu:dev). fresh_cluster() brings up a new cluster of the program's node count
(taking down one an earlier run left), exports its KUBECONFIG, points kube at its kubectl and
starts, once per run, the copies of the rank pods' logs. background() registers a process to end
on the way out. failure_report() returns, the first time it is asked, what the bash programs
printed when they failed: the cluster's objects, the operator's last 30 log lines, the job
namespace's last events and each rank log copy's lines about its group. cleanup() is the only
cleanup both programs have: it ends the fault-free band, the log copier and the background
processes, deletes the scratch directories, takes the cluster down unless keep, restores the
environment, and raises when `cluster.sh down` failed.
"""

import os
import subprocess
from pathlib import Path

from . import kube
from .band import Band
from .cluster import Cluster, ClusterError
from .program import OPERATOR_NAMESPACE, Program, Progress
from .rank_logs import RankLogs

_EXPORTED = ("PPU_CLUSTER_DIR", "PPU_CLUSTER_PORT", "KUBECONFIG")


class Run:
    """One program's run and everything it must end."""

    def __init__(self, program: Program, keep: bool, rebuild_image: bool):
        self.program = program
        self.keep = keep
        self.rebuild_image = rebuild_image
        self.progress = Progress(program)
        self.image = os.environ.get("PPU_IMAGE", "localhost/ppu:dev")
        self._saved_env = {name: os.environ.get(name) for name in _EXPORTED}
        os.environ.setdefault("PPU_CLUSTER_DIR", program.cluster_dir)
        os.environ.setdefault("PPU_CLUSTER_PORT", program.cluster_port)
        self.cluster = Cluster(Path(os.environ["PPU_CLUSTER_DIR"]))
        self.band = Band(self.image, program.scratch_prefix)
        self.rank_logs = RankLogs(program.scratch_prefix)
        self._background: list[subprocess.Popen] = []
        self._reported = False

    def background(self, process: subprocess.Popen) -> subprocess.Popen:
        """Ends process (SIGTERM, then waits for it) on the way out."""
        self._background.append(process)
        return process

    def fresh_cluster(self) -> Cluster:
        """A new cluster of the program's node count, KUBECONFIG exported, kube pointed at its kubectl."""
        if self.cluster.holding():
            self.cluster.down()
        os.environ["KUBECONFIG"] = self.cluster.up(self.program.nodes)
        kubectl = str(Path(self.cluster.env()["TOOLS"]) / "kubectl")
        kube.use(kubectl)
        self.progress.phase("cluster up")
        # One copier for the run, across its clusters: copies outlive their pods and clusters.
        if not self.rank_logs.started:
            self.rank_logs.start(self.program.namespace, kubectl)
        return self.cluster

    def failure_report(self) -> str | None:
        """The state at the first failure, as text; None when it was reported already."""
        if self._reported:
            return None
        self._reported = True
        parts = []
        if self.cluster.kubeconfig().is_file() and kube.configured():
            parts.append("--- state at failure")
            parts.append(
                kube.kubectl("get", self.program.failure_kinds, "-A", "-o", "wide", json=False, check=False) or ""
            )
            log = kube.kubectl(
                "-n", OPERATOR_NAMESPACE, "logs", "deploy/ppu-operator", "--tail=30", json=False, check=False
            )
            parts.append(f"--- the operator's last log lines\n{log or ''}")
            ns = self.program.namespace
            events = kube.kubectl("-n", ns, "get", "events", "--sort-by=.lastTimestamp", json=False, check=False) or ""
            parts.append(f"--- the last events of namespace {ns}\n" + "\n".join(events.splitlines()[-30:]))
        # What each rank of the namespace's jobs saw of its group (faults, fencing, re-formations),
        # from the copies kept while they ran: a pod replaced or restarted before the failure too.
        parts.append(self.rank_logs.show())
        return "\n".join(part.rstrip("\n") for part in parts if part)

    def cleanup(self) -> None:
        """Ends everything the run started and takes the cluster down (unless keep)."""
        self.band.stop()
        self.rank_logs.stop()
        for process in self._background:
            if process.poll() is None:
                process.terminate()
            process.wait()
        self.rank_logs.remove()
        failed = None
        if not self.keep:
            self.progress.restart_phase()
            try:
                self.cluster.down()
            except ClusterError as e:
                failed = e
            self.progress.phase("cluster down")
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if failed is not None:
            raise failed
