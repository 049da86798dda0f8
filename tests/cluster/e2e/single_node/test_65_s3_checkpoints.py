"""Phase 7b of the one-node program: checkpoints in S3-compatible storage (docs/OBJECT_STORAGE.md).

Contract: SeaweedFS runs in namespace default as the Service object-store (tests/cluster/e2e/
object_store.py), the one manifests/samples/cpu-tiny-s3.yaml names. The sample's PPUJob, applied
with its Secret's keys set to the store's, 1500 steps instead of 200, and spec.export onto a
claim, trains with its checkpoints in s3://ppu-checkpoints/cpu-tiny-s3 (no PPU_CHECKPOINT_DIR in
its pods). Once a third of its rounds are checkpointed every rank pod is deleted at once: the new
gang's rank 0 resumes from an s3:// round, the job Succeeds, and the operator's export Job reads
the last checkpoint from S3 (its arguments name the s3:// location and the store's endpoint) and
writes the model onto the claim (condition Exported ModelExported, status.export at the last
checkpoint round). The job, its claim and the store are deleted at the end.
"""

import yaml

from .. import kube, manifests, object_store
from ..ppujob import Jobs
from ..run import Run
from ..waiting import wait_at_most

NS = "default"
STEPS = 1500
CPU_TINY_S3 = manifests.SAMPLES / "cpu-tiny-s3.yaml"
MODEL_CLAIM = "cpu-tiny-s3-model"


def sample(secret_name: str) -> tuple[str, str]:
    """The sample as this phase applies it: its PPUJob's name, and the manifest (claim, Secret, PPUJob)."""
    docs = [d for d in yaml.safe_load_all(CPU_TINY_S3.read_text()) if d]
    job = next(d for d in docs if d["kind"] == "PPUJob")
    assert job["spec"]["checkpointSecret"] == secret_name, f"{CPU_TINY_S3.name} names another Secret"
    assert job["spec"]["training"]["checkpoint"]["s3_endpoint"] == f"http://{object_store.NAME}:{object_store.PORT}"
    job["spec"]["training"]["train"]["steps"] = STEPS
    job["spec"]["checkpoint"] = {"claimName": MODEL_CLAIM}  # where the export writes the model
    job["spec"]["export"] = {"format": "hf", "path": "model"}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": MODEL_CLAIM, "namespace": NS},
             "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    secret = yaml.safe_load(object_store.credentials_secret(NS, secret_name))
    return job["metadata"]["name"], "\n---\n".join(yaml.safe_dump(d) for d in (claim, secret, job))


def test_7b_s3_checkpoints_every_rank_pod_deleted_and_export(run: Run, jobs: Jobs) -> None:
    """Every rank pod deleted: the new gang resumes from S3; the export Job reads the model from S3."""
    store_image = object_store.image(run.image, "localhost/ppu-e2e-seaweedfs:latest")
    run.cluster.load_image(store_image, quiet=True)
    object_store.deploy(NS, store_image)
    run.progress.say(f"SeaweedFS serves S3 as Service {object_store.NAME}:{object_store.PORT}, bucket "
                     f"{object_store.BUCKET}")  # fmt: skip
    secret_name = next(d for d in yaml.safe_load_all(CPU_TINY_S3.read_text()) if d and d["kind"] == "Secret")
    name, manifest = sample(secret_name["metadata"]["name"])
    kube.apply(manifest)
    job = jobs(name, NS)
    wait_at_most(lambda: kube.pods(NS, f"ppu.dev/job={name},ppu.dev/rank=0"), 240, interval_s=1)
    pod = kube.pods(NS, f"ppu.dev/job={name},ppu.dev/rank=0")
    env = {e["name"] for e in pod[0]["spec"]["containers"][0].get("env", [])}
    assert "PPU_CHECKPOINT_DIR" not in env, f"{name}: the rank pods set PPU_CHECKPOINT_DIR over the s3:// location"
    third = STEPS // manifests.SYNC_EVERY // 3
    wait_at_most(lambda: job.status().last_checkpoint_round, 600, until=lambda r: r is not None and r >= third,
                 interval_s=1)  # fmt: skip
    before = job.status().last_checkpoint_round
    kube.kubectl("-n", NS, "delete", "pod", "-l", f"ppu.dev/job={name}", "--wait=false", json=False)
    run.progress.say(f"deleted every rank pod of {name} with round {before} checkpointed in S3")

    def resumed() -> str:
        log = kube.logs(NS, "-l", f"ppu.dev/job={name},ppu.dev/rank=0", "--tail=-1") or ""
        return next((line for line in log.splitlines() if "resumed from s3://" in line), "")

    line = wait_at_most(resumed, 300, interval_s=1)
    assert line, f"{name}: the new gang's rank 0 never logged 'resumed from s3://...'"
    run.progress.say(f"new rank 0: {line.split('] ', 1)[-1]}")
    job.wait_phase("Succeeded", 900)

    def exported():
        return job.status().condition("Exported")

    last = wait_at_most(exported, 300, until=lambda c: c is not None and c.reason in ("ModelExported", "ExportFailed"))
    assert last is not None and last.reason == "ModelExported", f"{name}: Exported is {last}"
    now = job.status()
    assert now.export_round is not None and now.export_round == now.last_checkpoint_round, (
        f"{name}: status.export round {now.export_round}, last checkpoint round {now.last_checkpoint_round}"
    )
    args = kube.kubectl("-n", NS, "get", "job", f"{name}-export")["spec"]["template"]["spec"]["containers"][0]["args"]
    location = f"s3://{object_store.BUCKET}/{name}"
    assert location in args and f"http://{object_store.NAME}:{object_store.PORT}" in args, (
        f"{name}-export runs ppu-export {args}, not on {location}"
    )
    run.progress.passed(
        f"{name}: every rank pod deleted at round {before}, resumed from S3, Succeeded at round {now.outer_round}; "
        f"the export Job read round {now.export_round} from {location}: {last.message}"
    )
    kube.kubectl("delete", "ppj", name, "--wait=true", json=False)
    kube.kubectl("delete", "pvc", MODEL_CLAIM, "--wait=true", json=False)
    kube.kubectl("delete", "secret", secret_name["metadata"]["name"], "--ignore-not-found", json=False)
    object_store.remove(NS)
    run.progress.phase("checkpoints in S3: every rank pod deleted, export from S3")
