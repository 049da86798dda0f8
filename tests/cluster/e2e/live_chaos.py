"""The live job of the one-node program's chaos phase (5b): faults in one PPUJob under network.recovery live.

Contract: LiveJob(ns, progress) is PPUJob ns/live, 4 ranks, a ppujob.Job (start, wait_phase,
wait_round) whose check_running() fails when the job Failed, or Succeeded before the faults were
all injected: wait_round() and every wait here fail at once then. remember_uids() notes each rank
pod's uid and only_replaced(rank) checks that that rank's pod alone was recreated since, without a
gang restart; at_round_boundary(r) returns as rank 1 logs the step that ends a round >= r (as its
outer sync starts); wait_recovered(n, since, rank) waits for the n-th recovery: status.recoveries
n, the rank's replacement back in the group, and condition Degraded seen True since the fault and
False again. cut_rank_1()/uncut_rank_1() drop rank 1's packets at its node's bridge, both ways,
and count them.
"""

import re
import threading
from datetime import UTC, datetime

from . import kube, ppujob
from .cluster import Cluster
from .program import Progress
from .waiting import wait_at_most

RANKS = (0, 1, 2, 3)
_CUT_TABLE = "ppu_cut_rank_1"
_CUT = """\
table bridge ppu_cut_rank_1 {{
  chain from_rank {{ type filter hook prerouting priority -300; ip saddr {ip} counter drop; }}
  chain to_rank {{ type filter hook postrouting priority -300; ip daddr {ip} counter drop; }}
}}
"""


def utc_now() -> str:
    """Now in RFC 3339 (UTC, seconds): comparable as text with a condition's lastTransitionTime."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cut_rank_1(cluster: Cluster, ip: str) -> None:
    """Drops every packet from or to ip at the node's bridge (an nftables table of the bridge family)."""
    cluster.netns("nft", "-f", "-", input=_CUT.format(ip=ip))


def uncut_rank_1(cluster: Cluster) -> int:
    """Removes the cut; returns how many packets it dropped."""
    listing = cluster.netns("nft", "list", "table", "bridge", _CUT_TABLE, read=True)
    dropped = 0
    for line in listing.splitlines():
        if "counter packets" in line:
            words = line.split()
            dropped += sum(int(words[i + 1]) for i in range(len(words) - 1) if words[i] == "packets")
    cluster.netns("nft", "delete", "table", "bridge", _CUT_TABLE)
    return dropped


class LiveJob(ppujob.Job):
    """PPUJob ns/live while faults are injected into it."""

    def __init__(self, ns: str, progress: Progress):
        super().__init__("live", ns)
        self.progress = progress
        self.uids: dict[int, str] = {}

    def selector(self, rank: int) -> str:
        return f"ppu.dev/job={self.name},ppu.dev/rank={rank}"

    def check_running(self, now: ppujob.Status) -> None:
        """Fails when the job ended: Failed, or Succeeded before every fault was injected."""
        if now.phase == "Failed":
            raise AssertionError(f"live job Failed: {now.dump()}")
        if now.phase == "Succeeded":
            raise AssertionError("live job Succeeded before every fault was injected: lengthen LIVE_STEPS")

    def uid(self, rank: int) -> str:
        return kube.pod_uid(self.ns, self.selector(rank))

    def remember_uids(self) -> None:
        for rank in RANKS:
            self.uids[rank] = self.uid(rank)
            assert self.uids[rank], f"rank {rank} of the live job has no pod"

    def only_replaced(self, lost: int | None) -> None:
        """Rank `lost`'s pod has a new uid (None: no rank's), every other rank's the one remembered; no gang restart."""
        for rank in RANKS:
            now = self.uid(rank)
            if rank == lost:
                assert now != self.uids[rank], f"rank {rank}'s pod was not recreated after it was lost"
            else:
                which = "none" if lost is None else lost
                assert now == self.uids[rank], f"rank {rank}'s pod was recreated although only rank {which} was lost"
        restarts = self.status().restart_count
        assert restarts == 0, f"the loss of rank {lost} restarted the gang (restartCount {restarts})"

    def at_round_boundary(self, round_: int) -> None:
        """Returns as rank 1 logs the step that ends a round >= round_ (log_every = sync_every = 10: its outer sync starts)."""
        stream = kube.follow("-n", self.ns, "logs", "-f", f"{self.name}-rank-1", "--tail=1")
        deadline = threading.Timer(600, stream.kill)
        deadline.start()
        found = False
        try:
            assert stream.stdout is not None
            for line in stream.stdout:
                match = re.search(r" info step ([0-9]+)/", line)
                if match and int(match.group(1)) >= round_ * 10 and int(match.group(1)) % 10 == 0:
                    found = True
                    break
        finally:
            deadline.cancel()
            stream.kill()
            stream.wait()
        assert found, f"rank 1 never logged the end of round {round_}"

    def rejoined(self, rank: int) -> bool:
        """Whether rank's pod logged that the live group took it back (its log read whole)."""
        return f"rank {rank} rejoined in round" in kube.logs(self.ns, f"{self.name}-rank-{rank}")

    def wait_recovered(self, recoveries: int, since: str, rank: int) -> None:
        """Waits for recovery number `recoveries` of rank `rank`, lost at time `since` (RFC 3339).

        status.recoveries reaches it, the rank's replacement says it rejoined, every rank is in the
        live group again, and condition Degraded has been True since `since` and is False again. A
        Degraded spell can be shorter than a poll, so a False whose lastTransitionTime is at or after
        `since` counts as seen too: the operator moves that time only when the status changes.
        """
        seen = False
        since_true = ""

        def note(now: ppujob.Status) -> None:
            nonlocal seen
            if now.condition_status("Degraded") == "True":
                seen = True

        def counted(n: int | None) -> bool:
            return n is not None and n >= recoveries

        def observe_count() -> int | None:
            now = self.status()
            note(now)
            if not counted(now.recoveries):
                self.check_running(now)
            return now.recoveries

        count = wait_at_most(observe_count, 300, until=counted, interval_s=1)
        assert count == recoveries, (
            f"live job: recoveries '{count}'; expected {recoveries} after {recoveries} rank loss(es)"
        )

        def observe_rejoined() -> bool:
            now = self.status()
            note(now)
            back = self.rejoined(rank)
            if not back:
                self.check_running(now)
            return back

        wait_at_most(observe_rejoined, 120, interval_s=1)
        assert self.rejoined(rank), f"live job: rank {rank}'s replacement never logged that it rejoined"

        def observe_cleared() -> bool:
            nonlocal since_true
            now = self.status()
            note(now)
            degraded = now.condition("Degraded")
            since_true = (degraded.last_transition_time if degraded else None) or ""
            cleared = now.condition_status("Degraded") == "False" and now.live_ranks == 4
            if cleared and (seen or not since_true < since):
                again = self.status().recoveries
                assert again == recoveries, (
                    f"live job: recoveries {again} after recovery {recoveries}: a loss counted twice"
                )
                return True
            self.check_running(now)
            return False

        if wait_at_most(observe_cleared, 60, interval_s=1):
            return
        if not seen and since_true < since:
            raise AssertionError(
                f"live job: condition Degraded never True while rank {rank} was lost "
                f"(recovery {recoveries}; last transition {since_true}, fault at {since})"
            )
        raise AssertionError(
            f"live job: condition Degraded not cleared after recovery {recoveries}: {self.status().dump_conditions()}"
        )
