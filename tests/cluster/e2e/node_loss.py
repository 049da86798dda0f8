"""A PPUJob on two nodes while one node is lost (the two-node program): placement, rejoins, the old node's processes.

Contract: every function reads PPUJob ns/JOB, its pods and summaries, or this host's /proc.
placement() is (rank label, node) of each of the job's pods (the rendezvous pod too, its rank
''), sorted by rank as `sort -n` sorts; spread() waits for the ranks of a Running job to be Ready
and fails unless they are on both nodes, returning the ranks on NODE_2; slices_split() fails
unless each slice's two owners run on different nodes; rejoined() waits for each lost rank's
replacement to log that it rejoined; off_node() lists pods not on a node; same_parameters()
checks every rank's final checksum; ranks_still_on_node_2() counts ppu-train processes still
running in node 2's cgroup. The job's rounds are waited for by ppujob.Job.wait_round.
"""

import re
from collections import defaultdict
from pathlib import Path

from . import kube, ppujob, summaries
from .program import Progress
from .waiting import wait_at_most

NODE_1 = "ppu-node"
NODE_2 = "ppu-node-2"


def _rank_order(rank: str) -> int:
    return int(rank) if rank.isdigit() else 0


def placement(ns: str, job: str, selector: str = "") -> list[tuple[str, str]]:
    """(ppu.dev/rank label, spec.nodeName) of each pod labelled ppu.dev/job=JOB (plus selector)."""
    found = kube.pods(ns, f"ppu.dev/job={job}{selector}")
    rows = [(p["metadata"].get("labels", {}).get("ppu.dev/rank", ""), p["spec"].get("nodeName", "")) for p in found]
    return sorted(rows, key=lambda row: _rank_order(row[0]))


def describe(rows: list[tuple[str, str]]) -> str:
    """Rows as the bash printed them: "a b;c d;"."""
    return "".join(f"{a} {b};" for a, b in rows)


def spread(ns: str, job: str) -> list[str]:
    """Waits until every rank of the Running job is Ready; its ranks must be on both nodes. The ranks on NODE_2."""
    kube.kubectl(
        "-n",
        ns,
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        f"ppu.dev/job={job},ppu.dev/rank",
        "--timeout=180s",
        json=False,
    )
    rows = placement(ns, job)
    on_1 = [rank for rank, node in rows if rank and node == NODE_1]
    on_2 = [rank for rank, node in rows if rank and node == NODE_2]
    assert on_1 and on_2, f"{job}'s ranks are not spread over both nodes: {describe(rows)}"
    return on_2


def ranks_text(ranks: list[str]) -> str:
    """Ranks as the bash's messages named them ("0 2 "), to be followed by a word."""
    return "".join(f"{rank} " for rank in ranks)


def slices_split(ns: str, job: str) -> None:
    """Each slice's owners (pod label ppu.dev/slice) run on both nodes: the operator's slice anti-affinity held."""
    found = kube.pods(ns, f"ppu.dev/job={job},ppu.dev/rank")
    rows = [(p["metadata"].get("labels", {}).get("ppu.dev/slice", ""), p["spec"].get("nodeName", "")) for p in found]
    assert len(rows) == 4 and all(slice_ for slice_, _ in rows), (
        f"{job}: rank pods without a ppu.dev/slice label: {describe(rows)}"
    )
    nodes = defaultdict(set)
    for slice_, node in rows:
        nodes[slice_].add(node)
    assert all(len(on) > 1 for on in nodes.values()), (
        f"{job}: a slice's owners share a node (slice node: {describe(rows)}): the operator's slice anti-affinity did not hold"
    )


def rejoined(ns: str, job: str, ranks: list[str], progress: Progress) -> None:
    """Each rank's replacement logs that the live group took it back, before the job ends."""
    for rank in ranks:
        said = f"rank {rank} rejoined in round"

        def log(rank: str = rank, said: str = said) -> str:
            text = kube.logs(ns, f"{job}-rank-{rank}")
            if said not in text and ppujob.status(job, ns).phase == "Succeeded":
                raise AssertionError(
                    f"{job} Succeeded before rank {rank}'s replacement rejoined: the lost ranks trained none of it"
                )
            return text

        text = wait_at_most(log, 240, until=lambda t, said=said: said in t) or ""
        assert said in text, f"{job}: rank {rank}'s replacement never logged that it rejoined"
        progress.say(f"{job}: {re.search(rf'rank {rank} rejoined in round [0-9]*', text).group(0)}")


def off_node(ns: str, job: str, node: str) -> list[tuple[str, str]]:
    """The job's pods (rank, node) that do not run on `node`."""
    return [(rank, on) for rank, on in placement(ns, job) if (on or rank) and on != node]


def same_parameters(ns: str, job: str) -> str:
    """Every rank's summary names the same final parameters; returns rank 0's checksum."""
    directory = summaries.pv_dir(ns, f"ckpt-{job}")
    first = summaries.checksum(directory, 0)
    for rank in (1, 2, 3):
        assert summaries.checksum(directory, rank) == first, (
            f"{job}: rank {rank} ends with other parameters than rank 0"
        )
    return first


def ranks_still_on_node_2() -> int:
    """ppu-train processes still running in node 2's cgroup (/proc/PID/comm and /proc/PID/cgroup)."""
    count = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() == "ppu-train" and "/node-2/" in (proc / "cgroup").read_text():
                count += 1
        except OSError:
            continue
    return count


def force_deletions(ns: str) -> str:
    """The messages of the job namespace's PodForceDeleted events, one a line."""
    return kube.event_messages(ns, "PodForceDeleted")
