"""End to end on a real single-node cluster (scripts/cluster.sh), the operator installed by helm (ctest cluster_e2e).

Contract: the tests below run in this order, each one phase; a failure names its phase, and
the phases after it are skipped. Needs root; builds the image (scripts/build-image.sh) when podman
lacks it, and the cluster tools. Options --keep and --rebuild-image (conftest.py); environment
PPU_CLUSTER_DIR (default /var/lib/ppu-cluster-e2e), PPU_CLUSTER_PORT (16445), PPU_IMAGE
(localhost/ppu:dev). The phases:
  1. helm install charts/ppu-operator: the operator runs in-cluster under its ServiceAccount (no
     kubeconfig: the in-cluster config path) and becomes Ready;
  2. a CPU PPUJob (4 ranks, tiny model, checkpoints on a PersistentVolume) in a namespace that
     enforces the `restricted` Pod Security Standard: ranks rendezvous through the headless
     Service's DNS name (CoreDNS), train, and `kubectl get ppj` shows round and perplexity;
  3. while it trains: rank containers and the operator's run as uid 65532, with no_new_privs,
     seccomp filtering and a read-only root filesystem (read from the kernel); the operator's
     ServiceAccount is refused what its RBAC does not grant (tests/cluster/security_check.sh);
  4. Prometheus discovers the operator and the rank pods through Kubernetes service discovery,
     and every dashboard panel and variable returns data for that job (Prometheus 2.54 from its
     Go module: Debian's 2.42 is built without Kubernetes discovery);
  4b. NetworkPolicies enforced, with two PPUJobs of 2 ranks started for it:
     tests/cluster/isolation_check.sh probes, from real pods, every port the first job's pods
     listen on and the operator's metrics and health ports: the job's own rank reaches its job; a
     pod in another namespace carrying the job's labels, a rank of the second PPUJob and a plain
     pod in the namespace are dropped everywhere; a pod in `monitoring` scrapes every rank and
     reaches the operator's two ports, and nothing else. Each assertion prints its own line;
  2 (end). the job of 2 Succeeds, its ranks agree, and its final status is its ranks' result;
  5. the same job again, one rank's container killed with SIGKILL a third of the way through:
     gang restart, the new gang resumes from the checkpoint on the volume, Succeeded, and every
     rank's final param_checksum equals the uninterrupted run's;
  5a. the same job again, every rank pod deleted at once (graceful: each rank's notice): the job's
     state is saved at the round boundary, the new gang resumes from it, status.lastStop says at
     most one round was lost, and every rank ends at the uninterrupted run's parameters;
  5b. chaos under network.recovery=live, five faults in one job, each its own test and PASS line:
     rank 2's pod deleted as a round's outer sync starts; the rendezvous pod deleted (recreated
     alone, event StoreReplaced); rank 0's container SIGKILLed; rank 3's pod deleted and the
     operator's pod deleted while it replaces it; rank 1's traffic dropped for 12 s (a
     NetworkPolicy denies its egress, and its packets are dropped at its node's bridge both
     ways). After each rank fault only that pod is recreated and condition Degraded is seen True,
     then False; the job Succeeds with restartCount 0 and 4 recoveries, every rank with the same
     parameters; its perplexity is judged against the fault-free band last (5c);
  6. manifests/samples/cpu-tiny.yaml applied as shipped (its image name an alias that
     `cluster.sh load-image --as` gave the image) runs to Succeeded, and its final status (round,
     perplexity, checkpoint round, ResultReported) is what the same training section gives when
     run here by the image's ppu-launch;
  7. manifests/samples/cpu-tiny-export.yaml applied as shipped: it Succeeds, the operator's export
     Job writes the model (Exported=True, column EXPORT ModelExported, status.export at the last
     checkpoint round); the PPUJob is deleted (its export Job goes with it) and a pod that mounts
     the claim finds the Hugging Face directory there (model.safetensors, config.json gpt_neox);
  8. Kueue and the sample queue sized for one 4-rank gang: two queued jobs, one runs, the other
     waits (reason Queued, Kueue's message, no pod); suspending the first hands its quota to the
     second, and the first, resumed, queues again and finishes from its checkpoint; a high-priority
     job preempts a running low one (reason Evicted), which is admitted again afterwards, resumes
     from its checkpoint and Succeeds with restartCount 0; a queued job deleted while waiting
     leaves no Workload and no pod; every Workload goes with its PPUJob; then helm uninstall;
  5c. the live job's final perplexity inside the fault-free band (scripts/cluster/band.sh: seed
     0's fault-free run -/+ the range of three seeds, run here by the image's ppu-launch in the
     background from the start, on the CPU the cluster leaves idle).
Each phase prints how long it took.
"""

import json
import math
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

import pytest

from . import REPO, kube, kueue, manifests, prometheus, summaries
from .band import Band, in_image, inside
from .cluster import Cluster, build_tools
from .helm import OperatorChart
from .live_chaos import LiveJob, cut_rank_1, uncut_rank_1, utc_now
from .ppujob import status, wait_phase
from .program import OPERATOR_NAMESPACE, Program
from .run import Run
from .waiting import wait_at_most, wait_for

NS = "ppu-e2e"
OPNS = OPERATOR_NAMESPACE
OPERATOR = "app.kubernetes.io/name=ppu-operator"
# Long enough (about two minutes here) that every check sees the ranks running.
STEPS = 3000
ROUNDS = STEPS // manifests.SYNC_EVERY
LIVE_STEPS = STEPS * 4

PROGRAM = Program(
    name="cluster-e2e",
    pass_label="cluster-e2e",
    cluster_dir="/var/lib/ppu-cluster-e2e",
    cluster_port="16445",
    namespace=NS,
    nodes=1,
    failure_kinds="ppj,pods,pvc",
    scratch_prefix="ppu-e2e",
    timed=True,
    band_job=lambda image: manifests.live_job(NS, "ckpt-band", LIVE_STEPS, image),
)


@dataclass
class State:
    """What a phase leaves for the later ones."""

    service_account: str = ""
    ref_checksum: str = ""
    live_perplexity: str | None = None
    store_deleted_at_round: int = 0


def same(a: object, b: object) -> bool:
    """Equal as printed: the bash compared jsonpath's and json's printed values as strings."""
    return str(a) == str(b)


def after_bracket(line: str) -> str:
    """The line after its first "] " (`${line#*] }`): a log line without its time and level."""
    return line.split("] ", 1)[1] if "] " in line else line


def run_check(*argv: str, failure: str) -> None:
    """A check program (its lines shown as it prints them); fails with `failure` when it exits non-zero."""
    if subprocess.run(list(argv), check=False).returncode != 0:
        raise AssertionError(failure)


@pytest.fixture(scope="module")
def state() -> State:
    return State()


@pytest.fixture(scope="module")
def tools(run: Run, band: Band, helm: str) -> dict[str, str]:
    """Prometheus with Kubernetes service discovery (phase 4) and Kueue (phase 8), built before the cluster."""
    built = {"prometheus": f"{build_tools('--prometheus')}/prometheus"}
    build_tools("--kueue")
    run.progress.phase("tools")
    return built


@pytest.fixture(scope="module")
def operator(run: Run, cluster: Cluster, operator_chart: OperatorChart) -> OperatorChart:
    """The image in the cluster, also under the samples' image name, and the operator's chart installed on it."""
    cluster.load_image(run.image, manifests.sample_image())
    run.progress.phase("image into containerd")
    operator_chart.install(run.image)
    return operator_chart


def test_1_helm_install_operator_in_cluster(run: Run, operator: OperatorChart, state: State) -> None:
    deployment = kube.kubectl("-n", OPNS, "get", "deploy", "ppu-operator")
    sa = deployment["spec"]["template"]["spec"].get("serviceAccountName", "")
    assert sa and sa != "default", f"operator Deployment has no ServiceAccount of its own ('{sa}')"
    pods = kube.pods(OPNS, OPERATOR)
    assert pods, "the operator Deployment has no pod"
    op_pod = pods[0]["metadata"]["name"]
    args = json.dumps(pods[0]["spec"]["containers"][0].get("args", []))
    assert "kubeconfig" not in args, "operator started with --kubeconfig; the in-cluster path is not exercised"
    kube.kubectl("-n", OPNS, "wait", "--for=condition=Ready", f"pod/{op_pod}", "--timeout=60s", json=False)
    state.service_account = sa
    run.progress.say(f"operator {op_pod} Ready under ServiceAccount {sa}, in-cluster config")
    run.progress.phase("helm install")


def test_2_job_scheduled_and_running(run: Run, namespace: str) -> None:
    kube.apply(manifests.job(NS, "ref", "ckpt-ref", STEPS, run.image))
    wait_phase("ref", "Running", 240, NS)
    env = kube.pods(NS, "ppu.dev/job=ref")[0]["spec"]["containers"][0].get("env", [])
    master = next((e.get("value", "") for e in env if e.get("name") == "MASTER_ADDR"), "")
    is_dns = re.fullmatch(r"[a-z0-9.-]+", master) and not re.fullmatch(r"[0-9.]+", master)
    assert is_dns, f"MASTER_ADDR '{master}' is not a DNS name"
    run.progress.say(f"ref Running; ranks rendezvous at {master} (a headless Service name, resolved by CoreDNS)")
    run.progress.phase("job scheduled and running")


def test_3_security_checks(run: Run, state: State) -> None:
    check = REPO / "tests" / "cluster" / "security_check.sh"
    run_check("bash", str(check), NS, "ref", OPNS, state.service_account, failure=f"{check.name} failed (lines above)")
    run.progress.phase("security checks")


def test_4_prometheus_every_panel_has_data(run: Run, tools: dict[str, str]) -> None:
    log = prometheus.start(run, tools["prometheus"], OPNS)
    dashboards = REPO / "tests" / "cluster" / "dashboards_live.py"
    live = [
        "python3",
        str(dashboards),
        "--prometheus",
        prometheus.URL,
        "--namespace",
        NS,
        "--job",
        "ref",
        "--timeout",
        "300",
    ]
    try:
        run.cluster.netns(*live)
    except RuntimeError as e:
        raise AssertionError(f"dashboard panels without data (see {log})") from e
    run.progress.phase("prometheus: every panel has data")


def test_4_kubectl_get_ppj_shows_round_and_perplexity(run: Run) -> None:
    """`kubectl get ppj` columns: round and perplexity from the ranks' metrics."""

    def columns() -> tuple[str, str, str]:
        line = kube.table_line("-n", NS, "ppj", "ref")
        words = line.split()
        return line, words[3] if len(words) > 3 else "", words[4] if len(words) > 4 else ""

    def shown(round_: str, perplexity: str) -> bool:
        return bool(re.fullmatch(r"[0-9]+", round_) and re.fullmatch(r"[0-9.]+", perplexity))

    line, round_, perplexity = wait_at_most(columns, 240, until=lambda c: shown(c[1], c[2]) and int(c[1]) >= 1)
    assert shown(round_, perplexity), f"kubectl get ppj shows no round/perplexity: '{line}'"
    run.progress.say(f"kubectl get ppj ref: {line}")


def test_4b_network_policies_enforced(run: Run, cluster: Cluster) -> None:
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
        wait_phase(job, "Running", 240, NS)
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


def test_2_uninterrupted_job_result(run: Run, state: State) -> None:
    """The job of phase 2 Succeeds; its final status is its ranks' own result, read after the last scrape."""
    wait_phase("ref", "Succeeded", 900, NS)
    ref_dir = summaries.pv_dir(NS, "ckpt-ref")
    ref_sum = summaries.checksum(ref_dir, 0)
    for rank in (1, 2, 3):
        assert summaries.checksum(ref_dir, rank) == ref_sum, "ref ranks disagree on param_checksum"
    state.ref_checksum = ref_sum
    run.progress.say(f"ref Succeeded, param_checksum {ref_sum} on all 4 ranks")
    # Read back a while after completion, when the last scrape is long over.
    time.sleep(20)
    rank_0 = summaries.rank_summary(ref_dir, 0)
    now = status("ref", NS)
    assert now.condition_status("ResultReported") == "True", (
        f"ref: condition ResultReported is not True: {now.dump_conditions()}"
    )
    outer_rounds = summaries.field(rank_0, "outer_rounds")
    assert same(now.outer_round, outer_rounds) and same(now.outer_round, ROUNDS), (
        f"ref: status.outerRound '{now.outer_round}', the ranks ended at round {outer_rounds} of {ROUNDS}"
    )
    final = float(summaries.field(rank_0, "eval_perplexity"))
    shown = float(now.perplexity) if now.perplexity else math.nan
    assert abs(shown - final) <= 5e-4 + 1e-9 * final, (
        f"ref: status.perplexity '{now.perplexity}' is not the ranks' final {summaries.field(rank_0, 'eval_perplexity')}"
    )
    last_written = summaries.field(rank_0, "last_checkpoint_round")
    assert same(now.last_checkpoint_round, last_written), (
        f"ref: status.lastCheckpointRound '{now.last_checkpoint_round}', the ranks' last written {last_written}"
    )
    run.progress.say(
        f"ref's final status is the ranks' result: round {now.outer_round}, perplexity {now.perplexity}, "
        f"checkpoint round {now.last_checkpoint_round}"
    )
    run.progress.phase("uninterrupted job")


def running_at_a_third(job: str) -> int:
    """Waits (up to 600 s) for `job` to reach a third of its rounds; the round its status shows."""
    third = ROUNDS // 3
    return wait_for(
        lambda: status(job, NS).outer_round,
        600,
        f"the {job} job to reach round {third}",
        until=lambda r: r is not None and r >= third,
        interval_s=1,
    )


def resumed_line(job: str, timeout_s: float) -> str:
    """The line in which `job`'s (new) rank 0 says it resumed from a checkpoint; fails after timeout_s."""

    def resumed() -> str:
        log = kube.logs(NS, "-l", f"ppu.dev/job={job},ppu.dev/rank=0", "--tail=-1")
        return next((line for line in log.splitlines() if "resumed from" in line), "")

    line = wait_at_most(resumed, timeout_s, interval_s=1)
    assert line, f"{job}: the new rank 0 never logged 'resumed from' a checkpoint"
    return line


def ends_at_reference(job: str, claim: str, state: State, what: str) -> None:
    """Every rank of `job` ended at the uninterrupted run's parameters (its summaries on `claim`)."""
    directory = summaries.pv_dir(NS, claim)
    for rank in (0, 1, 2, 3):
        got = summaries.checksum(directory, rank)
        assert got == state.ref_checksum, (
            f"rank {rank} param_checksum {got} {what} != {state.ref_checksum} uninterrupted"
        )


def test_5_kill_rank_gang_restart_resume(run: Run, cluster: Cluster, state: State) -> None:
    kube.apply(manifests.job(NS, "kill", "ckpt-kill", STEPS, run.image))
    wait_phase("kill", "Running", 240, NS)
    round_ = running_at_a_third("kill")
    assert status("kill", NS).phase == "Running", f"kill job finished before the kill (round {round_})"
    cid = kube.container_id(NS, "ppu.dev/job=kill,ppu.dev/rank=1")
    assert cid, "no container id for rank 1"
    cluster.kill_container(cid)
    run.progress.say(f"killed rank 1's container {cid} (status at round {round_})")
    restarts = wait_for(
        lambda: status("kill", NS).restart_count,
        240,
        "a gang restart after the kill (restartCount >= 1)",
        until=lambda n: n is not None and n >= 1,
        interval_s=1,
    )
    run.progress.say(f"gang restart ({restarts})")

    run.progress.say(f"restarted rank 0: {after_bracket(resumed_line('kill', 240))}")
    wait_phase("kill", "Succeeded", 900, NS)
    ends_at_reference("kill", "ckpt-kill", state, "after kill+resume")
    run.progress.say(
        f"killed job Succeeded after {restarts} gang restart(s) with param_checksum {state.ref_checksum}, "
        "equal to the uninterrupted run"
    )
    run.progress.phase("kill, gang restart, resume")


def test_5a_every_rank_pod_deleted_resumes_from_the_notice(run: Run, state: State) -> None:
    """Every rank pod deleted at once (a node drain, a spot reclaim turned into deletions): each rank
    gets its notice (SIGTERM, the pod's grace period), the job's state is saved at the round boundary
    it reaches, and the new gang resumes from it: at most one round lost, bit for bit the
    uninterrupted run's parameters."""
    kube.apply(manifests.job(NS, "notice", "ckpt-notice", STEPS, run.image))
    wait_phase("notice", "Running", 240, NS)
    round_ = running_at_a_third("notice")
    kube.kubectl("-n", NS, "delete", "pod", "-l", "ppu.dev/job=notice", "--wait=false", json=False)
    run.progress.say(f"deleted every rank pod of job notice (graceful), status at round {round_}")
    run.progress.say(f"new rank 0: {after_bracket(resumed_line('notice', 300))}")
    wait_phase("notice", "Succeeded", 900, NS)
    cost = status("notice", NS)
    assert (cost.stops or 0) >= 1 and cost.last_stop_rounds_lost is not None, (
        f"notice: the status does not say what deleting every rank pod cost: {cost.dump()}"
    )
    assert cost.last_stop_rounds_lost <= 1, f"notice: {cost.last_stop_rounds_lost} rounds lost: {cost.dump()}"
    ends_at_reference("notice", "ckpt-notice", state, "after every pod was deleted")
    run.progress.passed(
        f"every rank pod deleted: the new gang resumed from the notice's state ({cost.last_stop_rounds_lost} "
        f"round(s) lost, restartCount {cost.restart_count}), Succeeded with the uninterrupted run's parameters"
    )
    run.progress.phase("every rank pod deleted, resumed from the notice")


@pytest.fixture(scope="module")
def live(run: Run) -> LiveJob:
    """PPUJob live (network.recovery live), Running, with its rendezvous pod."""
    kube.apply(manifests.live_job(NS, "ckpt-live", LIVE_STEPS, run.image))
    wait_phase("live", "Running", 240, NS)
    assert kube.pod(NS, "live-rendezvous") is not None, "the live job has no rendezvous pod"
    return LiveJob(NS, run.progress)


def test_5b_1_rank_pod_deleted_in_outer_sync(run: Run, live: LiveJob) -> None:
    live.wait_round(30)
    live.remember_uids()
    live.at_round_boundary(32)
    fault_at = utc_now()
    kube.kubectl("-n", NS, "delete", "pod", "-l", live.selector(2), "--wait=false", json=False)
    run.progress.say(
        f"deleted rank 2's pod as rank 1 logged the end of a round (its outer sync), round {live.status().outer_round}"
    )
    live.wait_recovered(1, fault_at, 2)
    live.only_replaced(2)
    run.progress.passed(
        "chaos: rank 2's pod deleted during an outer sync; only it was recreated, Degraded seen and cleared, no gang restart"
    )


def test_5b_2_rendezvous_pod_deleted(run: Run, live: LiveJob, state: State) -> None:
    """Recreated alone (event StoreReplaced): the ranks rebuild its keys and train on; no rank pod changes.

    No rank leaves the live group, so Degraded is not expected; whether it was seen is printed.
    """
    live.remember_uids()

    def store_uid() -> str:
        store = kube.pod(NS, "live-rendezvous")
        return store["metadata"]["uid"] if store else ""

    old_uid = store_uid()
    at_round = live.status().outer_round or 0
    state.store_deleted_at_round = at_round
    kube.kubectl("-n", NS, "delete", "pod", "live-rendezvous", "--wait=false", json=False)
    run.progress.say(f"deleted the rendezvous pod at round {at_round}")
    degraded_seen = False

    def new_store() -> str:
        nonlocal degraded_seen
        if live.status().condition_status("Degraded") == "True":
            degraded_seen = True
        return store_uid()

    now = wait_at_most(new_store, 300, until=lambda uid: bool(uid) and uid != old_uid, interval_s=1)
    assert now and now != old_uid, "the rendezvous pod was not recreated after it was deleted"
    live.wait_round(at_round + 5)
    replaced = kube.event_messages(NS, "StoreReplaced")
    assert replaced, "no StoreReplaced event after the rendezvous pod was deleted"
    live.only_replaced(None)
    run.progress.passed(
        f"chaos: the rendezvous pod deleted, recreated alone ({replaced}); the job trains on at round "
        f"{live.status().outer_round} (Degraded seen: {degraded_seen})"
    )


def test_5b_3_rank0_container_killed(run: Run, cluster: Cluster, live: LiveJob, state: State) -> None:
    """Rank 0: the store's and the job's first rank."""
    live.wait_round(state.store_deleted_at_round + 20)
    live.remember_uids()
    cid = kube.container_id(NS, live.selector(0))
    fault_at = utc_now()
    cluster.kill_container(cid)
    run.progress.say(f"killed rank 0's container at round {live.status().outer_round}")
    live.wait_recovered(2, fault_at, 0)
    live.only_replaced(0)
    run.progress.passed(
        "chaos: rank 0's container SIGKILLed; only its pod was recreated, Degraded seen and cleared, no gang restart"
    )


def test_5b_4_operator_deleted_while_replacing(run: Run, live: LiveJob) -> None:
    """The next operator (the Deployment's new pod, once it holds the lease) finds the loss counted
    in status.recoveringRanks and finishes the replacement; the loss counts once."""
    live.wait_round((live.status().outer_round or 0) + 5)
    live.remember_uids()
    old = kube.pods(OPNS, OPERATOR)[0]["metadata"]
    fault_at = utc_now()
    # Back to back: the operator goes while the loss is being handled (whichever of the old and the
    # new operator sees it first counts it; the other must not count it again).
    kube.kubectl("-n", NS, "delete", "pod", "-l", live.selector(3), "--wait=false", json=False)
    kube.kubectl("-n", OPNS, "delete", "pod", "-l", OPERATOR, "--wait=false", json=False)
    run.progress.say("deleted rank 3's pod, then at once the operator's pod")
    live.wait_recovered(3, fault_at, 3)
    live.only_replaced(3)
    gone = kube.kubectl(
        "-n", OPNS, "wait", "--for=delete", f"pod/{old['name']}", "--timeout=120s", json=False, check=False
    )
    assert gone is not None, f"the operator's old pod {old['name']} is still there"
    kube.kubectl("-n", OPNS, "wait", "--for=condition=Ready", "pod", "-l", OPERATOR, "--timeout=120s", json=False)
    assert kube.pods(OPNS, OPERATOR)[0]["metadata"]["uid"] != old["uid"], "the operator's pod was not replaced"
    run.progress.passed(
        "chaos: the operator's pod deleted while it replaced rank 3; the next operator finished it (the loss counted "
        "once), Degraded seen and cleared, no gang restart"
    )


def test_5b_5_rank1_traffic_dropped(run: Run, cluster: Cluster, live: LiveJob) -> None:
    """Rank 1 cut off for 12 s (past twice heartbeat_s 5), by a NetworkPolicy and at the bridge.

    The policy selects only rank 1 and allows no egress, so no connection rank 1 opens is admitted.
    A policy cannot cut a pod off by itself, though: policies only allow, and the enforcement judges
    connections, not packets, so a connection a peer opened to rank 1 would stay (and flushing
    conntrack only makes a race of it: a peer's retransmission brought one of rank 1's store
    connections through the cut). So rank 1's packets are also dropped, both ways, at its node's
    bridge for the same 12 s, as a switch port that stops forwarding would. TCP keeps the
    connections; the others fence rank 1, it finds itself out of the group when the cut ends and
    exits with the code for "I lost the group", and only its pod is recreated.
    """
    live.wait_round((live.status().outer_round or 0) + 5)
    live.remember_uids()
    rank_1 = kube.pods(NS, live.selector(1))[0]
    ip = rank_1.get("status", {}).get("podIP", "")
    fault_at = utc_now()
    kube.apply(manifests.cut_rank_1_policy(NS, "live"))
    cut_rank_1(cluster, ip)
    run.progress.say(
        f"rank 1 ({ip}) cut off at round {live.status().outer_round}: NetworkPolicy cut-rank-1, "
        "and its packets dropped at the bridge"
    )
    time.sleep(12)
    dropped = uncut_rank_1(cluster)
    kube.kubectl("-n", NS, "delete", "networkpolicy", "cut-rank-1", json=False)
    # A cut that dropped nothing cut nothing (rank 1 on another bridge, a rule that never matched).
    assert dropped > 0, "the bridge dropped none of rank 1's packets during the cut"
    run.progress.say(f"the cut removed at round {live.status().outer_round}: {dropped} of rank 1's packets dropped")
    live.wait_recovered(4, fault_at, 1)
    live.only_replaced(1)
    run.progress.passed(
        "chaos: rank 1's traffic dropped for 12 s (NetworkPolicy and bridge); it was fenced and only its pod "
        "recreated, Degraded seen and cleared, no gang restart"
    )


def test_5b_live_job_succeeds_without_gang_restart(run: Run, live: LiveJob, state: State) -> None:
    wait_phase("live", "Succeeded", 900, NS)
    now = live.status()
    assert now.restart_count == 0, f"live job: restartCount '{now.restart_count}', expected no gang restart"
    assert now.recoveries == 4, f"live job: recoveries '{now.recoveries}', expected one per rank fault (4)"
    live_dir = summaries.pv_dir(NS, "ckpt-live")
    live_sum = summaries.checksum(live_dir, 1)
    for rank in (0, 2, 3):
        assert summaries.checksum(live_dir, rank) == live_sum, (
            f"live job: rank {rank} ends with other parameters than rank 1"
        )
    for line in kube.logs(NS, "live-rank-1").splitlines():
        if re.search(r"lost rank|rejoined in round", line):
            print(f"    {line}", flush=True)
    state.live_perplexity = live.status().perplexity
    run.progress.passed(
        f"chaos: the live job Succeeded after 5 faults with 0 gang restarts and {live.status().recoveries} recoveries, "
        f"every rank at {live_sum}, perplexity {state.live_perplexity} (judged against the fault-free band at the "
        "end, step 5c)"
    )
    run.progress.phase("live recovery: five faults, no gang restart")


def test_6_sample_as_shipped(run: Run) -> None:
    """The sample, no edits, the default namespace: it learns, and its final status is the run's result."""
    kube.kubectl("apply", "-f", str(manifests.CPU_TINY), json=False)
    wait_phase("cpu-tiny", "Succeeded", 600, "default")
    run.progress.say(
        f"samples/cpu-tiny.yaml as shipped ({manifests.sample_image()}): {kube.table_line('ppj', 'cpu-tiny')}"
    )
    shown = status("cpu-tiny", "default").perplexity
    try:
        learned = 0 < float(shown or "") < 64
    except ValueError:
        learned = False
    # Uniform guessing over the tiny preset's 256 tokens is perplexity 256.
    assert learned, f"cpu-tiny sample ends at perplexity '{shown}' (>= 64: it did not learn)"
    # Its pods are gone (cleanPodPolicy: All): its final status, read back a while after completion,
    # must be what the same training section run here with ppu-launch (checkpoints on, as the
    # operator sets them) ends at.
    time.sleep(20)
    now = status("cpu-tiny", "default")
    reported = now.condition_status("ResultReported")
    assert reported == "True", f"cpu-tiny: condition ResultReported is '{reported or ''}', not True"
    local = run.cluster.state_dir / "cpu-tiny-local"
    shutil.rmtree(local, ignore_errors=True)
    local.mkdir(parents=True)
    (local / "training.yaml").write_text(manifests.sample_training(ranks=4))
    # The image's ppu-launch: the pods' binaries and kernel path, so the comparison is exact.
    launch = ["ppu-launch", "--nproc", "4", "--config", str(local / "training.yaml")]
    launch += ["--set", f"checkpoint.dir={local / 'ckpt'}", "--summary-dir", str(local)]
    log = local / "run.log"
    if in_image(run.image, local, *launch, log=log) != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-3:])
        raise AssertionError(f"the local run of cpu-tiny's training section failed: {tail}")
    result = json.loads((local / "rank-0.json").read_text())
    local_ppl = f"{float(result['eval_perplexity']):.3f}"
    assert same(now.outer_round, result["outer_rounds"]), (
        f"cpu-tiny: status.outerRound '{now.outer_round}', the local run ends at round {result['outer_rounds']}"
    )
    assert same(now.perplexity, local_ppl), (
        f"cpu-tiny: status.perplexity '{now.perplexity}', the local run ends at {local_ppl}"
    )
    assert same(now.last_checkpoint_round, result["last_checkpoint_round"]), (
        f"cpu-tiny: status.lastCheckpointRound '{now.last_checkpoint_round}', "
        f"the local run's last is {result['last_checkpoint_round']}"
    )
    run.progress.say(
        f"cpu-tiny's final status is the run's result: round {now.outer_round}, perplexity {now.perplexity}, "
        f"checkpoint round {now.last_checkpoint_round}, as ppu-launch here (parameter checksum in the cluster "
        f"{now.parameter_checksum}, here {result['param_checksum']})"
    )
    kube.kubectl("delete", "-f", str(manifests.CPU_TINY), "--wait=true", json=False)
    run.progress.phase("sample as shipped")


def test_7_export_sample_model_on_volume(run: Run) -> None:
    """The trained model leaves as a Hugging Face directory on the claim, which outlives the PPUJob."""
    job, claim = manifests.export_sample_names()
    kube.kubectl("apply", "-f", str(manifests.CPU_TINY_EXPORT), json=False)
    wait_phase(job, "Succeeded", 600, "default")

    def exported():
        return status(job, "default").condition("Exported")

    last = wait_at_most(exported, 300, until=lambda c: c is not None and c.reason in ("ModelExported", "ExportFailed"))
    reason = last.reason if last else ""
    assert reason == "ModelExported", f"{job}: condition Exported is '{reason or ''}': {last.message if last else ''}"
    assert "ModelExported" in kube.table_line("ppj", job), f"{job}: column EXPORT does not say ModelExported"
    now = status(job, "default")
    assert (
        now.export_path == "model" and now.export_round is not None and now.export_round == now.last_checkpoint_round
    ), (
        f"{job}: status.export path '{now.export_path}' round '{now.export_round}' "
        f"(want model, the last checkpoint round '{now.last_checkpoint_round}')"
    )
    run.progress.say(f"{job} exported: {last.message}")
    # Deleting the job takes its export Job with it (garbage collection), never the model on the claim.
    kube.kubectl("delete", "ppj", job, "--wait=true", json=False)
    export_job = f"{job}-export"
    wait_at_most(lambda: not kube.exists("job", export_job), 60, interval_s=1)
    assert not kube.exists("job", export_job), f"Job {export_job} outlived its PPUJob"
    # A pod that mounts the claim read-only, as a model server would, under the restricted profile.
    kube.apply(manifests.model_reader_pod(manifests.sample_image(), now.export_path, claim))

    def reader_phase() -> str:
        return kube.kubectl("get", "pod", "model-reader").get("status", {}).get("phase", "")

    phase = wait_at_most(reader_phase, 120, until=lambda p: p in ("Succeeded", "Failed"))
    listing = kube.logs("default", "model-reader", merge_stderr=True)
    assert phase == "Succeeded", f"the model reader pod ended '{phase}': {listing}"
    files, _, config = listing.partition("----\n")
    names = set(files.split())
    try:
        parsed = json.loads(config)
    except ValueError:
        parsed = None
    model_type = parsed.get("model_type") if isinstance(parsed, dict) else None
    holds_model = "config.json" in names and bool({"model.safetensors", "model.safetensors.index.json"} & names)
    assert holds_model and model_type == "gpt_neox", (
        f"claim {claim} holds no Hugging Face GPT-NeoX model under {now.export_path}/: {listing}"
    )
    listed = files.replace("\n", " ")
    run.progress.say(f"a pod mounting claim {claim} after the PPUJob is gone reads {now.export_path}/: {listed}")
    kube.kubectl("delete", "pod", "model-reader", "--wait=true", json=False)
    kube.kubectl("delete", "pvc", claim, "--wait=true", json=False)
    run.progress.phase("export sample: the model on the volume")


def queued_job(name: str, steps: int, priority: str, image: str) -> str:
    return manifests.queued_job(NS, name, f"ckpt-{name}", steps, priority, image)


def test_8_kueue_queued_suspended_admitted_in_turn(run: Run, cluster: Cluster, operator: OperatorChart) -> None:
    """One gang admitted at a time; suspending the running job hands its quota to the waiting one."""
    cluster.kueue_up()
    operator.upgrade("kueue.enabled=true")
    kube.kubectl("-n", OPNS, "rollout", "status", "deploy/ppu-operator", "--timeout=180s", json=False)
    # The sample queue in this namespace, its quota sized for one job() gang (4 x 100m CPU), not two.
    kube.apply(manifests.kueue_queue(NS))
    kube.apply(manifests.join(queued_job("qa", 400, "low", run.image), queued_job("qb", 400, "low", run.image)))

    def first_admitted() -> str:
        admitted = [job for job in ("qa", "qb") if kueue.admitted(NS, job) == "True"]
        return admitted[-1] if admitted else ""

    first = wait_at_most(first_admitted, 120)
    if not first:
        listing = kube.kubectl("-n", NS, "get", "ppj,workloads", json=False, check=False)
        raise AssertionError(f"Kueue admitted neither qa nor qb: {listing}")
    second = "qb" if first == "qa" else "qa"
    kueue.wait_waiting(NS, second, "Queued", 60)
    message = status(second, NS).message or ""
    assert "insufficient unused quota" in message, f"{second} waits without Kueue's reason: '{message}'"
    assert "Queued" in kube.table_line("-n", NS, "ppj", second), "column REASON does not say Queued"
    assert kueue.workload_condition(NS, second, "QuotaReserved") == "False", (
        f"Workload ppujob-{second} holds quota while its job waits"
    )
    wait_phase(first, "Running", 240, NS)
    run.progress.say(f"{first} admitted and Running; {second} waits with no pod: {message}")
    # Suspending the running job releases its quota (its Workload is deleted): the other is admitted.
    kueue.wait_checkpoint(NS, first)
    kube.kubectl(
        "-n", NS, "patch", "ppj", first, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":true}}}', json=False
    )
    wait_phase(first, "Suspended", 60, NS)
    wait_phase(second, "Running", 240, NS)
    kube.kubectl(
        "-n", NS, "patch", "ppj", first, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":false}}}', json=False
    )
    kueue.wait_waiting(NS, first, "Queued", 60)
    run.progress.say(f"{first} suspended: its quota went to {second}; resumed, {first} queues again")
    wait_phase(second, "Succeeded", 600, NS)
    wait_phase(first, "Succeeded", 600, NS)
    assert kueue.workload_condition(NS, first, "Finished") == "True", (
        f"Workload ppujob-{first} is not Finished after its job Succeeded"
    )
    assert kueue.resumed_line(NS, first), f"{first} did not resume from its checkpoint after the suspend"
    run.progress.phase("Kueue: queued, suspended, admitted in turn")


def test_8_kueue_preemption_and_deletion(run: Run, cluster: Cluster) -> None:
    """A high-priority job evicts a running low one, which resumes from its checkpoint; a deleted queued job leaves nothing."""
    kube.apply(queued_job("qc", 1000, "low", run.image))
    wait_phase("qc", "Running", 240, NS)
    kueue.wait_checkpoint(NS, "qc")
    kube.apply(queued_job("qd", 200, "high", run.image))
    kueue.wait_waiting(NS, "qc", "Evicted", 120)
    message = status("qc", NS).message or ""
    assert "Preempted" in message, f"qc evicted without saying it was preempted: {message}"
    wait_phase("qd", "Running", 240, NS)
    run.progress.say(f"qd (high) preempted qc (low): qc's pods are gone and it waits: {status('qc', NS).message}")
    # A queued job deleted while it waits leaves nothing behind.
    kube.apply(queued_job("qe", 200, "low", run.image))
    kueue.wait_waiting(NS, "qe", "Queued", 60)
    kube.kubectl("-n", NS, "delete", "ppj", "qe", "--wait=true", json=False)
    wait_at_most(lambda: not kube.exists("-n", NS, "workload", "ppujob-qe"), 60, interval_s=1)
    assert not kube.exists("-n", NS, "workload", "ppujob-qe"), "Workload ppujob-qe outlived its deleted PPUJob"
    assert kueue.pod_count(NS, "qe") == 0, "deleted queued job qe left pods"
    wait_phase("qd", "Succeeded", 600, NS)
    wait_phase("qc", "Succeeded", 900, NS)
    restarts = status("qc", NS).restart_count
    assert restarts == 0, f"qc's preemption counted as a failure: restartCount {restarts}"
    resumed = kueue.resumed_line(NS, "qc")
    assert resumed, "qc did not resume from its checkpoint after the preemption"
    since = resumed.split("info ", 1)[1] if "info " in resumed else resumed
    run.progress.say(f"qd Succeeded, then qc was admitted again and Succeeded (restartCount 0): {since}")
    # What the preemption cost: the eviction is a notice to every rank, which saves the job's state
    # at the round boundary it reaches, so the rerun trains at most that one round again.
    cost = status("qc", NS)
    assert (cost.stops or 0) >= 1 and cost.last_stop_rounds_lost is not None, (
        f"qc's status does not say what its preemption cost: {cost.dump()}"
    )
    assert cost.last_stop_rounds_lost <= 1, f"qc's preemption cost {cost.last_stop_rounds_lost} rounds: {cost.dump()}"
    run.progress.say(
        f"qc's preemption cost {cost.last_stop_rounds_lost} round(s) ({cost.rounds_lost} over {cost.stops} stop(s))"
    )
    kube.kubectl("-n", NS, "delete", "ppj", "qa", "qb", "qc", "qd", "--wait=true", json=False)

    def workloads() -> list:
        got = kube.kubectl("-n", NS, "get", "workloads", check=False)
        return got["items"] if got else []

    wait_at_most(lambda: not workloads(), 60, interval_s=1)
    assert not workloads(), "Workloads left after their PPUJobs were deleted"
    cluster.kueue_down()
    run.progress.phase("Kueue: preemption and deletion")


def test_helm_uninstall(run: Run, operator: OperatorChart) -> None:
    operator.uninstall()
    run.progress.phase("helm uninstall")


def test_5c_live_perplexity_in_fault_free_band(run: Run, band: Band, state: State) -> None:
    """The band's three local runs started with the module; what remains of them runs alone now."""
    assert band.wait(), "step 5c compares with local fault-free runs, and one failed"
    bounds = band.bounds()
    assert inside(bounds, state.live_perplexity), (
        f"live job: final perplexity '{state.live_perplexity}' outside the fault-free seeds' band {bounds}"
    )
    run.progress.passed(
        f"chaos: the live job's perplexity {state.live_perplexity} after 5 faults is inside the fault-free band "
        f"{bounds} (seed 0 fault-free: {bounds.p0:.3f})"
    )
    run.progress.phase("fault-free band (what was left of it)")
    run.progress.done()
