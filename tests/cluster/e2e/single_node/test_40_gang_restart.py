"""Phases 5 and 5a of the one-node program: a gang job interrupted, restarted as a gang, ends at the reference parameters.

Contract: phase 5 runs the reference job again as PPUJob kill and SIGKILLs rank 1's container a
third of the way through: a gang restart within 240 s, the new rank 0 resumes from the checkpoint
on the volume, Succeeded within 900 s. Phase 5a runs it as PPUJob notice and deletes every rank
pod at once (graceful: each rank's notice): the new rank 0 resumes within 300 s, Succeeded, and
status.lastStop says at most one round was lost. Every rank of both ends at state.ref_checksum
(test_35_reference_result).
"""

from .. import kube, manifests, summaries
from ..cluster import Cluster
from ..ppujob import Job, Jobs
from ..run import Run
from ..waiting import wait_at_most, wait_for
from . import NS, ROUNDS, STEPS
from .state import State


def after_bracket(line: str) -> str:
    """The line after its first "] " (`${line#*] }`): a log line without its time and level."""
    return line.split("] ", 1)[1] if "] " in line else line


def running_at_a_third(job: Job) -> int:
    """Waits (up to 600 s) for `job` to reach a third of its rounds; the round its status shows."""
    third = ROUNDS // 3
    return wait_for(
        lambda: job.status().outer_round,
        600,
        f"the {job.name} job to reach round {third}",
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


def test_5_kill_rank_gang_restart_resume(run: Run, cluster: Cluster, state: State, jobs: Jobs) -> None:
    kill = jobs("kill").start(manifests.job(NS, "kill", "ckpt-kill", STEPS, run.image))
    round_ = running_at_a_third(kill)
    assert kill.status().phase == "Running", f"kill job finished before the kill (round {round_})"
    cid = kube.container_id(NS, "ppu.dev/job=kill,ppu.dev/rank=1")
    assert cid, "no container id for rank 1"
    cluster.kill_container(cid)
    run.progress.say(f"killed rank 1's container {cid} (status at round {round_})")
    restarts = wait_for(
        lambda: kill.status().restart_count,
        240,
        "a gang restart after the kill (restartCount >= 1)",
        until=lambda n: n is not None and n >= 1,
        interval_s=1,
    )
    run.progress.say(f"gang restart ({restarts})")

    run.progress.say(f"restarted rank 0: {after_bracket(resumed_line('kill', 240))}")
    kill.wait_phase("Succeeded", 900)
    ends_at_reference("kill", "ckpt-kill", state, "after kill+resume")
    run.progress.say(
        f"killed job Succeeded after {restarts} gang restart(s) with param_checksum {state.ref_checksum}, "
        "equal to the uninterrupted run"
    )
    run.progress.phase("kill, gang restart, resume")


def test_5a_every_rank_pod_deleted_resumes_from_the_notice(run: Run, state: State, jobs: Jobs) -> None:
    """Every rank pod deleted at once (a node drain, a spot reclaim turned into deletions): each rank
    gets its notice (SIGTERM, the pod's grace period), the job's state is saved at the round boundary
    it reaches, and the new gang resumes from it: at most one round lost, bit for bit the
    uninterrupted run's parameters."""
    notice = jobs("notice").start(manifests.job(NS, "notice", "ckpt-notice", STEPS, run.image))
    round_ = running_at_a_third(notice)
    kube.kubectl("-n", NS, "delete", "pod", "-l", "ppu.dev/job=notice", "--wait=false", json=False)
    run.progress.say(f"deleted every rank pod of job notice (graceful), status at round {round_}")
    run.progress.say(f"new rank 0: {after_bracket(resumed_line('notice', 300))}")
    notice.wait_phase("Succeeded", 900)
    cost = notice.status()
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
