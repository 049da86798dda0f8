"""Step 3 of the two-node program: node 2 lost under gang recovery, one gang restart on node 1.

Contract: on a fresh cluster (prepared by prepare.prepare), PPUJob gang (recovery gang,
GANG_STEPS steps) spread over both nodes has a checkpoint at a tenth of its rounds within 600 s;
node 2 is then stopped: within 600 s a new gang runs (restartCount >= 1), its rank 0 logs within
240 s that it resumed from a checkpoint, and gang Succeeds within 1200 s with restartCount
exactly 1, every pod on node 1, a PodForceDeleted event naming node 2 and one parameter checksum
on every rank.
"""

from .. import kube, manifests, node_loss
from ..helm import OperatorChart
from ..node_loss import NODE_1, NODE_2, ranks_text
from ..ppujob import Jobs
from ..run import Run
from ..waiting import wait_at_most
from . import GANG_ROUNDS, GANG_STEPS, NS
from .prepare import prepare


def test_3_node_lost_under_gang_recovery(run: Run, operator_chart: OperatorChart, jobs: Jobs) -> None:
    cluster = run.fresh_cluster()
    prepare(run, cluster, operator_chart)
    gang = jobs("gang").start(
        manifests.spread_job(NS, "gang", "gang", GANG_STEPS, run.image, NODE_1), running_within_s=300
    )
    lost = node_loss.spread(NS, "gang")
    needed = GANG_ROUNDS // 10
    checkpoint = wait_at_most(
        lambda: gang.status().last_checkpoint_round, 600, until=lambda ck: ck is not None and ck >= needed
    )
    assert checkpoint is not None and checkpoint >= needed, (
        f"gang: no checkpoint at round {needed} (last '{checkpoint}')"
    )
    cluster.stop_node(NODE_2)
    run.progress.say(
        f"stopped {NODE_2} at round {gang.status().outer_round}, checkpoint round {checkpoint} "
        f"(ranks {ranks_text(lost)}were there)"
    )

    def restart() -> tuple[int | None, str | None]:
        now = gang.status()
        done = now.restart_count is not None and now.restart_count >= 1 and now.phase == "Running"
        if not done and now.phase == "Failed":
            raise AssertionError(f"gang Failed: {now.dump()}")
        return now.restart_count, now.phase

    last = wait_at_most(restart, 600, until=lambda o: o[0] is not None and o[0] >= 1 and o[1] == "Running")
    phase = gang.status().phase
    assert phase == "Running", (
        f"gang: no new gang running 600 s after the loss (restartCount '{last[0] if last else None}', phase {phase})"
    )

    def resumed() -> str:
        return next((line for line in kube.logs(NS, "gang-rank-0").splitlines() if "resumed from" in line), "")

    line = wait_at_most(resumed, 240)
    assert line, "gang: the new rank 0 never logged 'resumed from' a checkpoint"
    gang.wait_phase("Succeeded", 1200)
    restart_count = gang.status().restart_count
    assert restart_count == 1, f"gang: restartCount {restart_count}, expected exactly 1"
    elsewhere = node_loss.off_node(NS, "gang", NODE_1)
    assert not elsewhere, (
        f"gang: pods not on {NODE_1} at the end: {node_loss.describe(node_loss.placement(NS, 'gang'))}"
    )
    forced = node_loss.force_deletions(NS)
    assert NODE_2 in forced, f"gang: no PodForceDeleted event naming {NODE_2}: {forced}"
    checksum = node_loss.same_parameters(NS, "gang")
    resumed_from = line.split("] ", 1)[1] if "] " in line else line
    run.progress.passed(
        f"gang: {NODE_2} lost; one gang restart on {NODE_1} (old pods force-deleted), rank 0 {resumed_from}, "
        f"Succeeded, every rank at parameters {checksum}"
    )
