"""scripts/cluster.sh for the cluster end-to-end tests: one real cluster's state dir and its commands.

Contract: Cluster(state_dir) runs `bash scripts/cluster.sh COMMAND` with PPU_CLUSTER_DIR set to
state_dir (the caller exports PPU_CLUSTER_PORT). A command that fails raises ClusterError; its
stderr always reaches the console, its stdout too unless the method says it is read or dropped,
as the bash programs redirected it. up() returns the kubeconfig `cluster.sh up` prints; env() is
the env file it writes (TOOLS, NETPOL, NODES). netns() runs a command inside the cluster's network
namespace. build_tools() runs scripts/build-cluster-tools.sh and returns the directory it prints.
"""

import os
import re
import subprocess
from pathlib import Path

from . import REPO

SCRIPT = REPO / "scripts" / "cluster.sh"


class ClusterError(RuntimeError):
    """A scripts/cluster.sh command failed."""


def build_tools(*flags: str) -> str:
    """scripts/build-cluster-tools.sh FLAGS (built once, then cached); the last line it prints."""
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-cluster-tools.sh"), *flags],
        check=False,
        stdout=subprocess.PIPE,
        text=True,
    )
    if done.returncode != 0:
        raise ClusterError(f"scripts/build-cluster-tools.sh {' '.join(flags)}: exit {done.returncode}")
    lines = done.stdout.splitlines()
    return lines[-1] if lines else ""


class Cluster:
    """The cluster whose state lives in state_dir."""

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir

    def _env(self) -> dict[str, str]:
        return dict(os.environ, PPU_CLUSTER_DIR=str(self.state_dir))

    def _run(self, *args: str, stdout: int | None = None, input: str | None = None) -> str:
        done = subprocess.run(
            ["bash", str(SCRIPT), *args], check=False, stdout=stdout, input=input, text=True, env=self._env()
        )
        if done.returncode != 0:
            raise ClusterError(f"scripts/cluster.sh {' '.join(args)}: exit {done.returncode}")
        return done.stdout if stdout == subprocess.PIPE else ""

    def deps(self) -> None:
        """The Debian packages cluster.sh needs."""
        self._run("deps")

    def holding(self) -> bool:
        """Whether a cluster of this state dir is up (or was left up by an earlier run)."""
        return (self.state_dir / "holder.pid").is_file()

    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    def up(self, nodes: int) -> str:
        """A cluster of `nodes` nodes; returns the KUBECONFIG path from the `export KUBECONFIG=...` it prints last."""
        out = self._run("up", *(["--nodes", str(nodes)] if nodes > 1 else []), stdout=subprocess.PIPE)
        lines = out.splitlines()
        match = re.fullmatch(r"export KUBECONFIG=(\S+)", lines[-1].strip() if lines else "")
        if not match:
            raise ClusterError(f"scripts/cluster.sh up printed no `export KUBECONFIG=...` last: {out[-300:]!r}")
        return match.group(1)

    def env(self) -> dict[str, str]:
        """The env file `up` wrote: TOOLS (the cluster binaries), NETPOL (1: policies enforced), NODES."""
        pairs = (line.split("=", 1) for line in (self.state_dir / "env").read_text().splitlines() if "=" in line)
        return {key: value for key, value in pairs}

    def down(self) -> None:
        self._run("down")

    def healthy(self) -> bool:
        """`cluster.sh status`: the API server answers and every node is Ready."""
        return subprocess.run(["bash", str(SCRIPT), "status"], check=False, env=self._env()).returncode == 0

    def load_image(self, image: str, *aliases: str, quiet: bool = False) -> None:
        """Copies the podman image into every node's containerd, also under each alias."""
        alias_args = [arg for alias in aliases for arg in ("--as", alias)]
        self._run("load-image", image, *alias_args, stdout=subprocess.DEVNULL if quiet else None)

    def netns(self, *command: str, input: str | None = None, read: bool = False) -> str:
        """COMMAND inside the cluster's network namespace; its stdout returned when read."""
        return self._run("netns", *command, input=input, stdout=subprocess.PIPE if read else None)

    def netns_background(self, *command: str, log: Path) -> subprocess.Popen:
        """COMMAND started inside the cluster's network namespace (exec'd: the Popen is its process), output to log."""
        with log.open("w") as out:
            return subprocess.Popen(
                ["bash", str(SCRIPT), "netns", *command], stdout=out, stderr=subprocess.STDOUT, env=self._env()
            )

    def kill_container(self, container_id: str) -> None:
        """SIGKILL to a container's task through containerd (the pod's kubelet sees it die)."""
        sock = str(self.state_dir / "run" / "containerd.sock")
        self.netns("ctr", "-a", sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", container_id)

    def stop_node(self, node: str) -> None:
        self._run("stop-node", node)

    def partition_node(self, node: str) -> None:
        self._run("partition-node", node)

    def heal_node(self, node: str) -> None:
        self._run("heal-node", node)

    def kueue_up(self) -> None:
        self._run("kueue-up", stdout=subprocess.DEVNULL)

    def kueue_down(self) -> None:
        self._run("kueue-down", stdout=subprocess.DEVNULL)
