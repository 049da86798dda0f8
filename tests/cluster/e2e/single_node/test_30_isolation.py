"""Phase 4b of the one-node program: NetworkPolicies isolate a job's pods and the operator's ports.

Contract: the cluster enforces NetworkPolicies (its env says NETPOL=1); with two PPUJobs of 2
ranks (iso and iso-other) Running and Ready and probe pods Ready in `monitoring`, in
`ppu-outside` (carrying iso's labels) and in the job namespace, tests/cluster/isolation_check.sh
passes: iso's own rank reaches its job, the other pods are dropped everywhere, `monitoring`
scrapes every rank and reaches the operator's metrics and health ports, and nothing else.
Afterwards it deletes the two jobs, the probe and the two namespaces without waiting; the
reference job is left running.
"""

from .. import REPO, kube, manifests
from ..cluster import Cluster
from ..ppujob import Jobs
from ..run import Run
from . import NS, OPNS
from .checks import run_check


def test_4b_network_policies_enforced(run: Run, cluster: Cluster, jobs: Jobs) -> None:
    netpol = cluster.env().get("NETPOL", "0") or "0"
    assert netpol == "1", "the cluster does not enforce NetworkPolicies (cluster.sh up without --no-network-policy)"
    # Two PPUJobs of their own (2 ranks, checkpoints on an emptyDir), long enough to run throughout:
    # iso, whose ports are probed, and iso-other, a rank of which is the other PPUJob's.
    kube.apply(
        manifests.join(manifests.small_job(NS, "iso", run.image), manifests.small_job(NS, "iso-other", run.image))
    )
    kube.kubectl("create", "namespace", "monitoring", json=False)
    kube.kubectl("create", "namespace", "ppu-outside", json=False)
    probes = [
        manifests.probe_pod("monitoring", "{}", run.image),
        manifests.probe_pod("ppu-outside", "{ppu.dev/job: iso}", run.image),  # the job's labels, elsewhere
        manifests.probe_pod(NS, "{}", run.image),
    ]
    kube.apply(manifests.join(*probes))
    for probe_ns in ("monitoring", "ppu-outside", NS):
        kube.kubectl("-n", probe_ns, "wait", "--for=condition=Ready", "pod/probe", "--timeout=120s", json=False)
    for job in ("iso", "iso-other"):
        jobs(job).wait_phase("Running", 240)
        kube.kubectl(
            "-n", NS, "wait", "--for=condition=Ready", "pod", "-l", f"ppu.dev/job={job}", "--timeout=120s", json=False
        )
    check = REPO / "tests" / "cluster" / "isolation_check.sh"
    run_check(
        "bash",
        str(check),
        NS,
        "iso",
        "iso-other",
        OPNS,
        "monitoring",
        "ppu-outside",
        failure="NetworkPolicies let through what they should not, or block what they should let through (lines above)",
    )
    kube.kubectl("-n", NS, "delete", "ppj", "iso", "iso-other", "--wait=false", json=False)
    kube.kubectl("-n", NS, "delete", "pod", "probe", "--wait=false", json=False)
    kube.kubectl("delete", "namespace", "monitoring", "ppu-outside", "--wait=false", json=False)
    run.progress.phase("network policies enforced")
