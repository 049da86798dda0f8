"""The ranks' run summaries a finished job left on its checkpoint volume, read from the host.

Contract: pv_dir(ns, claim) is the host directory of the hostPath PersistentVolume bound to the
claim (the cluster's `ppu-local` volumes are host directories, so the test reads them in place);
rank_summary(directory, rank) is summary-rank-RANK.json there, as each rank wrote it
(`--summary`, manifests.py); load(directory, rank) that rank's Summary (python/ppu: checked
against the contract's field list, read by attribute). A missing file or field raises.
"""

from pathlib import Path

from ppu import summary

from . import kube


def pv_dir(ns: str, claim: str) -> Path:
    """Host directory of the PersistentVolume bound to claim ns/claim."""
    volume = kube.kubectl("-n", ns, "get", "pvc", claim)["spec"]["volumeName"]
    return Path(kube.kubectl("get", "pv", volume)["spec"]["hostPath"]["path"])


def rank_summary(directory: Path, rank: int) -> Path:
    """Rank `rank`'s summary file in a job's volume directory: the name manifests.py gives `--summary`."""
    return directory / f"summary-rank-{rank}.json"


def load(directory: Path, rank: int) -> summary.Summary:
    """Rank `rank`'s summary in a job's volume directory."""
    return summary.load(rank_summary(directory, rank))


def checksum(directory: Path, rank: int) -> str:
    """Rank `rank`'s final param_checksum."""
    return str(load(directory, rank).param_checksum)
