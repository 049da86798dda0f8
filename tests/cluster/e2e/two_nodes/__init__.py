"""End to end on a real two-node cluster, a node lost under each recovery mode (ctest cluster_nodes_e2e).

Contract: this directory is one program, run by one pytest session (`pytest -x
tests/cluster/e2e/two_nodes`): its test files run in the order of their names, each test one step
with its own PASS line; a failure names its step, and the steps after it are skipped. Each file's
docstring says which step it holds and what it leaves for the later ones; conftest.py holds the
program's fixtures, state.State what crosses files. The cluster is `cluster.sh up --nodes 2` (two
kubelets and two containerds, each node its own network namespace, bridge and pod CIDR, routed to
each other) with NetworkPolicies enforced on both nodes and the chart's defaults; the operator is
pinned to node 1 (chart nodeSelector): the test loses node 2, not the operator. Needs root;
builds the image (scripts/build-image.sh) when podman lacks it. Options --keep and
--rebuild-image (../conftest.py); environment PPU_CLUSTER_DIR (default
/var/lib/ppu-cluster-nodes-e2e), PPU_CLUSTER_PORT (16446), PPU_IMAGE (localhost/ppu:dev). The
steps, file by file:
  test_10_spread.py
  1. a 4-rank PPUJob spread over both nodes by the user's spec.scheduling.affinity, its checkpoints
     on a ReadWriteMany claim both nodes mount: ranks on both nodes, rendezvous and Gloo across
     the nodes, training;
  test_20_node_lost_live.py
  2. node loss under recovery live, slicing N = 2: the operator's anti-affinity between the owners
     of a slice put each slice's two owners on different nodes. `cluster.sh stop-node ppu-node-2`
     kills the node's kubelet, containerd and pods at once; the node goes NotReady, its pods are
     evicted after their tolerations (5 s) and force-deleted by the operator (events
     PodForceDeleted), the lost ranks are recreated on node 1 and rejoin; condition Degraded is
     seen True and then False; the operator's /metrics (through a port-forward, with a reader's
     token: the chart's metricsAuth) count the recoveries, the force deletions and 4 live ranks;
     the job Succeeds with restartCount 0, one recovery per lost rank, every pod on node 1, every
     rank with the same final parameters (its perplexity: step 4);
  test_30_node_partitioned.py
  2b. node 2 partitioned (`cluster.sh partition-node`: its processes run on, neither side hears
     the other), on a fresh cluster, under live: its ranks are replaced on node 1 as in 2; then
     `heal-node`: the node is Ready again, its old rank processes leave (out of the live group)
     and its kubelet ends their containers; no gang restart, no loss counted twice, Succeeded;
  test_40_node_lost_gang.py
  3. node loss under recovery gang, on a fresh two-node cluster: one gang restart, the new gang on
     the surviving node (the old pods force-deleted), rank 0 resumes from the last checkpoint on
     the shared volume, the job Succeeds with restartCount 1;
  test_90_final_status.py
  4. the final perplexity of the live jobs of 2 and 2b inside the fault-free band
     (scripts/cluster/band.sh: seed 0's own fault-free run -/+ the range of three seeds of the
     same training section, run here by the image's ppu-launch in the background from the start,
     on the core the 250m rank pods leave idle).
Below: the program (PROGRAM) and the names and lengths its steps share.
"""

from .. import manifests
from ..node_loss import NODE_1
from ..program import OPERATOR_NAMESPACE, Program

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
    # The operator on node 1, which is never lost; METRICS_READER may read its /metrics (step 2).
    operator_sets=(
        f"nodeSelector.kubernetes\\.io/hostname={NODE_1}",
        f"metricsAuth.readers[0].name={METRICS_READER}",
        f"metricsAuth.readers[0].namespace={OPNS}",
    ),
    sample_alias=False,
    quiet_load=True,
    operator_accounts=(METRICS_READER,),
)
