"""Phases 6 and 7 of the one-node program: the shipped samples, applied as shipped, train and export.

Contract: phase 6 applies manifests/samples/cpu-tiny.yaml in namespace default (its image name the
alias the `operator` fixture loaded): Succeeded within 600 s at a perplexity below 64, and, read
back 20 s later, its final status (ResultReported, round, perplexity, checkpoint round) is what
the same training section ends at when the image's ppu-launch runs it here; the job is then
deleted. Phase 7 applies manifests/samples/cpu-tiny-export.yaml: Succeeded, condition Exported
ModelExported (also in column EXPORT), status.export at path model and the last checkpoint round;
deleting the PPUJob takes its export Job with it, and a pod mounting the claim afterwards reads a
Hugging Face GPT-NeoX model there. The reader pod and the claim are deleted at the end.
"""

import json
import shutil
import time

from ppu import files as ppu_files
from ppu import summary

from .. import kube, manifests
from ..band import in_image
from ..ppujob import Jobs
from ..run import Run
from ..waiting import wait_at_most
from .checks import same


def test_6_sample_as_shipped(run: Run, jobs: Jobs) -> None:
    """The sample, no edits, the default namespace: it learns, and its final status is the run's result."""
    kube.kubectl("apply", "-f", str(manifests.CPU_TINY), json=False)
    sample = jobs("cpu-tiny", "default")
    sample.wait_phase("Succeeded", 600)
    run.progress.say(
        f"samples/cpu-tiny.yaml as shipped ({manifests.sample_image()}): {kube.table_line('ppj', 'cpu-tiny')}"
    )
    shown = sample.status().perplexity
    try:
        learned = 0 < float(shown or "") < 64
    except ValueError:
        learned = False
    # Uniform guessing over the tiny preset's 256 tokens is perplexity 256.
    assert learned, f"cpu-tiny sample ends at perplexity '{shown}' (>= 64: it did not learn)"
    # Its pods are gone (cleanPodPolicy: All): its final status, read back a while after completion,
    # must be what the same training section run here with ppu-launch (checkpoints on, as the
    # operator sets them) ends at.
    time.sleep(20)
    now = sample.status()
    reported = now.condition_status("ResultReported")
    assert reported == "True", f"cpu-tiny: condition ResultReported is '{reported or ''}', not True"
    local = run.cluster.state_dir / "cpu-tiny-local"
    shutil.rmtree(local, ignore_errors=True)
    local.mkdir(parents=True)
    (local / "training.yaml").write_text(manifests.sample_training(ranks=4))
    # The image's ppu-launch: the pods' binaries and kernel path, so the comparison is exact.
    launch = ["ppu-launch", "--nproc", "4", "--config", str(local / "training.yaml")]
    launch += ["--set", f"checkpoint.dir={local / 'ckpt'}", "--summary-dir", str(local)]
    log = local / "run.log"
    if in_image(run.image, local, *launch, log=log) != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-3:])
        raise AssertionError(f"the local run of cpu-tiny's training section failed: {tail}")
    result = summary.load(ppu_files.summary_file(local, 0))
    local_ppl = f"{float(result.eval_perplexity):.3f}"
    assert same(now.outer_round, result.outer_rounds), (
        f"cpu-tiny: status.outerRound '{now.outer_round}', the local run ends at round {result.outer_rounds}"
    )
    assert same(now.perplexity, local_ppl), (
        f"cpu-tiny: status.perplexity '{now.perplexity}', the local run ends at {local_ppl}"
    )
    assert same(now.last_checkpoint_round, result.last_checkpoint_round), (
        f"cpu-tiny: status.lastCheckpointRound '{now.last_checkpoint_round}', "
        f"the local run's last is {result.last_checkpoint_round}"
    )
    run.progress.say(
        f"cpu-tiny's final status is the run's result: round {now.outer_round}, perplexity {now.perplexity}, "
        f"checkpoint round {now.last_checkpoint_round}, as ppu-launch here (parameter checksum in the cluster "
        f"{now.parameter_checksum}, here {result.param_checksum})"
    )
    kube.kubectl("delete", "-f", str(manifests.CPU_TINY), "--wait=true", json=False)
    run.progress.phase("sample as shipped")


def test_7_export_sample_model_on_volume(run: Run, jobs: Jobs) -> None:
    """The trained model leaves as a Hugging Face directory on the claim, which outlives the PPUJob."""
    job, claim = manifests.export_sample_names()
    kube.kubectl("apply", "-f", str(manifests.CPU_TINY_EXPORT), json=False)
    sample = jobs(job, "default")
    sample.wait_phase("Succeeded", 600)

    def exported():
        return sample.status().condition("Exported")

    last = wait_at_most(exported, 300, until=lambda c: c is not None and c.reason in ("ModelExported", "ExportFailed"))
    reason = last.reason if last else ""
    assert reason == "ModelExported", f"{job}: condition Exported is '{reason or ''}': {last.message if last else ''}"
    assert "ModelExported" in kube.table_line("ppj", job), f"{job}: column EXPORT does not say ModelExported"
    now = sample.status()
    assert (
        now.export_path == "model" and now.export_round is not None and now.export_round == now.last_checkpoint_round
    ), (
        f"{job}: status.export path '{now.export_path}' round '{now.export_round}' "
        f"(want model, the last checkpoint round '{now.last_checkpoint_round}')"
    )
    run.progress.say(f"{job} exported: {last.message}")
    # Deleting the job takes its export Job with it (garbage collection), never the model on the claim.
    kube.kubectl("delete", "ppj", job, "--wait=true", json=False)
    export_job = f"{job}-export"
    wait_at_most(lambda: not kube.exists("job", export_job), 60, interval_s=1)
    assert not kube.exists("job", export_job), f"Job {export_job} outlived its PPUJob"
    # A pod that mounts the claim read-only, as a model server would, under the restricted profile.
    kube.apply(manifests.model_reader_pod(manifests.sample_image(), now.export_path, claim))

    def reader_phase() -> str:
        return kube.kubectl("get", "pod", "model-reader").get("status", {}).get("phase", "")

    phase = wait_at_most(reader_phase, 120, until=lambda p: p in ("Succeeded", "Failed"))
    listing = kube.logs("default", "model-reader", merge_stderr=True)
    assert phase == "Succeeded", f"the model reader pod ended '{phase}': {listing}"
    files, _, config = listing.partition("----\n")
    names = set(files.split())
    try:
        parsed = json.loads(config)
    except ValueError:
        parsed = None
    model_type = parsed.get("model_type") if isinstance(parsed, dict) else None
    holds_model = "config.json" in names and bool({"model.safetensors", "model.safetensors.index.json"} & names)
    assert holds_model and model_type == "gpt_neox", (
        f"claim {claim} holds no Hugging Face GPT-NeoX model under {now.export_path}/: {listing}"
    )
    listed = files.replace("\n", " ")
    run.progress.say(f"a pod mounting claim {claim} after the PPUJob is gone reads {now.export_path}/: {listed}")
    kube.kubectl("delete", "pod", "model-reader", "--wait=true", json=False)
    kube.kubectl("delete", "pvc", claim, "--wait=true", json=False)
    run.progress.phase("export sample: the model on the volume")
