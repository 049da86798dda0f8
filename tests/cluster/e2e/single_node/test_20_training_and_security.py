"""Phases 2 and 3 of the one-node program: the reference job trains, and everything runs confined.

Contract: phase 2 starts PPUJob ref (4 ranks, STEPS steps, checkpoints on claim ckpt-ref) in the
job namespace, which enforces the `restricted` Pod Security Standard; it is Running within 240 s
and its ranks rendezvous at a DNS name (the headless Service's, resolved by CoreDNS). Phase 3,
while it trains, runs tests/cluster/security_check.sh on its ranks and on the operator's
ServiceAccount (state.service_account). Leaves ref running: test_25_metrics reads it and
test_35_reference_result judges its end.
"""

import re

from .. import REPO, kube, manifests
from ..ppujob import Jobs
from ..run import Run
from . import NS, OPNS, STEPS
from .checks import run_check
from .state import State


def test_2_job_scheduled_and_running(run: Run, namespace: str, jobs: Jobs) -> None:
    jobs("ref").start(manifests.job(NS, "ref", "ckpt-ref", STEPS, run.image))
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
