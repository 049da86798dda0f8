"""How a live job of the two-node program is judged after it lost node 2 (steps 2 and 2b).

Contract: wait_recovered(job, lost) waits up to 600 s until status.recoveries covers the lost
ranks and 4 ranks are live, failing at once when the job Failed, and returns (recoveries, whether
condition Degraded was seen True); ended_on_node_1(job) fails unless every pod of the job ended on
NODE_1 with one parameter checksum on every rank, and returns (checksum, perplexity).
"""

from .. import node_loss
from ..node_loss import NODE_1
from ..ppujob import status
from ..waiting import wait_at_most
from . import NS


def wait_recovered(job: str, lost: list[str]) -> tuple[int | None, bool]:
    """Waits (600 s) until status.recoveries covers the lost ranks and 4 ranks are live; (recoveries, Degraded seen)."""
    seen = False

    def observe() -> tuple[int | None, int | None]:
        nonlocal seen
        now = status(job, NS)
        if now.condition_status("Degraded") == "True":
            seen = True
        done = now.recoveries is not None and now.recoveries >= len(lost) and now.live_ranks == 4
        if not done and now.phase == "Failed":
            raise AssertionError(f"{job} Failed: {now.dump()}")
        return now.recoveries, now.live_ranks

    last = wait_at_most(observe, 600, until=lambda o: o[0] is not None and o[0] >= len(lost) and o[1] == 4)
    return (last[0] if last else None), seen


def ended_on_node_1(job: str) -> tuple[str, str | None]:
    """A live job that lost NODE_2 ended with every pod on NODE_1 at one set of parameters: (checksum, perplexity)."""
    elsewhere = node_loss.off_node(NS, job, NODE_1)
    assert not elsewhere, f"{job}: pods not on {NODE_1} at the end: {node_loss.describe(node_loss.placement(NS, job))}"
    return node_loss.same_parameters(NS, job), status(job, NS).perplexity
