"""End to end on a real two-node cluster, a node lost under each recovery mode (ctest cluster_nodes_e2e).

Contract: the tests below run in this order, each one step with its own PASS line; a failure
names its step, and the steps after it are skipped. The cluster is `cluster.sh up --nodes 2`
(two kubelets and two containerds, each node its own network namespace, bridge and pod CIDR,
routed to each other) with NetworkPolicies enforced on both nodes and the chart's defaults; the
operator is pinned to node 1 (chart nodeSelector): the test loses node 2, not the operator.
Needs root; builds the image (scripts/build-image.sh) when podman lacks it. Options --keep and
--rebuild-image (conftest.py); environment PPU_CLUSTER_DIR (default
/var/lib/ppu-cluster-nodes-e2e), PPU_CLUSTER_PORT (16446), PPU_IMAGE (localhost/ppu:dev). The steps:
  1. a 4-rank PPUJob spread over both nodes by the user's spec.scheduling.affinity, its checkpoints
     on a ReadWriteMany claim both nodes mount: ranks on both nodes, rendezvous and Gloo across
     the nodes, training;
  2. node loss under recovery live, slicing N = 2: the operator's anti-affinity between the owners
     of a slice put each slice's two owners on different nodes. `cluster.sh stop-node ppu-node-2`
     kills the node's kubelet, containerd and pods at once; the node goes NotReady, its pods are
     evicted after their tolerations (5 s) and force-deleted by the operator (events
     PodForceDeleted), the lost ranks are recreated on node 1 and rejoin; condition Degraded is
     seen True and then False; the operator's /metrics (through a port-forward, with a reader's
     token: the chart's metricsAuth) count the recoveries, the force deletions and 4 live ranks;
     the job Succeeds with restartCount 0, one recovery per lost rank, every pod on node 1, every
     rank with the same final parameters (its perplexity: step 4);
  2b. node 2 partitioned (`cluster.sh partition-node`: its processes run on, neither side hears
     the other), on a fresh cluster, under live: its ranks are replaced on node 1 as in 2; then
     `heal-node`: the node is Ready again, its old rank processes leave (out of the live group)
     and its kubelet ends their containers; no gang restart, no loss counted twice, Succeeded;
  3. node loss under recovery gang, on a fresh two-node cluster: one gang restart, the new gang on
     the surviving node (the old pods force-deleted), rank 0 resumes from the last checkpoint on
     the shared volume, the job Succeeds with restartCount 1;
  4. the final perplexity of the live jobs of 2 and 2b inside the fault-free band
     (scripts/cluster/band.sh: seed 0's own fault-free run -/+ the range of three seeds of the
     same training section, run here by the image's ppu-launch in the background from the start,
     on the core the 250m rank pods leave idle).
"""

from dataclasses import dataclass, field

import pytest

from . import kube, manifests, node_loss, operator_metrics
from .band import Band, inside
from .cluster import Cluster
from .helm import OperatorChart
from .node_loss import NODE_1, NODE_2, ranks_text
from .ppujob import status, wait_phase
from .program import OPERATOR_NAMESPACE, Program
from .run import Run
from .waiting import wait_at_most

NS = "ppu-nodes"
OPNS = OPERATOR_NAMESPACE
METRICS_READER = "e2e-metrics"
# Long enough (about five minutes at 250m per rank, about 3 rounds a second) that a replacement,
# about 90 s after the loss, rejoins well before the end; the gang job only needs to outlast its restart.
STEPS = 10000
ROUNDS = STEPS // manifests.SYNC_EVERY
GANG_STEPS = 5000
GANG_ROUNDS = GANG_STEPS // manifests.SYNC_EVERY

PROGRAM = Program(
    name="cluster-nodes-e2e",
    pass_label="cluster-nodes",
    cluster_dir="/var/lib/ppu-cluster-nodes-e2e",
    cluster_port="16446",
    namespace=NS,
    nodes=2,
    failure_kinds="nodes,ppj,pods",
    scratch_prefix="ppu-nodes",
    timed=False,
    band_job=lambda image: manifests.spread_job(NS, "spread", "live", STEPS, image, NODE_1, slices=2),
)


@dataclass
class State:
    """What a step leaves for the later ones."""

    lost: list[str] = field(default_factory=list)
    spread_perplexity: str | None = None
    part_perplexity: str | None = None


@pytest.fixture(scope="module")
def state() -> State:
    return State()


def prepare(run: Run, cluster: Cluster, chart: OperatorChart) -> None:
    """A fresh cluster's image, operator (on node 1, e2e-metrics among its metrics readers) and job namespace."""
    env = cluster.env()
    assert env.get("NETPOL") == "1" and env.get("NODES") == "2", (
        f"cluster.sh up --nodes 2 gave NETPOL={env.get('NETPOL', '')} NODES={env.get('NODES', '')}"
    )
    assert cluster.healthy(), "the cluster is not healthy"
    cluster.load_image(run.image, quiet=True)
    chart.install(
        run.image,
        f"nodeSelector.kubernetes\\.io/hostname={NODE_1}",
        f"metricsAuth.readers[0].name={METRICS_READER}",
        f"metricsAuth.readers[0].namespace={OPNS}",
    )
    kube.kubectl("-n", OPNS, "create", "serviceaccount", METRICS_READER, json=False)
    kube.create_restricted_namespace(NS)


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


def ended_on_node_1(job: str) -> tuple[str, str | None]:
    """A live job that lost NODE_2 ended with every pod on NODE_1 at one set of parameters: (checksum, perplexity)."""
    elsewhere = node_loss.off_node(NS, job, NODE_1)
    assert not elsewhere, f"{job}: pods not on {NODE_1} at the end: {node_loss.describe(node_loss.placement(NS, job))}"
    return node_loss.same_parameters(NS, job), status(job, NS).perplexity


def test_1_ranks_spread_over_both_nodes(
    run: Run, cluster: Cluster, operator_chart: OperatorChart, band: Band, state: State
) -> None:
    """N = 2: a node holding both owners of a slice would take that slice with it, which live recovery
    cannot cover (the survivors exit 3 and the gang restarts, by design: docs/RECOVERY.md)."""
    prepare(run, cluster, operator_chart)
    run.progress.say(f"two nodes Ready, NetworkPolicies enforced on both, operator on {NODE_1}")
    kube.apply(manifests.spread_job(NS, "spread", "live", STEPS, run.image, NODE_1, slices=2))
    state.lost = node_loss.spread(NS, "spread")
    node_loss.slices_split(NS, "spread")
    node_loss.wait_round(NS, "spread", 2)
    checkpoint = status("spread", NS).last_checkpoint_round
    if not (checkpoint is not None and checkpoint >= 1):
        node_loss.wait_round(NS, "spread", 3)
    run.progress.passed(
        f"4 ranks spread over {NODE_1} and {NODE_2} by spec.scheduling.affinity (ranks {ranks_text(state.lost)}on {NODE_2}), "
        "training across the nodes with NetworkPolicies enforced, checkpoints on a ReadWriteMany claim "
        f"(round {status('spread', NS).outer_round})"
    )


def test_2_node_lost_under_live_recovery(run: Run, cluster: Cluster, state: State) -> None:
    lost = state.lost
    store = kube.kubectl("-n", NS, "get", "pod", "spread-rendezvous")["spec"].get("nodeName", "")
    assert store == NODE_1, (
        f"the live job's store runs on '{store}', not {NODE_1}: losing {NODE_2} would lose it (a gang restart by design)"
    )
    node_loss.wait_round(NS, "spread", ROUNDS // 10)
    cluster.stop_node(NODE_2)
    run.progress.say(
        f"stopped {NODE_2} at round {status('spread', NS).outer_round} (ranks {ranks_text(lost)}were there)"
    )
    ready = wait_at_most(lambda: kube.node_ready(NODE_2), 180, until=lambda r: r != "True")
    assert ready != "True", f"{NODE_2} still Ready 180 s after it was stopped"
    run.progress.say(f"{NODE_2} Ready={ready}")
    recoveries, degraded_seen = wait_recovered("spread", lost)
    assert recoveries is not None and recoveries >= len(lost), (
        f"spread: recoveries '{recoveries}', liveRanks '{status('spread', NS).live_ranks}' after losing ranks {ranks_text(lost)}"
    )
    assert degraded_seen, f"spread: condition Degraded never True while ranks {ranks_text(lost)}were lost"
    forced = node_loss.force_deletions(NS)
    assert NODE_2 in forced, f"no PodForceDeleted event naming {NODE_2}: {forced}"
    recovery_metrics(run, "spread", recoveries, len(lost))
    node_loss.rejoined(NS, "spread", lost, run.progress)
    wait_phase("spread", "Succeeded", 1200, NS)
    now = status("spread", NS)
    assert now.restart_count == 0, f"spread: restartCount {now.restart_count}, expected no gang restart"
    assert now.condition_status("Degraded") == "False", "spread: Degraded not cleared at the end"
    checksum, state.spread_perplexity = ended_on_node_1("spread")
    run.progress.passed(
        f"live: {NODE_2} lost; ranks {ranks_text(lost)}force-deleted from it and replaced on {NODE_1} "
        f"({status('spread', NS).recoveries} recoveries, Degraded seen and cleared, the operator's metrics agree), "
        f"Succeeded with restartCount 0, every rank at parameters {checksum}, perplexity {state.spread_perplexity} "
        "(judged against the fault-free band in step 4)"
    )


def test_2b_node_partitioned_then_healed(run: Run, operator_chart: OperatorChart, state: State) -> None:
    """The node's processes run on through the partition (a switch failed, not the machine): the
    operator replaces its ranks on node 1; when the node comes back, its old rank processes find the
    live group formed without them and leave (exit 5, out of the group), and its kubelet ends the
    containers of pods the API server no longer has. Nothing of the old pods may rejoin."""
    cluster = run.fresh_cluster()
    prepare(run, cluster, operator_chart)
    kube.apply(manifests.spread_job(NS, "part", "live", STEPS, run.image, NODE_1, slices=2))
    lost = node_loss.spread(NS, "part")
    node_loss.slices_split(NS, "part")
    node_loss.wait_round(NS, "part", ROUNDS // 10)
    cluster.partition_node(NODE_2)
    run.progress.say(
        f"partitioned {NODE_2} at round {status('part', NS).outer_round} (ranks {ranks_text(lost)}were there)"
    )
    recoveries, _ = wait_recovered("part", lost)
    assert recoveries == len(lost), (
        f"part: recoveries '{recoveries}', liveRanks '{status('part', NS).live_ranks}' after partitioning ranks {ranks_text(lost)}"
    )
    node_loss.rejoined(NS, "part", lost, run.progress)
    running = node_loss.ranks_still_on_node_2()
    assert running > 0, f"part: no old rank runs on the partitioned {NODE_2}: the test would not show the fence"
    cluster.heal_node(NODE_2)
    run.progress.say(
        f"healed {NODE_2} at round {status('part', NS).outer_round} with {running} old rank process(es) still running there"
    )

    def back() -> str:
        return kube.node_ready(NODE_2)

    ready = wait_at_most(back, 180, until=lambda r: r == "True" and node_loss.ranks_still_on_node_2() == 0)
    assert ready == "True", f"part: {NODE_2} not Ready 180 s after it was healed"
    left = node_loss.ranks_still_on_node_2()
    assert left == 0, f"part: {left} old rank process(es) still run on {NODE_2} 180 s after it came back"
    wait_phase("part", "Succeeded", 1200, NS)
    now = status("part", NS)
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


def test_3_node_lost_under_gang_recovery(run: Run, operator_chart: OperatorChart) -> None:
    cluster = run.fresh_cluster()
    prepare(run, cluster, operator_chart)
    kube.apply(manifests.spread_job(NS, "gang", "gang", GANG_STEPS, run.image, NODE_1))
    lost = node_loss.spread(NS, "gang")
    needed = GANG_ROUNDS // 10
    checkpoint = wait_at_most(
        lambda: status("gang", NS).last_checkpoint_round, 600, until=lambda ck: ck is not None and ck >= needed
    )
    assert checkpoint is not None and checkpoint >= needed, (
        f"gang: no checkpoint at round {needed} (last '{checkpoint}')"
    )
    cluster.stop_node(NODE_2)
    run.progress.say(
        f"stopped {NODE_2} at round {status('gang', NS).outer_round}, checkpoint round {checkpoint} "
        f"(ranks {ranks_text(lost)}were there)"
    )

    def restart() -> tuple[int | None, str | None]:
        now = status("gang", NS)
        done = now.restart_count is not None and now.restart_count >= 1 and now.phase == "Running"
        if not done and now.phase == "Failed":
            raise AssertionError(f"gang Failed: {now.dump()}")
        return now.restart_count, now.phase

    last = wait_at_most(restart, 600, until=lambda o: o[0] is not None and o[0] >= 1 and o[1] == "Running")
    phase = status("gang", NS).phase
    assert phase == "Running", (
        f"gang: no new gang running 600 s after the loss (restartCount '{last[0] if last else None}', phase {phase})"
    )

    def resumed() -> str:
        return next((line for line in kube.logs(NS, "gang-rank-0").splitlines() if "resumed from" in line), "")

    line = wait_at_most(resumed, 240)
    assert line, "gang: the new rank 0 never logged 'resumed from' a checkpoint"
    wait_phase("gang", "Succeeded", 1200, NS)
    restart_count = status("gang", NS).restart_count
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


def test_4_live_perplexities_inside_fault_free_band(run: Run, band: Band, state: State) -> None:
    assert band.wait(), "step 4 compares with local fault-free runs, and one failed"
    bounds = band.bounds()
    assert inside(bounds, state.spread_perplexity), (
        f"spread: final perplexity '{state.spread_perplexity}' outside the fault-free band {bounds}"
    )
    run.progress.passed(
        f"live: after losing {NODE_2}, perplexity {state.spread_perplexity} inside the fault-free band {bounds} "
        f"(seed 0 fault-free: {bounds.p0:.3f})"
    )
    assert inside(bounds, state.part_perplexity), (
        f"part: final perplexity '{state.part_perplexity}' outside the fault-free band {bounds}"
    )
    run.progress.passed(
        f"live: after partitioning {NODE_2}, perplexity {state.part_perplexity} inside the fault-free band {bounds}"
    )
    run.progress.done()
