"""Step 2b of the two-node program: node 2 partitioned and healed under live recovery, its old ranks fenced.

Contract: on a fresh cluster (prepared by prepare.prepare), PPUJob part (as spread) loses node 2
to `cluster.sh partition-node` at a tenth of its rounds: within 600 s one recovery per lost rank
and 4 live ranks, the replacements rejoin, while old rank processes still run on node 2; after
`heal-node` node 2 is Ready within 180 s and none of them runs any more; part Succeeds within
1200 s with restartCount 0, no recovery counted again, every pod on node 1 at one parameter
checksum. Its final perplexity goes to state.part_perplexity, which test_90_final_status judges.
"""

from .. import kube, manifests, node_loss
from ..helm import OperatorChart
from ..node_loss import NODE_1, NODE_2, ranks_text
from ..ppujob import Jobs
from ..run import Run
from ..waiting import wait_at_most
from . import NS, ROUNDS, STEPS
from .live_recovery import ended_on_node_1, wait_recovered
from .prepare import prepare
from .state import State


def test_2b_node_partitioned_then_healed(run: Run, operator_chart: OperatorChart, state: State, jobs: Jobs) -> None:
    """The node's processes run on through the partition (a switch failed, not the machine): the
    operator replaces its ranks on node 1; when the node comes back, its old rank processes find the
    live group formed without them and leave (exit 5, out of the group), and its kubelet ends the
    containers of pods the API server no longer has. Nothing of the old pods may rejoin."""
    cluster = run.fresh_cluster()
    prepare(run, cluster, operator_chart)
    part = jobs("part").start(
        manifests.spread_job(NS, "part", "live", STEPS, run.image, NODE_1, slices=2), running_within_s=300
    )
    lost = node_loss.spread(NS, "part")
    node_loss.slices_split(NS, "part")
    part.wait_round(ROUNDS // 10, 900)
    cluster.partition_node(NODE_2)
    run.progress.say(f"partitioned {NODE_2} at round {part.status().outer_round} (ranks {ranks_text(lost)}were there)")
    recoveries, _ = wait_recovered("part", lost)
    assert recoveries == len(lost), (
        f"part: recoveries '{recoveries}', liveRanks '{part.status().live_ranks}' after partitioning ranks {ranks_text(lost)}"
    )
    node_loss.rejoined(NS, "part", lost, run.progress)
    running = node_loss.ranks_still_on_node_2()
    assert running > 0, f"part: no old rank runs on the partitioned {NODE_2}: the test would not show the fence"
    cluster.heal_node(NODE_2)
    run.progress.say(
        f"healed {NODE_2} at round {part.status().outer_round} with {running} old rank process(es) still running there"
    )

    def back() -> str:
        return kube.node_ready(NODE_2)

    ready = wait_at_most(back, 180, until=lambda r: r == "True" and node_loss.ranks_still_on_node_2() == 0)
    assert ready == "True", f"part: {NODE_2} not Ready 180 s after it was healed"
    left = node_loss.ranks_still_on_node_2()
    assert left == 0, f"part: {left} old rank process(es) still run on {NODE_2} 180 s after it came back"
    part.wait_phase("Succeeded", 1200)
    now = part.status()
    assert now.restart_count == 0, f"part: restartCount {now.restart_count}: the returning node restarted the gang"
    assert now.recoveries == recoveries, (
        f"part: recoveries {now.recoveries}, {recoveries} before the node came back: an old pod counted again"
    )
    checksum, state.part_perplexity = ended_on_node_1("part")
    run.progress.passed(
        f"live: {NODE_2} partitioned; ranks {ranks_text(lost)}replaced on {NODE_1}; when it came back its {running} old "
        f"rank process(es) were fenced and ended (no rejoin, no gang restart, recoveries still {recoveries}), Succeeded, "
        f"every rank at parameters {checksum}, perplexity {state.part_perplexity} (judged in step 4)"
    )
