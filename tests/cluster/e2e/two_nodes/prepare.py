"""What a fresh two-node cluster gets before a step of the two-node program runs a job on it.

Contract: prepare(run, cluster, chart) fails unless `cluster.sh up --nodes 2` enforces
NetworkPolicies on 2 nodes and the cluster is healthy; then installs the operator as PROGRAM
declares (helm.install_operator: the image loaded, the chart pinned to node 1 with METRICS_READER
among its metrics readers, that ServiceAccount created) and creates the job namespace (the
`restricted` Pod Security Standard).
"""

from .. import kube
from ..cluster import Cluster
from ..helm import OperatorChart, install_operator
from ..run import Run
from . import NS


def prepare(run: Run, cluster: Cluster, chart: OperatorChart) -> None:
    """A fresh cluster's image, operator (on node 1, e2e-metrics among its metrics readers) and job namespace."""
    env = cluster.env()
    assert env.get("NETPOL") == "1" and env.get("NODES") == "2", (
        f"cluster.sh up --nodes 2 gave NETPOL={env.get('NETPOL', '')} NODES={env.get('NODES', '')}"
    )
    assert cluster.healthy(), "the cluster is not healthy"
    install_operator(run, cluster, chart)
    kube.create_restricted_namespace(NS)
