"""An S3-compatible object store in the cluster: SeaweedFS (`weed server` with its S3 gateway,
authentication on) as a Deployment and a Service `object-store` (port 8333) of one namespace, for
the phase that keeps a PPUJob's checkpoints in S3 (manifests/samples/cpu-tiny-s3.yaml names it).

Contract: image(base, tag) builds image `tag` FROM the image under test with scripts/
build-seaweedfs.sh's static `weed` added (podman, no pull), so the cluster needs no registry;
deploy(ns, image) applies the store's Secret (its identities), Deployment and Service, waits
until it answers and creates BUCKET through `weed shell` inside its pod; credentials_secret(ns,
name) is the PPUJob's Secret with the same keys; remove(ns) deletes what deploy made.
"""

import json
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from . import REPO, kube

NAME = "object-store"
PORT = 8333
BUCKET = "ppu-checkpoints"
ACCESS_KEY = "ppu-e2e-access"
SECRET_KEY = "ppu-e2e-secret-key-0123456789"


def weed_binary() -> Path:
    """scripts/build-seaweedfs.sh's weed (built when missing: a few minutes)."""
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-seaweedfs.sh"), "--print-dir"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip().splitlines()[-1]) / "weed"


def image(base: str, tag: str) -> str:
    with tempfile.TemporaryDirectory(prefix="ppu-e2e-weed-") as ctx:
        weed = Path(ctx) / "weed"
        weed.write_bytes(weed_binary().read_bytes())
        weed.chmod(0o755)
        (Path(ctx) / "Containerfile").write_text(f"FROM {base}\nCOPY weed /usr/local/bin/weed\n")
        subprocess.run(["podman", "build", "--pull=never", "-q", "-t", tag, ctx], check=True, stdout=subprocess.DEVNULL)
    return tag


def _manifest(ns: str, image_: str) -> str:
    identities = {
        "identities": [
            {
                "name": "ppu",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    container = {
        "name": "weed",
        "image": image_,
        "imagePullPolicy": "Never",
        "command": [
            "weed",
            "server",
            "-dir=/data",
            "-filer",
            "-s3",
            f"-s3.port={PORT}",
            "-s3.config=/etc/weed/s3.json",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64",
            "-volume.max=16",
        ],
        "ports": [{"name": "s3", "containerPort": PORT}],
        "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "config", "mountPath": "/etc/weed"}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "config", "secret": {"secretName": f"{NAME}-config"}}],
    }
    labels = {"app.kubernetes.io/name": NAME}
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{NAME}-config", "namespace": ns},
            "stringData": {"s3.json": json.dumps(identities)},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": ns},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": ns},
            # Headless: the local cluster has no kube-proxy (scripts/cluster.sh), and the name
            # resolves to the pod's address.
            "spec": {
                "clusterIP": "None",
                "selector": labels,
                "ports": [{"name": "s3", "port": PORT, "targetPort": PORT}],
            },
        },
    ]
    return "---\n".join(yaml.safe_dump(d) for d in docs)


def _weed_shell(ns: str, command: str) -> str:
    """`weed shell` COMMAND inside the store's pod; its output ("" when the exec fails)."""
    shell = f"echo '{command}' | weed shell -master=localhost:9333 -filer=localhost:8888"
    out = kube.kubectl("-n", ns, "exec", f"deployment/{NAME}", "--", "sh", "-c", shell, json=False, check=False)
    return out or ""


def deploy(ns: str, image_: str, timeout_s: float = 180) -> None:
    kube.apply(_manifest(ns, image_))
    kube.kubectl("-n", ns, "rollout", "status", f"deployment/{NAME}", f"--timeout={int(timeout_s)}s", json=False)
    # The S3 gateway answers once the filer is up; the bucket is a filer folder made by weed shell.
    deadline = time.monotonic() + timeout_s
    while True:
        made = _weed_shell(ns, f"s3.bucket.create -name {BUCKET}")
        listed = _weed_shell(ns, "s3.bucket.list")
        if BUCKET in listed:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"object store: bucket {BUCKET} not created within {timeout_s} s: {made} {listed}")
        time.sleep(2)


def credentials_secret(ns: str, name: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": ns},
            "stringData": {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY},
        }
    )


def remove(ns: str) -> None:
    for kind in ("deployment", "service", "secret"):
        name = NAME if kind != "secret" else f"{NAME}-config"
        kube.kubectl("-n", ns, "delete", kind, name, "--ignore-not-found", "--wait=true", json=False, check=False)
