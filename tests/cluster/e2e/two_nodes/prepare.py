"""What a fresh two-node cluster gets before a step of the two-node program runs a job on it.

Contract: prepare(run, cluster, chart) fails unless `cluster.sh up --nodes 2` enforces
NetworkPolicies on 2 nodes and the cluster is healthy; then loads the image, installs the
operator's chart pinned to node 1 with METRICS_READER among its metrics readers, creates that
ServiceAccount and the job namespace (the `restricted` Pod Security Standard).
"""

from .. import kube
from ..cluster import Cluster
from ..helm import OperatorChart
from ..node_loss import NODE_1
from ..run import Run
from . import METRICS_READER, NS, OPNS


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
