"""Copies of every rank pod's log, kept while a cluster end-to-end run lasts (scripts/cluster/rank-logs.sh).

Contract: RankLogs(prefix).start(ns, kubectl) runs rank-logs.sh's copier in a bash of its own:
every 3 s each pod of namespace ns labelled ppu.dev/job has its log (and its previous
container's) copied into a fresh directory /var/tmp/PREFIX-rank-logs.XXXXXX, so that a failure
can show what each rank saw of its group even after its pod was replaced. show() returns what
rank_logs_show prints of the copies (the lines about faults, fencing, re-formations and exits);
stop() ends the copier and remove() deletes the copies. Each is safe to call when start() was not.
"""

import shutil
import subprocess
import tempfile
from pathlib import Path

from . import REPO

RANK_LOGS_SH = REPO / "scripts" / "cluster" / "rank-logs.sh"
# The copier, ended by SIGTERM through the library's own rank_logs_stop.
_COPY = """set -uo pipefail
source "$1"
KUBECTL_BIN="$4"
kubectl() { "$KUBECTL_BIN" "$@"; }
trap 'rank_logs_stop; exit 0' TERM
rank_logs_start "$2" "$3"
wait
"""
_SHOW = 'set -uo pipefail; source "$1"; rank_logs_show "$2"'


class RankLogs:
    """The rank-log copies of one end-to-end run."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.directory: Path | None = None
        self._copier: subprocess.Popen | None = None

    @property
    def started(self) -> bool:
        return self._copier is not None

    def start(self, ns: str, kubectl: str) -> None:
        """Starts copying the logs of namespace ns's PPUJob pods."""
        self.directory = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-rank-logs.", dir="/var/tmp"))
        argv = ["bash", "-c", _COPY, "rank-logs", str(RANK_LOGS_SH), str(self.directory), ns, kubectl]
        self._copier = subprocess.Popen(argv, stdin=subprocess.DEVNULL)

    def show(self) -> str:
        """Per copy, its lines about the group (the last 25), as rank_logs_show prints them; '' without copies."""
        if self.directory is None:
            return ""
        argv = ["bash", "-c", _SHOW, "rank-logs", str(RANK_LOGS_SH), str(self.directory)]
        return subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr

    def stop(self) -> None:
        if self._copier is not None and self._copier.poll() is None:
            self._copier.terminate()
            self._copier.wait()

    def remove(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
