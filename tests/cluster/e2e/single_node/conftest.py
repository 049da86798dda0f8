"""The one-node program's fixtures, session-scoped: a session is this program (see __init__.py).

Contract: `program` is PROGRAM, which the shared fixtures of ../conftest.py make their run of;
`state` the State its phases hand on across files; `tools` (overriding the shared one) builds
Prometheus with Kubernetes service discovery (test_25_metrics) and Kueue (test_70_kueue) before
the cluster comes up, the fault-free band already started. The operator is the shared
`operator` fixture's (../conftest.py: PROGRAM loads the image also under the samples' image name):
test_10_install checks it, test_70_kueue upgrades it, test_80_helm_uninstall removes it.
"""

import pytest

from ..band import Band
from ..cluster import build_tools
from ..program import Program
from ..run import Run
from . import PROGRAM
from .state import State


@pytest.fixture(scope="session")
def program() -> Program:
    """This program (PROGRAM in __init__.py): what the shared fixtures make its run of."""
    return PROGRAM


@pytest.fixture(scope="session")
def state() -> State:
    """What the phases hand on across files, empty at the start of the session."""
    return State()


@pytest.fixture(scope="session")
def tools(run: Run, band: Band, helm: str) -> dict[str, str]:
    """Prometheus with Kubernetes service discovery (phase 4) and Kueue (phase 8), built before the cluster."""
    built = {"prometheus": f"{build_tools('--prometheus')}/prometheus"}
    build_tools("--kueue")
    run.progress.phase("tools")
    return built
