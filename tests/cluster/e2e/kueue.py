"""PPUJobs under Kueue (the one-node program's step 8): admission, waiting, and the Workloads behind them.

Contract: reads and waits on PPUJob ns/JOB and its Workload ppujob-JOB (which the operator
creates). admitted() is condition Admitted's status; workload_condition() a condition of the
Workload (None when it or the condition is missing); pod_count() the job's pods;
wait_waiting(ns, job, reason, s) waits until the job waits for Kueue with that reason, not
Admitted and without a pod; wait_checkpoint() waits up to 120 s for a checkpoint at round 2 and
goes on regardless (a resume needs one, the test then checks that it happened);
resumed_line() is rank 0's log line saying where it resumed from, None when it did not.
"""

from . import kube, ppujob
from .waiting import wait_at_most


def admitted(ns: str, job: str) -> str | None:
    return ppujob.status(job, ns).condition_status("Admitted")


def workload_condition(ns: str, job: str, type_: str) -> str | None:
    """The status of condition type_ of Workload ppujob-JOB."""
    workload = kube.kubectl("-n", ns, "get", "workload", f"ppujob-{job}", check=False)
    conditions = (workload or {}).get("status", {}).get("conditions", [])
    return next((c.get("status") for c in conditions if c.get("type") == type_), None)


def pod_count(ns: str, job: str) -> int:
    return len(kube.pods(ns, f"ppu.dev/job={job}", check=False))


def wait_waiting(ns: str, job: str, reason: str, timeout_s: float) -> None:
    """Waits until the job waits with this reason: not Admitted, and no pod meanwhile."""

    def waiting() -> bool:
        now = ppujob.status(job, ns)
        return now.reason == reason and now.condition_status("Admitted") == "False" and pod_count(ns, job) == 0

    if not wait_at_most(waiting, timeout_s):
        raise AssertionError(
            f"{job} is not waiting with reason {reason} after {timeout_s:g} s: "
            f"{ppujob.status(job, ns).dump()} ({pod_count(ns, job)} pods)"
        )


def wait_checkpoint(ns: str, job: str) -> None:
    """Waits up to 120 s (2 s polls) for the job's checkpoint at round 2 or later."""
    wait_at_most(lambda: ppujob.status(job, ns).last_checkpoint_round or 0, 120, until=lambda ck: ck >= 2)


def resumed_line(ns: str, job: str) -> str | None:
    """Rank 0's first log line saying it resumed from a checkpoint (its log read whole)."""
    return next((line for line in kube.logs(ns, f"{job}-rank-0").splitlines() if "resumed from" in line), None)
