"""Fixtures and hooks the cluster end-to-end programs share; each program's `program` fixture says what they make.

Contract:
- one program per session: each program is a directory (single_node/, two_nodes/) whose
  conftest.py provides the session-scoped `program` (its Program) and its own fixtures; a run
  that would collect tests of two programs is refused (--collect-only excepted), since the
  fixtures below are one program's.
- options: --keep leaves the cluster up afterwards (default: `cluster.sh down`); --rebuild-image
  builds the image even when podman has it (default: only when it is missing).
- session-scoped fixtures: `run` checks root and the sample, installs cluster.sh's packages and
  registers the run's one cleanup (Run.cleanup) before anything else starts; `image` is the image
  under test, built by scripts/build-image.sh when needed; `helm` the pinned helm; `band` the
  fault-free runs, started; `tools` what the program needs built before its cluster (nothing,
  unless its conftest overrides it); `cluster` the program's first fresh cluster; `operator_chart`
  the operator's release (not installed); `operator` that release installed on the first cluster
  as the Program declares (helm.install_operator, which the two-node program's steps call on each
  fresh cluster); `namespace` the program's job namespace on that cluster, enforcing the
  `restricted` Pod Security Standard; `jobs` (ppujob.Jobs) makes ppujob.Job(name, ns): a PPUJob to
  start and wait for, ns the program's job namespace unless given.
- hooks: a failed test gets the run's failure report (Run.failure_report: cluster objects,
  operator log, events, rank log copies) as a section of its report, and a line
  "FAIL: PROGRAM: TEST: MESSAGE"; once a test of the session failed, its later tests, in whatever
  file, are skipped, naming it: each phase runs on what the phases before it left.
"""

import os
import subprocess
from collections.abc import Iterator

import pytest

from . import REPO, kube, manifests
from .band import Band, BandError
from .cluster import Cluster
from .helm import OperatorChart, build_helm, install_operator
from .ppujob import Jobs
from .program import OPERATOR_NAMESPACE, Program
from .run import Run

_RUN = pytest.StashKey[Run]()
_FAILED = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ppu cluster e2e")
    group.addoption("--keep", action="store_true", help="leave the cluster running afterwards")
    group.addoption("--rebuild-image", action="store_true", help="rebuild the image even if podman has one")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuses a run of two programs' tests: the session-scoped fixtures would give the second the first's run."""
    programs = sorted({item.path.parent.name for item in items})
    if len(programs) > 1 and not config.option.collectonly:
        raise pytest.UsageError(
            f"one program per pytest run, not {' and '.join(programs)}: run each program's directory "
            "(tests/cluster/e2e/single_node, tests/cluster/e2e/two_nodes) alone"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    failed = item.session.stash.get(_FAILED, None)
    if failed is not None:
        pytest.skip(f"{failed} failed, and this phase runs on what it should have left")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    if _FAILED not in item.session.stash:
        item.session.stash[_FAILED] = item.name
    run = item.config.stash.get(_RUN, None)
    lines = str(call.excinfo.value).splitlines() if call.excinfo is not None else []
    message = lines[0] if lines else (call.excinfo.typename if call.excinfo is not None else report.when)
    name = run.program.name if run is not None else "cluster e2e"
    terminal = item.config.pluginmanager.get_plugin("terminalreporter")
    line = f"FAIL: {name}: {item.name} ({report.when}): {message}"
    if terminal is not None:
        terminal.write_line(line, red=True)
    if run is not None:
        state = run.failure_report()
        if state:
            report.sections.append(("cluster state at failure", state))


@pytest.fixture(scope="session")
def run(request: pytest.FixtureRequest, program: Program) -> Run:
    """The program's run; its cleanup (band, log copies, background processes, cluster down) is registered first."""
    if os.geteuid() != 0:
        pytest.fail("needs root (containerd, namespaces, cgroups)", pytrace=False)
    this = Run(program, keep=request.config.getoption("keep"), rebuild_image=request.config.getoption("rebuild_image"))

    def end() -> None:
        if request.config.stash.get(_RUN, None) is this:
            del request.config.stash[_RUN]
        this.cleanup()

    request.addfinalizer(end)
    request.config.stash[_RUN] = this
    manifests.require_sync_every()
    this.cluster.deps()
    return this


@pytest.fixture(scope="session")
def image(run: Run) -> str:
    """The image under test (a podman image), built by scripts/build-image.sh when missing or when asked."""
    try:
        present = subprocess.run(["podman", "image", "exists", run.image], check=False).returncode == 0
    except FileNotFoundError:
        present = False
    if run.rebuild_image or not present:
        built = subprocess.run(
            ["bash", str(REPO / "scripts" / "build-image.sh"), "--tag", run.image],
            check=False,
            stdout=subprocess.DEVNULL,
        )
        if built.returncode != 0:
            pytest.fail(f"scripts/build-image.sh --tag {run.image} failed (exit {built.returncode})", pytrace=False)
    run.progress.phase("image")
    return run.image


@pytest.fixture(scope="session")
def helm(run: Run) -> str:
    """The pinned helm binary."""
    return build_helm()


@pytest.fixture(scope="session")
def band(run: Run, image: str) -> Band:
    """The fault-free runs of the program's band job, started (they run beside the cluster until judged)."""
    try:
        run.band.start(run.program.band_job(image))
    except BandError as e:
        pytest.fail(f"{e}: the final perplexities are judged against them", pytrace=False)
    return run.band


@pytest.fixture(scope="session")
def tools(run: Run, helm: str) -> dict[str, str]:
    """What the program needs built before its first cluster comes up; nothing unless its conftest overrides it."""
    return {}


@pytest.fixture(scope="session")
def cluster(run: Run, image: str, band: Band, tools: dict[str, str]) -> Cluster:
    """The program's first cluster, fresh (a cluster an earlier run left is taken down first)."""
    return run.fresh_cluster()


@pytest.fixture(scope="session")
def operator_chart(helm: str) -> OperatorChart:
    """The operator's release in OPERATOR_NAMESPACE (not installed yet)."""
    return OperatorChart(helm, OPERATOR_NAMESPACE)


@pytest.fixture(scope="session")
def operator(run: Run, cluster: Cluster, operator_chart: OperatorChart) -> OperatorChart:
    """The image in the first cluster and the operator's chart installed on it, as the Program declares."""
    install_operator(run, cluster, operator_chart)
    return operator_chart


@pytest.fixture(scope="session")
def namespace(run: Run, cluster: Cluster) -> str:
    """The program's job namespace on its first cluster, enforcing the `restricted` Pod Security Standard."""
    kube.create_restricted_namespace(run.program.namespace)
    return run.program.namespace


@pytest.fixture(scope="session")
def jobs(program: Program) -> Jobs:
    """jobs(name, ns=the program's job namespace): PPUJob ns/name, to start, read and wait for."""
    return Jobs(program.namespace)
