"""The operator's chart (charts/ppu-operator) installed by helm, as the cluster end-to-end tests install it.

Contract: build_helm() returns the pinned helm (scripts/build-helm.sh builds it once). An
OperatorChart is release `ppu-operator` in its namespace: install() puts the chart on the image
under test (never pulled, scrape interval 2 s, any extra `--set`s) and waits up to 180 s for it
to be ready; upgrade() changes values over the installed ones, also waiting; uninstall() removes
it. helm's stdout is dropped and its stderr shown; a failure raises HelmError.
install_operator(run, cluster, chart) is how both programs put the operator on a fresh cluster,
as their Program declares: the image loaded into the cluster (also under the samples' image name
when sample_alias; its output dropped when quiet_load), the chart installed with operator_sets,
then each of operator_accounts created as a ServiceAccount in the chart's namespace.
"""

import subprocess

from . import REPO, kube, manifests
from .cluster import Cluster
from .run import Run

CHART = REPO / "charts" / "ppu-operator"
RELEASE = "ppu-operator"


class HelmError(RuntimeError):
    """A helm command failed."""


def build_helm() -> str:
    """The pinned helm binary (the last line scripts/build-helm.sh prints)."""
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-helm.sh")], check=False, stdout=subprocess.PIPE, text=True
    )
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        raise HelmError(f"scripts/build-helm.sh: exit {done.returncode}")
    return lines[-1]


def split_image(image: str) -> tuple[str, str]:
    """(repository, tag) of an image name as the chart's values take them: `${IMAGE%:*}` and `${IMAGE##*:}`."""
    repository, colon, tag = image.rpartition(":")
    return (repository, tag) if colon else (image, image)


class OperatorChart:
    """Release ppu-operator of charts/ppu-operator in one namespace."""

    def __init__(self, helm: str, namespace: str):
        self.helm = helm
        self.namespace = namespace

    def _helm(self, *args: str) -> None:
        done = subprocess.run([self.helm, *args], check=False, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise HelmError(f"helm {' '.join(args)}: exit {done.returncode}")

    def install(self, image: str, *sets: str) -> None:
        """helm install on `image` with the given extra `--set KEY=VALUE`s; waits for the Deployment."""
        repository, tag = split_image(image)
        values = [f"image.repository={repository}", f"image.tag={tag}", "image.pullPolicy=Never"]
        values += ["operator.scrapeInterval=2s", *sets]
        set_args = [arg for value in values for arg in ("--set", value)]
        self._helm(
            "install",
            RELEASE,
            str(CHART),
            "-n",
            self.namespace,
            "--create-namespace",
            *set_args,
            "--wait",
            "--timeout",
            "180s",
        )

    def upgrade(self, *sets: str) -> None:
        """helm upgrade --reuse-values with these `--set KEY=VALUE`s; waits for the Deployment."""
        set_args = [arg for value in sets for arg in ("--set", value)]
        self._helm(
            "upgrade",
            RELEASE,
            str(CHART),
            "-n",
            self.namespace,
            "--reuse-values",
            *set_args,
            "--wait",
            "--timeout",
            "180s",
        )

    def uninstall(self) -> None:
        self._helm("uninstall", RELEASE, "-n", self.namespace)


def install_operator(run: Run, cluster: Cluster, chart: OperatorChart) -> None:
    """The image into the cluster and the operator's chart on it, as run.program declares."""
    program = run.program
    aliases = [manifests.sample_image()] if program.sample_alias else []
    cluster.load_image(run.image, *aliases, quiet=program.quiet_load)
    run.progress.phase("image into containerd")
    chart.install(run.image, *program.operator_sets)
    for account in program.operator_accounts:
        kube.kubectl("-n", chart.namespace, "create", "serviceaccount", account, json=False)
