#!/usr/bin/python3
"""ppu-export end to end: train, export the last checkpoint, evaluate it in PyTorch.

usage: export_test.py BUILD_DIR SOURCE_DIR

For PPU (1/2 MLPs + heads, streaming, K = 4) and DDP (K = 2): ppu-launch trains the tiny model
on a dataset directory to a step that ends a round, so the newest checkpoint holds the final
global θ (after outer.final_sync); ppu-export --format ppu writes it as safetensors + config.json; and
scripts/ppu_export_eval.py, an independent PyTorch implementation of the architecture (Debian's
python3-torch), must reproduce the summary's eval_loss on the same validation tokens within
1e-4. Then the refusals: a corrupt newest checkpoint is skipped (the previous round is
exported, and --round naming the corrupt one exits 4 saying why), a missing directory exits 4
naming it, a missing flag exits 2.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from training_run import launch_command  # the run both export tests start from

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from ppu import files, summary  # a run's summaries; the names of a checkpoint on disk
from ppu.exit_codes import ExitCode
from ppu_export_eval import Evaluation  # what ppu_export_eval.py --json prints

BIN, SRC = sys.argv[1], sys.argv[2]
LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
EXPORT = os.path.join(BIN, "bin", "ppu-export")
DATA = os.path.join(BIN, "bin", "ppu-data")
EVAL = os.path.join(SRC, "scripts", "ppu_export_eval.py")
TINY = os.path.join(SRC, "configs", "tiny.yaml")
EVAL_BATCHES, BATCH = 6, 4
# |PyTorch's loss − the summary's|, a documented margin: the same fp32 model evaluated by two
# implementations (ppu-train with train.threads = 1, PyTorch with its default thread count and
# its own op composition) differs only in summation order, about √n·2^-24 relative per sum of n
# ≤ 256 terms and far less after the mean over 6·4·64 = 1536 tokens. Observed 1.0e-7 and 2.2e-8
# (docs/RUNTIME.md), 1000× below 1e-4; the kernels a CPU picks only change which roundings happen.
EXPORT_LOSS_ATOL = 1e-4
# Round 2's parameters must evaluate differently from round 3's by far more than EXPORT_LOSS_ATOL,
# or that comparison would not notice wrong parameters: 1e-3 is 10× EXPORT_LOSS_ATOL, and 10 more
# steps at lr 3e-3 this early in training move the eval loss by much more than that.
OTHER_ROUND_MIN = 1e-3


def read_json(path):
    with open(path) as f:
        return json.load(f)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, **kw)


def train_and_export(work, name, nproc, sets):
    ckpt, summaries, out = (os.path.join(work, name, d) for d in ("ckpt", "summaries", "export"))
    r = run(launch_command(LAUNCH, TINY, nproc, DATASET, ckpt, summaries, EVAL_BATCHES, BATCH, sets))
    if r.returncode != 0:
        fail(f"{name}: training failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    want = summary.load(files.summary_file(summaries, 0)).eval_loss
    e = run([EXPORT, "--checkpoint", ckpt, "--out", out, "--format", "ppu"])
    if e.returncode != 0:
        fail(f"{name}: ppu-export exited {e.returncode}:\n{e.stdout}{e.stderr}")
    config = read_json(os.path.join(out, "config.json"))
    if config["source"]["round"] != 3:
        fail(f"{name}: exported round {config['source']['round']}, expected the last one, 3")
    got = evaluate(out)
    print(f"{name}: summary eval_loss {want:.7f}, PyTorch on the export {got:.7f}, |diff| {abs(got - want):.2e}")
    if abs(got - want) > EXPORT_LOSS_ATOL:
        fail(f"{name}: the export evaluates to {got} in PyTorch, ppu-train reported {want}")
    return ckpt, out, want


def evaluate(export_dir):
    r = run(
        [
            "/usr/bin/python3",
            EVAL,
            export_dir,
            DATASET,
            "--batches",
            str(EVAL_BATCHES),
            "--batch-size",
            str(BATCH),
            "--json",
        ]
    )
    if r.returncode != 0:
        fail(f"ppu_export_eval.py failed on {export_dir}:\n{r.stdout}{r.stderr}")
    return Evaluation(**json.loads(r.stdout)).eval_loss


work = tempfile.mkdtemp(prefix="ppu-export-")
DATASET = os.path.join(work, "data")
r = run([DATA, "synthetic", "--out", DATASET, "--vocab", "256", "--train-tokens", "200000", "--val-tokens", "20000"])
if r.returncode != 0:
    fail("ppu-data synthetic failed:\n" + r.stdout + r.stderr)

ckpt, out, ppu_loss = train_and_export(
    work, "ppu", 4, ["method=ppu", "slicing.mode=mlp+heads", "slicing.slices=2", "outer.layers_per_fragment=1"]
)
train_and_export(work, "ddp", 2, ["method=ddp"])

# The export names every parameter of the layout once, in fp32.
with open(os.path.join(out, "model.safetensors"), "rb") as f:
    header_len = int.from_bytes(f.read(8), "little")
    header = json.loads(f.read(header_len))
names = sorted(k for k in header if k != "__metadata__")
layers = read_json(os.path.join(out, "config.json"))["architecture"]["layers"]
if (
    len(names) != 3 + 10 * layers
    or any(header[n]["dtype"] != "F32" for n in names)
    or "blocks.0.mlp.up.weight" not in names
):
    fail(f"unexpected tensors in the export: {names}")

# A corrupt newest checkpoint is never exported: the previous round is, and asking for the
# corrupt one by number fails naming the fault.
newest = os.path.join(ckpt, files.round_dir(3), files.GLOBAL)
with open(newest, "r+b") as f:
    f.seek(os.path.getsize(newest) // 2)
    byte = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([byte[0] ^ 0xFF]))
older = os.path.join(work, "older")
e = run([EXPORT, "--checkpoint", ckpt, "--out", older, "--format", "ppu"])
if e.returncode != 0 or read_json(os.path.join(older, "config.json"))["source"]["round"] != 2:
    fail(f"with round 3 corrupt, ppu-export should export round 2:\n{e.stdout}{e.stderr}")
# The comparison above can tell parameters apart: round 2's θ evaluates differently.
if abs(evaluate(older) - ppu_loss) < OTHER_ROUND_MIN:
    fail("round 2's export evaluates like round 3's: the 1e-4 comparison would not notice wrong parameters")
e = run([EXPORT, "--checkpoint", ckpt, "--round", "3", "--out", os.path.join(work, "bad")])
if e.returncode != ExitCode.DATA_ERROR or f"{files.round_dir(3)}: {files.GLOBAL} fails its checksum" not in e.stderr:
    fail(
        f"--round 3 (corrupt) should exit {ExitCode.DATA_ERROR} naming the checksum failure, got {e.returncode}:\n"
        f"{e.stderr}"
    )
if os.path.exists(os.path.join(work, "bad", "model.safetensors")):
    fail("a refused export left a model file behind")
# A newer round without a manifest is a save that never finished: skipped as the trainer skips
# it (the newest finished round is exported), not listed among rejected checkpoints.
unfinished = os.path.join(ckpt, files.round_dir(4))
os.makedirs(unfinished)
with open(os.path.join(unfinished, files.rank_part(0)), "wb") as f:
    f.write(b"partial")
e = run([EXPORT, "--checkpoint", ckpt, "--out", os.path.join(work, "skip"), "--format", "ppu"])
if e.returncode != 0 or read_json(os.path.join(work, "skip", "config.json"))["source"]["round"] != 2:
    fail(f"with round 4 unfinished and round 3 corrupt, ppu-export should export round 2:\n{e.stdout}{e.stderr}")
e = run([EXPORT, "--checkpoint", ckpt, "--round", "4", "--out", os.path.join(work, "bad4")])
if e.returncode != ExitCode.DATA_ERROR or "whose save finished" not in e.stderr or "no readable manifest" in e.stderr:
    fail(
        f"--round 4 (unfinished) should exit {ExitCode.DATA_ERROR} saying no finished save, got {e.returncode}:\n"
        f"{e.stderr}"
    )
missing = os.path.join(work, "absent")
e = run([EXPORT, "--checkpoint", missing, "--out", os.path.join(work, "x")])
if e.returncode != ExitCode.DATA_ERROR or missing not in e.stderr:
    fail(f"a missing checkpoint directory should exit {ExitCode.DATA_ERROR} naming it, got {e.returncode}:\n{e.stderr}")
e = run([EXPORT, "--checkpoint", ckpt])
if e.returncode != ExitCode.CONFIG_ERROR or "--out" not in e.stdout + e.stderr:
    fail(
        f"a missing --out should exit {ExitCode.CONFIG_ERROR} naming the flag, got {e.returncode}:\n"
        f"{e.stdout}{e.stderr}"
    )

shutil.rmtree(work)
print("PASS export")
