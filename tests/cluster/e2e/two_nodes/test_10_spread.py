"""Step 1 of the two-node program: a 4-rank live job spread over both nodes, training across them.

Contract: on the session's first cluster (prepared by prepare.prepare), PPUJob spread (recovery
live, slicing N = 2, STEPS steps, checkpoints on a ReadWriteMany claim) runs with ranks on both
nodes and each slice's two owners on different nodes, and reaches round 2 (round 3 when it has no
checkpoint yet). Leaves spread running and its ranks on node 2 in state.lost for
test_20_node_lost_live.
"""

from .. import manifests, node_loss
from ..band import Band
from ..cluster import Cluster
from ..helm import OperatorChart
from ..node_loss import NODE_1, NODE_2, ranks_text
from ..ppujob import Jobs
from ..run import Run
from . import NS, STEPS
from .prepare import prepare
from .state import State


def test_1_ranks_spread_over_both_nodes(
    run: Run, cluster: Cluster, operator_chart: OperatorChart, band: Band, state: State, jobs: Jobs
) -> None:
    """N = 2: a node holding both owners of a slice would take that slice with it, which live recovery
    cannot cover (the survivors exit 3 and the gang restarts, by design: docs/RECOVERY.md)."""
    prepare(run, cluster, operator_chart)
    run.progress.say(f"two nodes Ready, NetworkPolicies enforced on both, operator on {NODE_1}")
    spread = jobs("spread").start(
        manifests.spread_job(NS, "spread", "live", STEPS, run.image, NODE_1, slices=2), running_within_s=300
    )
    state.lost = node_loss.spread(NS, "spread")
    node_loss.slices_split(NS, "spread")
    spread.wait_round(2, 900)
    checkpoint = spread.status().last_checkpoint_round
    if not (checkpoint is not None and checkpoint >= 1):
        spread.wait_round(3, 900)
    run.progress.passed(
        f"4 ranks spread over {NODE_1} and {NODE_2} by spec.scheduling.affinity (ranks {ranks_text(state.lost)}on {NODE_2}), "
        "training across the nodes with NetworkPolicies enforced, checkpoints on a ReadWriteMany claim "
        f"(round {spread.status().outer_round})"
    )
