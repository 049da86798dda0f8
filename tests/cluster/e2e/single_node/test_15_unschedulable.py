"""Phase 1b of the one-node program: a PPUJob whose ranks fit no node says so.

Contract: PPUJob unschedulable (2 ranks asking for 64 CPUs each, on a node of far fewer) stays
Pending, and the real scheduler's verdict reaches the job: within 60 s condition
PodsUnschedulable is True, reason Unschedulable, its message naming both rank pods and the
scheduler's own words (Insufficient cpu), and a Warning event Unschedulable says it on the
PPUJob. The job is deleted at the end. Its own PASS line.
"""

import pytest

from .. import kube, manifests, ppujob
from ..run import Run
from ..waiting import wait_for
from . import NS

NAME = "unschedulable"


@pytest.fixture
def unschedulable(run: Run, namespace: str) -> str:
    kube.apply(manifests.unschedulable_job(namespace, NAME, run.image))
    yield NAME
    kube.kubectl("-n", NS, "delete", "ppj", NAME, "--wait=false", json=False)


def test_1b_unschedulable_ranks_named(run: Run, unschedulable: str) -> None:
    def condition() -> ppujob.Condition | None:
        return ppujob.status(unschedulable, NS).condition("PodsUnschedulable")

    pods = [f"{unschedulable}-rank-{rank}" for rank in (0, 1)]

    def names_both(c: ppujob.Condition | None) -> bool:
        # The scheduler judges the pods one by one: the condition may name one before the other.
        return c is not None and c.status == "True" and all(p in (c.message or "") for p in pods)

    c = wait_for(condition, 60, f"condition PodsUnschedulable True naming {' and '.join(pods)}", until=names_both)
    now = ppujob.status(unschedulable, NS)
    assert now.phase == "Pending", now.dump()
    assert c.reason == "Unschedulable", now.dump_conditions()
    assert "Insufficient cpu" in (c.message or ""), c.message
    events = kube.event_messages(NS, "Unschedulable")
    assert "no node" in events, events
    run.progress.passed(f"unschedulable ranks named on the PPUJob: {c.message}")
