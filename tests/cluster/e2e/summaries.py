"""The ranks' run summaries a finished job left on its checkpoint volume, read from the host.

Contract: pv_dir(ns, claim) is the host directory of the hostPath PersistentVolume bound to the
claim (the cluster's `ppu-local` volumes are host directories, so the test reads them in place);
rank_summary(directory, rank) is summary-rank-RANK.json there, as each rank wrote it
(`--summary`); field(path, key) one value of a summary file. A missing file or key raises.
"""

import json
from pathlib import Path
from typing import Any

from . import kube


def pv_dir(ns: str, claim: str) -> Path:
    """Host directory of the PersistentVolume bound to claim ns/claim."""
    volume = kube.kubectl("-n", ns, "get", "pvc", claim)["spec"]["volumeName"]
    return Path(kube.kubectl("get", "pv", volume)["spec"]["hostPath"]["path"])


def field(path: Path, key: str) -> Any:
    """One value of a summary file."""
    return json.loads(path.read_text())[key]


def rank_summary(directory: Path, rank: int) -> Path:
    """Rank `rank`'s summary in a job's volume directory."""
    return directory / f"summary-rank-{rank}.json"


def checksum(directory: Path, rank: int) -> str:
    """Rank `rank`'s final param_checksum."""
    return str(field(rank_summary(directory, rank), "param_checksum"))
