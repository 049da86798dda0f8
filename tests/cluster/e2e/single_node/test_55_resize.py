"""Phase 5d of the one-node program: an elastic live job resized while it runs (docs/RESIZE.md).

Contract: the module's `elastic` fixture starts PPUJob elastic (spec.elastic {minReplicas: 2,
maxReplicas: 4}, 2 replicas, live recovery, checkpoints on an emptyDir) and waits for it to run.
Grow: `kubectl scale ppj elastic --replicas 4` creates the pods of ranks 2 and 3, and the live
group reaches 4 (status.liveRanks, from the ranks' metrics) with no recovery counted and no gang
restart. Shrink: `--replicas 2` reaches the rendezvous store through the job's ConfigMap (the
kubelet updates the mounted file at once, since the operator annotates the store's pod with the
size; ppu-rendezvous --desired-file), ranks 2 and 3 retire at a round
boundary (their pods end Succeeded with a termination message that begins "retired: " and are
removed) and the live group is 2 again, still with no recovery and no gang restart. Each its own
PASS line, with the seconds from `kubectl scale` to the live group's new size; the job is deleted
at the end.
"""

import time

import pytest

from .. import kube, manifests
from ..ppujob import Job
from ..run import Run
from ..waiting import wait_for
from . import NS

# Long enough to outlast both resizes at any speed; the job is deleted when the phase is done.
ELASTIC_STEPS = 1_000_000


@pytest.fixture(scope="module")
def elastic(run: Run, namespace: str) -> Job:
    job = Job("elastic", namespace).start(manifests.elastic_job(namespace, "elastic", ELASTIC_STEPS, run.image))
    yield job
    kube.kubectl("-n", NS, "delete", "ppj", "elastic", "--wait=false", json=False)


def rank_pods() -> set[int]:
    return {int(p["metadata"]["labels"]["ppu.dev/rank"]) for p in kube.pods(NS, "ppu.dev/job=elastic,ppu.dev/rank")}


def test_5d_1_grow(run: Run, elastic: Job) -> None:
    wait_for(lambda: elastic.status().live_ranks, 300, "the elastic job's live group of 2", until=lambda n: n == 2)
    scaled = time.monotonic()
    kube.kubectl("-n", NS, "scale", "ppj", "elastic", "--replicas", "4", json=False)
    run.progress.say("scaled PPUJob elastic to 4 replicas")
    wait_for(rank_pods, 120, "pods of ranks 0-3", until=lambda ranks: ranks == {0, 1, 2, 3})
    wait_for(lambda: elastic.status().live_ranks, 600, "a live group of 4", until=lambda n: n == 4)
    took = time.monotonic() - scaled
    now = elastic.status()
    assert now.desired_replicas == 4 and now.last_resize_to == 4, now.dump()
    assert (now.recoveries or 0) == 0, f"new slots counted as losses: {now.dump()}"
    assert (now.restart_count or 0) == 0, f"the gang restarted: {now.dump()}"
    assert "resized from 2 to 4" in kube.event_messages(NS, "Resized"), kube.event_messages(NS, "Resized")
    run.progress.passed(
        f"elastic: scaled 2 -> 4, ranks 2 and 3 joined the live group in {took:.0f} s, no recovery, no gang restart"
    )


def test_5d_2_shrink(run: Run, elastic: Job) -> None:
    scaled = time.monotonic()
    kube.kubectl("-n", NS, "scale", "ppj", "elastic", "--replicas", "2", json=False)
    run.progress.say("scaled PPUJob elastic to 2 replicas")
    # The kubelet's update of the ConfigMap's file, then the next round boundary.
    wait_for(lambda: elastic.status().live_ranks, 600, "a live group of 2", until=lambda n: n == 2)
    took = time.monotonic() - scaled
    wait_for(rank_pods, 300, "only the pods of ranks 0 and 1", until=lambda ranks: ranks == {0, 1})
    now = elastic.status()
    assert now.phase == "Running" and now.desired_replicas == 2, now.dump()
    assert (now.recoveries or 0) == 0, f"retired ranks counted as losses: {now.dump()}"
    assert (now.restart_count or 0) == 0, f"the gang restarted: {now.dump()}"
    run.progress.passed(
        f"elastic: scaled 4 -> 2, ranks 2 and 3 retired at a round boundary in {took:.0f} s, no recovery"
    )
