"""Step 2 of the two-node program: node 2 lost under live recovery, its ranks replaced on node 1.

Contract: spread's store runs on node 1; at a tenth of its rounds `cluster.sh stop-node` stops
node 2, which goes NotReady within 180 s; within 600 s status.recoveries covers state.lost with 4
live ranks and condition Degraded was seen True; a PodForceDeleted event names node 2; the
operator's /metrics (a reader's token through a port-forward) agree with the status; the
replacements rejoin; spread Succeeds within 1200 s with restartCount 0, Degraded False, every pod
on node 1 at one parameter checksum. Its final perplexity goes to state.spread_perplexity, which
test_90_final_status judges.
"""

from .. import kube, node_loss, operator_metrics
from ..cluster import Cluster
from ..node_loss import NODE_1, NODE_2, ranks_text
from ..ppujob import Jobs
from ..run import Run
from ..waiting import wait_at_most
from . import METRICS_READER, NS, OPNS, ROUNDS
from .live_recovery import ended_on_node_1, wait_recovered
from .state import State


def recovery_metrics(run: Run, job: str, recoveries: int, lost: int) -> None:
    """What the operator exports after a node loss agrees with the job's status."""

    def agreeing(text: str) -> bool:
        job_recoveries = operator_metrics.job_value(text, "ppu_job_recoveries", job, NS)
        return (
            job_recoveries == str(recoveries) and operator_metrics.job_value(text, "ppu_job_live_ranks", job, NS) == "4"
        )

    # The job gauges follow the status and the ranks' scrape (2 s).
    text = wait_at_most(lambda: operator_metrics.scrape(OPNS, METRICS_READER), 60, until=agreeing) or ""
    got = operator_metrics.job_value(text, "ppu_job_recoveries", job, NS)
    assert got == str(recoveries), f"{job}: ppu_job_recoveries '{got}', status.recoveries {recoveries}"
    got = operator_metrics.job_value(text, "ppu_job_live_ranks", job, NS)
    assert got == "4", f"{job}: ppu_job_live_ranks '{got}' after the replacements rejoined"
    got = operator_metrics.job_value(text, "ppu_job_restarts", job, NS)
    assert got == "0", f"{job}: ppu_job_restarts '{got}'"
    forced = operator_metrics.counter_values(text, "ppu_operator_pod_force_deletions_total")
    assert forced.isdigit() and int(forced) >= lost, (
        f"ppu_operator_pod_force_deletions_total '{forced}' after {lost} pod(s) force-deleted"
    )
    run.progress.say(
        f"operator metrics: ppu_job_recoveries {recoveries}, ppu_job_live_ranks 4, ppu_job_restarts 0, force deletions {forced}"
    )


def test_2_node_lost_under_live_recovery(run: Run, cluster: Cluster, state: State, jobs: Jobs) -> None:
    lost = state.lost
    spread = jobs("spread")
    store = kube.kubectl("-n", NS, "get", "pod", "spread-rendezvous")["spec"].get("nodeName", "")
    assert store == NODE_1, (
        f"the live job's store runs on '{store}', not {NODE_1}: losing {NODE_2} would lose it (a gang restart by design)"
    )
    spread.wait_round(ROUNDS // 10, 900)
    cluster.stop_node(NODE_2)
    run.progress.say(f"stopped {NODE_2} at round {spread.status().outer_round} (ranks {ranks_text(lost)}were there)")
    ready = wait_at_most(lambda: kube.node_ready(NODE_2), 180, until=lambda r: r != "True")
    assert ready != "True", f"{NODE_2} still Ready 180 s after it was stopped"
    run.progress.say(f"{NODE_2} Ready={ready}")
    recoveries, degraded_seen = wait_recovered("spread", lost)
    assert recoveries is not None and recoveries >= len(lost), (
        f"spread: recoveries '{recoveries}', liveRanks '{spread.status().live_ranks}' after losing ranks {ranks_text(lost)}"
    )
    assert degraded_seen, f"spread: condition Degraded never True while ranks {ranks_text(lost)}were lost"
    forced = node_loss.force_deletions(NS)
    assert NODE_2 in forced, f"no PodForceDeleted event naming {NODE_2}: {forced}"
    recovery_metrics(run, "spread", recoveries, len(lost))
    node_loss.rejoined(NS, "spread", lost, run.progress)
    spread.wait_phase("Succeeded", 1200)
    now = spread.status()
    assert now.restart_count == 0, f"spread: restartCount {now.restart_count}, expected no gang restart"
    assert now.condition_status("Degraded") == "False", "spread: Degraded not cleared at the end"
    checksum, state.spread_perplexity = ended_on_node_1("spread")
    run.progress.passed(
        f"live: {NODE_2} lost; ranks {ranks_text(lost)}force-deleted from it and replaced on {NODE_1} "
        f"({spread.status().recoveries} recoveries, Degraded seen and cleared, the operator's metrics agree), "
        f"Succeeded with restartCount 0, every rank at parameters {checksum}, perplexity {state.spread_perplexity} "
        "(judged against the fault-free band in step 4)"
    )
