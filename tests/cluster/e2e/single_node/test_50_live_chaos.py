"""Phase 5b of the one-node program: five faults in one live job (network.recovery live), no gang restart.

Contract: the module's `live` fixture starts PPUJob live (4 ranks, LIVE_STEPS steps, checkpoints
on claim ckpt-live) and waits for it to run with its rendezvous pod. Each fault is a test with its
own PASS line, in this order: rank 2's pod deleted as a round's outer sync starts; the rendezvous
pod deleted (recreated alone, event StoreReplaced; the round goes to state.store_deleted_at_round);
rank 0's container SIGKILLed; rank 3's pod deleted and the operator's pod deleted while it
replaces it; rank 1's traffic dropped for 12 s. After each rank fault only that pod is recreated
and condition Degraded is seen True, then False. The job then Succeeds within 900 s with
restartCount 0, 4 recoveries and one parameter checksum on every rank; its final perplexity goes
to state.live_perplexity, which test_90_final_status judges against the fault-free band.
"""

import re
import time

import pytest

from .. import kube, manifests, summaries
from ..cluster import Cluster
from ..live_chaos import LiveJob, cut_rank_1, uncut_rank_1, utc_now
from ..run import Run
from ..waiting import wait_at_most
from . import LIVE_STEPS, NS, OPERATOR, OPNS
from .state import State


@pytest.fixture(scope="module")
def live(run: Run) -> LiveJob:
    """PPUJob live (network.recovery live), Running, with its rendezvous pod."""
    job = LiveJob(NS, run.progress).start(manifests.live_job(NS, "ckpt-live", LIVE_STEPS, run.image))
    assert kube.pod(NS, "live-rendezvous") is not None, "the live job has no rendezvous pod"
    return job


def test_5b_1_rank_pod_deleted_in_outer_sync(run: Run, live: LiveJob) -> None:
    live.wait_round(30, 600, interval_s=1)
    live.remember_uids()
    live.at_round_boundary(32)
    fault_at = utc_now()
    kube.kubectl("-n", NS, "delete", "pod", "-l", live.selector(2), "--wait=false", json=False)
    run.progress.say(
        f"deleted rank 2's pod as rank 1 logged the end of a round (its outer sync), round {live.status().outer_round}"
    )
    live.wait_recovered(1, fault_at, 2)
    live.only_replaced(2)
    run.progress.passed(
        "chaos: rank 2's pod deleted during an outer sync; only it was recreated, Degraded seen and cleared, no gang restart"
    )


def test_5b_2_rendezvous_pod_deleted(run: Run, live: LiveJob, state: State) -> None:
    """Recreated alone (event StoreReplaced): the ranks rebuild its keys and train on; no rank pod changes.

    No rank leaves the live group, so Degraded is not expected; whether it was seen is printed.
    """
    live.remember_uids()

    def store_uid() -> str:
        store = kube.pod(NS, "live-rendezvous")
        return store["metadata"]["uid"] if store else ""

    old_uid = store_uid()
    at_round = live.status().outer_round or 0
    state.store_deleted_at_round = at_round
    kube.kubectl("-n", NS, "delete", "pod", "live-rendezvous", "--wait=false", json=False)
    run.progress.say(f"deleted the rendezvous pod at round {at_round}")
    degraded_seen = False

    def new_store() -> str:
        nonlocal degraded_seen
        if live.status().condition_status("Degraded") == "True":
            degraded_seen = True
        return store_uid()

    now = wait_at_most(new_store, 300, until=lambda uid: bool(uid) and uid != old_uid, interval_s=1)
    assert now and now != old_uid, "the rendezvous pod was not recreated after it was deleted"
    live.wait_round(at_round + 5, 600, interval_s=1)
    replaced = kube.event_messages(NS, "StoreReplaced")
    assert replaced, "no StoreReplaced event after the rendezvous pod was deleted"
    live.only_replaced(None)
    run.progress.passed(
        f"chaos: the rendezvous pod deleted, recreated alone ({replaced}); the job trains on at round "
        f"{live.status().outer_round} (Degraded seen: {degraded_seen})"
    )


def test_5b_3_rank0_container_killed(run: Run, cluster: Cluster, live: LiveJob, state: State) -> None:
    """Rank 0: the store's and the job's first rank."""
    live.wait_round(state.store_deleted_at_round + 20, 600, interval_s=1)
    live.remember_uids()
    cid = kube.container_id(NS, live.selector(0))
    fault_at = utc_now()
    cluster.kill_container(cid)
    run.progress.say(f"killed rank 0's container at round {live.status().outer_round}")
    live.wait_recovered(2, fault_at, 0)
    live.only_replaced(0)
    run.progress.passed(
        "chaos: rank 0's container SIGKILLed; only its pod was recreated, Degraded seen and cleared, no gang restart"
    )


def test_5b_4_operator_deleted_while_replacing(run: Run, live: LiveJob) -> None:
    """The next operator (the Deployment's new pod, once it holds the lease) finds the loss counted
    in status.recoveringRanks and finishes the replacement; the loss counts once."""
    live.wait_round((live.status().outer_round or 0) + 5, 600, interval_s=1)
    live.remember_uids()
    old = kube.pods(OPNS, OPERATOR)[0]["metadata"]
    fault_at = utc_now()
    # Back to back: the operator goes while the loss is being handled (whichever of the old and the
    # new operator sees it first counts it; the other must not count it again).
    kube.kubectl("-n", NS, "delete", "pod", "-l", live.selector(3), "--wait=false", json=False)
    kube.kubectl("-n", OPNS, "delete", "pod", "-l", OPERATOR, "--wait=false", json=False)
    run.progress.say("deleted rank 3's pod, then at once the operator's pod")
    live.wait_recovered(3, fault_at, 3)
    live.only_replaced(3)
    gone = kube.kubectl(
        "-n", OPNS, "wait", "--for=delete", f"pod/{old['name']}", "--timeout=120s", json=False, check=False
    )
    assert gone is not None, f"the operator's old pod {old['name']} is still there"
    kube.kubectl("-n", OPNS, "wait", "--for=condition=Ready", "pod", "-l", OPERATOR, "--timeout=120s", json=False)
    assert kube.pods(OPNS, OPERATOR)[0]["metadata"]["uid"] != old["uid"], "the operator's pod was not replaced"
    run.progress.passed(
        "chaos: the operator's pod deleted while it replaced rank 3; the next operator finished it (the loss counted "
        "once), Degraded seen and cleared, no gang restart"
    )


def test_5b_5_rank1_traffic_dropped(run: Run, cluster: Cluster, live: LiveJob) -> None:
    """Rank 1 cut off for 12 s (past twice heartbeat_s 5), by a NetworkPolicy and at the bridge.

    The policy selects only rank 1 and allows no egress, so no connection rank 1 opens is admitted.
    A policy cannot cut a pod off by itself, though: policies only allow, and the enforcement judges
    connections, not packets, so a connection a peer opened to rank 1 would stay (and flushing
    conntrack only makes a race of it: a peer's retransmission brought one of rank 1's store
    connections through the cut). So rank 1's packets are also dropped, both ways, at its node's
    bridge for the same 12 s, as a switch port that stops forwarding would. TCP keeps the
    connections; the others fence rank 1, it finds itself out of the group when the cut ends and
    exits with the code for "I lost the group", and only its pod is recreated.
    """
    live.wait_round((live.status().outer_round or 0) + 5, 600, interval_s=1)
    live.remember_uids()
    rank_1 = kube.pods(NS, live.selector(1))[0]
    ip = rank_1.get("status", {}).get("podIP", "")
    fault_at = utc_now()
    kube.apply(manifests.cut_rank_1_policy(NS, "live"))
    cut_rank_1(cluster, ip)
    run.progress.say(
        f"rank 1 ({ip}) cut off at round {live.status().outer_round}: NetworkPolicy cut-rank-1, "
        "and its packets dropped at the bridge"
    )
    time.sleep(12)
    dropped = uncut_rank_1(cluster)
    kube.kubectl("-n", NS, "delete", "networkpolicy", "cut-rank-1", json=False)
    # A cut that dropped nothing cut nothing (rank 1 on another bridge, a rule that never matched).
    assert dropped > 0, "the bridge dropped none of rank 1's packets during the cut"
    run.progress.say(f"the cut removed at round {live.status().outer_round}: {dropped} of rank 1's packets dropped")
    live.wait_recovered(4, fault_at, 1)
    live.only_replaced(1)
    run.progress.passed(
        "chaos: rank 1's traffic dropped for 12 s (NetworkPolicy and bridge); it was fenced and only its pod "
        "recreated, Degraded seen and cleared, no gang restart"
    )


def test_5b_live_job_succeeds_without_gang_restart(run: Run, live: LiveJob, state: State) -> None:
    live.wait_phase("Succeeded", 900)
    now = live.status()
    assert now.restart_count == 0, f"live job: restartCount '{now.restart_count}', expected no gang restart"
    assert now.recoveries == 4, f"live job: recoveries '{now.recoveries}', expected one per rank fault (4)"
    live_dir = summaries.pv_dir(NS, "ckpt-live")
    live_sum = summaries.checksum(live_dir, 1)
    for rank in (0, 2, 3):
        assert summaries.checksum(live_dir, rank) == live_sum, (
            f"live job: rank {rank} ends with other parameters than rank 1"
        )
    for line in kube.logs(NS, "live-rank-1").splitlines():
        if re.search(r"lost rank|rejoined in round", line):
            print(f"    {line}", flush=True)
    state.live_perplexity = live.status().perplexity
    run.progress.passed(
        f"chaos: the live job Succeeded after 5 faults with 0 gang restarts and {live.status().recoveries} recoveries, "
        f"every rank at {live_sum}, perplexity {state.live_perplexity} (judged against the fault-free band at the "
        "end, step 5c)"
    )
    run.progress.phase("live recovery: five faults, no gang restart")
