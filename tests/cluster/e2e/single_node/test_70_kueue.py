"""Phase 8 of the one-node program: PPUJobs queued, admitted, suspended and preempted by Kueue.

Contract: Kueue comes up, the operator is upgraded with kueue.enabled=true and the sample queue
is sized for one 4-rank gang. Queued jobs qa and qb: one is admitted within 120 s and runs, the
other waits (reason Queued, Kueue's "insufficient unused quota", its Workload without quota, no
pod); suspending the first hands its quota to the second, and the first, resumed, queues again,
then both Succeed and the first resumed from its checkpoint. A high-priority qd evicts a running
low qc (reason Evicted, "Preempted"), qc is admitted again afterwards, resumes from its
checkpoint and Succeeds with restartCount 0 and status.lastStop.roundsLost <= 1; a queued qe
deleted while it waits leaves no Workload and no pod. Every Workload goes with its PPUJob, and
Kueue is taken down at the end; the operator stays installed (kueue.enabled) for
test_80_helm_uninstall.
"""

from .. import kube, kueue, manifests
from ..cluster import Cluster
from ..helm import OperatorChart
from ..ppujob import Jobs
from ..run import Run
from ..waiting import wait_at_most
from . import NS, OPNS


def queued_job(name: str, steps: int, priority: str, image: str) -> str:
    return manifests.queued_job(NS, name, f"ckpt-{name}", steps, priority, image)


def test_8_kueue_queued_suspended_admitted_in_turn(
    run: Run, cluster: Cluster, operator: OperatorChart, jobs: Jobs
) -> None:
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
    message = jobs(second).status().message or ""
    assert "insufficient unused quota" in message, f"{second} waits without Kueue's reason: '{message}'"
    assert "Queued" in kube.table_line("-n", NS, "ppj", second), "column REASON does not say Queued"
    assert kueue.workload_condition(NS, second, "QuotaReserved") == "False", (
        f"Workload ppujob-{second} holds quota while its job waits"
    )
    jobs(first).wait_phase("Running", 240)
    run.progress.say(f"{first} admitted and Running; {second} waits with no pod: {message}")
    # Suspending the running job releases its quota (its Workload is deleted): the other is admitted.
    kueue.wait_checkpoint(NS, first)
    kube.kubectl(
        "-n", NS, "patch", "ppj", first, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":true}}}', json=False
    )
    jobs(first).wait_phase("Suspended", 60)
    jobs(second).wait_phase("Running", 240)
    kube.kubectl(
        "-n", NS, "patch", "ppj", first, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":false}}}', json=False
    )
    kueue.wait_waiting(NS, first, "Queued", 60)
    run.progress.say(f"{first} suspended: its quota went to {second}; resumed, {first} queues again")
    jobs(second).wait_phase("Succeeded", 600)
    jobs(first).wait_phase("Succeeded", 600)
    assert kueue.workload_condition(NS, first, "Finished") == "True", (
        f"Workload ppujob-{first} is not Finished after its job Succeeded"
    )
    assert kueue.resumed_line(NS, first), f"{first} did not resume from its checkpoint after the suspend"
    run.progress.phase("Kueue: queued, suspended, admitted in turn")


def test_8_kueue_preemption_and_deletion(run: Run, cluster: Cluster, jobs: Jobs) -> None:
    """A high-priority job evicts a running low one, which resumes from its checkpoint; a deleted queued job leaves nothing."""
    qc = jobs("qc").start(queued_job("qc", 1000, "low", run.image))
    kueue.wait_checkpoint(NS, "qc")
    kube.apply(queued_job("qd", 200, "high", run.image))
    kueue.wait_waiting(NS, "qc", "Evicted", 120)
    message = qc.status().message or ""
    assert "Preempted" in message, f"qc evicted without saying it was preempted: {message}"
    qd = jobs("qd")
    qd.wait_phase("Running", 240)
    run.progress.say(f"qd (high) preempted qc (low): qc's pods are gone and it waits: {qc.status().message}")
    # A queued job deleted while it waits leaves nothing behind.
    kube.apply(queued_job("qe", 200, "low", run.image))
    kueue.wait_waiting(NS, "qe", "Queued", 60)
    kube.kubectl("-n", NS, "delete", "ppj", "qe", "--wait=true", json=False)
    wait_at_most(lambda: not kube.exists("-n", NS, "workload", "ppujob-qe"), 60, interval_s=1)
    assert not kube.exists("-n", NS, "workload", "ppujob-qe"), "Workload ppujob-qe outlived its deleted PPUJob"
    assert kueue.pod_count(NS, "qe") == 0, "deleted queued job qe left pods"
    qd.wait_phase("Succeeded", 600)
    qc.wait_phase("Succeeded", 900)
    restarts = qc.status().restart_count
    assert restarts == 0, f"qc's preemption counted as a failure: restartCount {restarts}"
    resumed = kueue.resumed_line(NS, "qc")
    assert resumed, "qc did not resume from its checkpoint after the preemption"
    since = resumed.split("info ", 1)[1] if "info " in resumed else resumed
    run.progress.say(f"qd Succeeded, then qc was admitted again and Succeeded (restartCount 0): {since}")
    # What the preemption cost: the eviction is a notice to every rank, which saves the job's state
    # at the round boundary it reaches, so the rerun trains at most that one round again.
    cost = qc.status()
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
