"""kubectl for the cluster end-to-end tests: one runner, and the few reads every phase shares.

Contract: use(kubectl_path) names the kubectl to run (the pinned one cluster.sh up builds, its
env file's TOOLS) before the first call; the cluster comes from $KUBECONFIG, which the cluster
fixture exports. kubectl(*args) runs `kubectl ARGS -o json` and returns the parsed object;
json=False runs `kubectl ARGS` and returns its stdout as text. A non-zero exit raises
KubectlError with kubectl's stderr, or, with check=False, returns None (the bash's
`2>/dev/null || true`). input= is written to kubectl's stdin. follow() starts kubectl for a stream
(`logs -f`), spawn() one that runs until ended (`port-forward`). Nothing here waits or retries.
"""

import json as jsonlib
import subprocess
from typing import Any

_kubectl: str | None = None


class KubectlError(RuntimeError):
    """kubectl exited non-zero; the message holds its arguments and stderr."""


def use(kubectl_path: str) -> None:
    """Run this kubectl from now on."""
    global _kubectl
    _kubectl = kubectl_path


def configured() -> bool:
    """Whether use() named a kubectl (the cluster was brought up)."""
    return _kubectl is not None


def kubectl(*args: str, json: bool = True, input: str | None = None, check: bool = True) -> Any:
    """`kubectl ARGS -o json` parsed, or with json=False `kubectl ARGS`'s stdout; None on failure if not check."""
    if _kubectl is None:
        raise KubectlError("kube.use() was not called: no cluster is up")
    argv = [_kubectl, *args, *(["-o", "json"] if json else [])]
    done = subprocess.run(argv, check=False, input=input, capture_output=True, text=True)
    if done.returncode != 0:
        if not check:
            return None
        raise KubectlError(f"kubectl {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return jsonlib.loads(done.stdout) if json else done.stdout


def apply(manifest: str) -> None:
    """kubectl apply -f - of the manifest's text (its output dropped)."""
    kubectl("apply", "-f", "-", json=False, input=manifest)


def pods(ns: str, selector: str, *, check: bool = True) -> list[dict]:
    """The pods of namespace ns that match the label selector (an empty list when the get fails and not check)."""
    got = kubectl("-n", ns, "get", "pods", "-l", selector, check=check)
    return got["items"] if got else []


def pod(ns: str, name: str) -> dict | None:
    """Pod ns/name, or None when there is none (or the API server did not answer)."""
    return kubectl("-n", ns, "get", "pod", name, check=False)


def exists(*args: str) -> bool:
    """Whether `kubectl get ARGS` succeeds: the bash's `kubectl get ... >/dev/null 2>&1`."""
    return kubectl("get", *args, json=False, check=False) is not None


def logs(ns: str, *args: str, merge_stderr: bool = False) -> str:
    """`kubectl -n ns logs ARGS`'s output (ARGS: a pod, or -l SELECTOR), '' when it fails; merge_stderr: `2>&1`."""
    if _kubectl is None:
        raise KubectlError("kube.use() was not called: no cluster is up")
    argv = [_kubectl, "-n", ns, "logs", *args]
    if merge_stderr:
        return subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def event_messages(ns: str, reason: str) -> str:
    """The messages of namespace ns's events with this reason, one a line ('' when none)."""
    got = kubectl("-n", ns, "get", "events", "--field-selector", f"reason={reason}")
    return "".join(f"{event.get('message', '')}\n" for event in got["items"]).rstrip("\n")


def table_line(*args: str) -> str:
    """`kubectl get ARGS --no-headers` as text, trailing newlines dropped: the row(s) a user sees."""
    return kubectl("get", *args, "--no-headers", json=False).rstrip("\n")


def container_id(ns: str, selector: str) -> str:
    """The first container's id of the first pod matching selector, without its `containerd://`."""
    found = pods(ns, selector)
    statuses = found[0].get("status", {}).get("containerStatuses", []) if found else []
    cid = statuses[0].get("containerID", "") if statuses else ""
    return cid.removeprefix("containerd://")


def pod_uid(ns: str, selector: str) -> str:
    """The uid of the first pod matching selector, '' when there is none."""
    found = pods(ns, selector, check=False)
    return found[0]["metadata"]["uid"] if found else ""


def node_ready(node: str) -> str:
    """The status ('True', 'False', 'Unknown') of the node's Ready condition, '' when it has none."""
    conditions = kubectl("get", "node", node).get("status", {}).get("conditions", [])
    return next((c.get("status", "") for c in conditions if c.get("type") == "Ready"), "")


def create_restricted_namespace(ns: str) -> None:
    """Namespace ns, labelled to enforce the `restricted` Pod Security Standard."""
    kubectl("create", "namespace", ns, json=False)
    kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", json=False)


def follow(*args: str) -> subprocess.Popen:
    """`kubectl ARGS` started with its stdout to read as it comes (e.g. `logs -f`); its stderr shown."""
    if _kubectl is None:
        raise KubectlError("kube.use() was not called: no cluster is up")
    return subprocess.Popen([_kubectl, *args], stdout=subprocess.PIPE, text=True)


def spawn(*args: str) -> subprocess.Popen:
    """`kubectl ARGS` started in the background, its output dropped (e.g. `port-forward`); the caller ends it."""
    if _kubectl is None:
        raise KubectlError("kube.use() was not called: no cluster is up")
    return subprocess.Popen([_kubectl, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
