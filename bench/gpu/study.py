#!/usr/bin/env python3
"""A first look at PPU 1/2 MLPs against Streaming DiLoCo at ~86 M parameters, on one CUDA GPU.

usage: bench/gpu/study.py BUILD_DIR DATA_DIR [--out DIR] [--device cuda] [--steps 400]
                          [--ranks 4] [--preset gpt2-124m] [--layers N] [--d-model N]
                          [--seq-len 512] [--batch 8] [--lr 6e-4] [--eval-every 50]

DATA_DIR is the CPU study's tokenised corpus (bench/study/corpus.sh --full: English prose from
Debian's documentation packages, vocabulary 2048, 6.16 M training tokens), carried to the GPU
machine beside the .debs. Both methods run the CPU study's shared setup (bench/study/study.yaml:
Nesterov outer step, lr 0.4, momentum 0.9, H = 20, two layers per streaming fragment, i.i.d.
sampling, no clipping, 3 % warm-up) on GPT-2 small's shape (12 layers, d 768, 12 heads) with
the corpus's vocabulary: 86.5 M parameters. K ranks share the GPU (Gloo through the host),
bf16, one seed, the same inner learning rate for both (no sweep: the GPU's minutes do not
allow one, and neither method gets one). --steps at K = 4, batch 8 x 512: 16 k tokens a step, so
the default 400 steps are 6.6 M tokens, about one pass over the corpus.

Writes OUT/study.md (final eval loss, perplexity, difference, tokens, device state per rank,
step time), OUT/study.json, OUT/study.png (eval loss against tokens) and each run's log and
summaries under OUT/<method>/; after each run and when SIGTERM arrives (gpu-run.sh's deadline:
ppu-launch is stopped, and stops its ranks). Exit 1 unless both runs finished. The CPU check of
the script itself (ctest study_gpu_script_on_cpu): --device cpu with a small
--layers/--d-model/--seq-len/--steps on the small corpus.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from run import load_module  # bench/gpu/run.py, beside this script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ppu import files, summary  # the repository's python/, above

STUDY_YAML = os.path.join(ROOT, "bench", "study", "study.yaml")

# The eval curve comes out of a ppu-launch log as the CPU study's report reads it (eval_losses).
STUDY_REPORT = load_module("study_report", os.path.join(ROOT, "bench", "study", "report.py"))
METHODS = [
    ("streaming-diloco", "Streaming DiLoCo", ["method=streaming-diloco"]),
    ("ppu-mlp-2", "PPU 1/2 MLPs", ["method=ppu", "slicing.mode=mlp", "slicing.slices=2"]),
]
CHILD = None  # the ppu-launch running now: stopped (it stops its ranks) when SIGTERM arrives


def run(build, data, a, method_sets, out_dir):
    """ppu-launch of one method; returns (seconds, [(step, eval loss)], rank 0's Summary)."""
    os.makedirs(out_dir, exist_ok=True)
    sets = [
        f"ranks={a.ranks}",
        f"data.path={data}",
        f"model.preset={a.preset}",
        f"model.vocab={a.vocab}",
        f"model.seq_len={a.seq_len}",
        f"train.device={a.device}",
        "train.dtype=bf16",
        f"train.steps={a.steps}",
        f"train.eval_every={a.eval_every}",
        "train.eval_batches=16",
        f"train.log_every={a.eval_every}",
        f"train.threads={a.threads}",
        f"inner.batch_size={a.batch}",
        f"inner.lr={a.lr}",
        f"inner.warmup_steps={max(1, a.steps * 3 // 100)}",
        *method_sets,
    ]
    if a.layers:
        sets.append(f"model.layers={a.layers}")
    if a.d_model:
        sets += [f"model.d_model={a.d_model}", f"model.heads={max(1, a.d_model // 64)}"]
    cmd = [os.path.join(build, "bin", "ppu-launch"), "--nproc", str(a.ranks), "--config", STUDY_YAML]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["--summary-dir", out_dir]
    log_path = os.path.join(out_dir, "run.log")
    global CHILD
    start = time.monotonic()
    with open(log_path, "w") as log:
        CHILD = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        rc = CHILD.wait()
    CHILD = None
    seconds = time.monotonic() - start
    if rc != 0:
        with open(log_path) as f:
            sys.exit(f"study: {' '.join(method_sets)} exited {rc}; last lines of {log_path}:\n" + f.read()[-3000:])
    s = summary.load(files.summary_file(out_dir, 0))
    with open(log_path) as f:
        evals = STUDY_REPORT.eval_losses(f)
    evals[a.steps] = s.eval_loss  # the final evaluation of θ, after the last step
    return seconds, sorted(evals.items()), s


def device_state_gb(s):
    """Weights, gradients and AdamW of one rank (θ and the outer momentum live in host memory)."""
    state = s.state_bytes
    return (state.weights + state.gradients + state.inner_optimizer) / 1e9


def peak_gb(s):
    """The CUDA caching allocator's peak on rank 0 (CUDA runs only)."""
    cuda = s.cuda_memory_bytes
    return "" if cuda is None else f"{cuda.peak / 1e9:.2f}"


def write_report(a, results, out, stopped=""):
    """study.md and study.json from the methods that finished (a row says which did not)."""
    # study.json: each run's rank-0 summary as ppu-launch wrote it
    saved = {key: r | {"summary": r["summary"].as_dict()} for key, r in results.items()}
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump({"args": vars(a), "results": saved, "stopped": stopped}, f, indent=1)
    base = results.get("streaming-diloco", {}).get("summary")
    params = next(iter(results.values()))["summary"].total_params / 1e6 if results else 0
    lines = [
        f"# PPU 1/2 MLPs against Streaming DiLoCo on {a.gpu}",
        "",
        (
            f"{params:.1f} M parameters ({a.preset}, vocabulary {a.vocab}, sequence {a.seq_len}), "
            f"K = {a.ranks} ranks sharing the device, bf16, {a.steps} steps of {a.batch} x {a.seq_len} tokens "
            f"per rank, inner lr {a.lr}, one seed; the CPU study's outer setup (bench/study/study.yaml)."
        ),
        "",
        (
            "| run | final eval loss of θ | − Streaming DiLoCo | eval ppl | tokens (all ranks) | "
            "training state / rank, GB | peak allocated, GB | median inner step, s | wall, s |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label, _ in METHODS:
        if key not in results:
            lines.append(f"| {label} | {f'not run ({stopped})' if stopped else 'not run yet'} | | | | | | | |")
            continue
        r = results[key]
        s = r["summary"]
        diff = "" if key == "streaming-diloco" or base is None else f"{s.eval_loss - base.eval_loss:+.4f}"
        lines.append(
            f"| {label} | {s.eval_loss:.4f} | {diff} | {s.eval_perplexity:.2f} | "
            f"{s.tokens * s.world_size / 1e6:.2f} M | {device_state_gb(s):.2f} | {peak_gb(s)} | "
            f"{s.inner_step_seconds_median:.4f} | {r['seconds']:.0f} |"
        )
    lines += [
        "",
        (
            "Training state: weights, gradients and AdamW of one rank (θ and the outer momentum are in host "
            "memory). One seed each: at 640 k parameters the CPU study's paired 95 % interval for 1/2 MLPs "
            "over three seeds was [-0.044, +0.067] nats (docs/BENCHMARKS.md), so one seed's difference "
            "of that size says nothing either way."
        ),
    ]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "study.md"), "w") as f:
        f.write(text)
    return text


def plot(a, results, path):
    try:
        import matplotlib
    except ImportError:
        print(f"study: no matplotlib in this Python: {path} not written")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    tokens_per_step = a.ranks * a.batch * a.seq_len
    for key, label, _ in METHODS:
        if key not in results:
            continue
        curve = results[key]["curve"]
        ax.plot([s * tokens_per_step / 1e6 for s, _ in curve], [v for _, v in curve], marker="o", ms=3, label=label)
    ax.set_xlabel("tokens, all ranks (M)")
    ax.set_ylabel("eval loss of θ (nats/token)")
    params = next(iter(results.values()))["summary"].total_params / 1e6
    ax.set_title(f"{params:.3g} M parameters, K = {a.ranks}, {a.gpu}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("data")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "gpu-study"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--preset", default="gpt2-124m")
    ap.add_argument("--layers", type=int, default=0, help="override the preset's layers (CPU check)")
    ap.add_argument("--d-model", type=int, default=0, help="override the preset's width, heads of 64 (CPU check)")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    data = os.path.abspath(a.data)
    if not os.path.isfile(os.path.join(data, "meta.json")):
        sys.exit(f"study: {data}/meta.json not found (DATA_DIR: bench/study/corpus.sh --full OUT, then OUT/data)")
    with open(os.path.join(data, "meta.json")) as f:
        a.vocab = json.load(f)["vocab"]
    a.gpu = a.device
    if a.device == "cuda":
        import torch

        a.gpu = torch.cuda.get_device_name()
    os.makedirs(a.out, exist_ok=True)

    def stop(signum, frame):
        raise TimeoutError(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    results, stopped = {}, ""
    try:
        for key, label, sets in METHODS:
            seconds, curve, s = run(a.build, data, a, sets, os.path.join(a.out, key))
            results[key] = {"seconds": seconds, "curve": curve, "summary": s}
            print(f"study: {label}: eval loss {s.eval_loss:.4f} after {seconds:.0f} s", flush=True)
            write_report(a, results, a.out)
    except TimeoutError as e:
        if CHILD and CHILD.poll() is None:
            CHILD.terminate()  # ppu-launch stops its ranks
            CHILD.wait()
        stopped = f"stopped by {e}"
        print(f"study: {stopped}; the report has the runs that finished", flush=True)
    print(write_report(a, results, a.out, stopped))
    if results:
        plot(a, results, os.path.join(a.out, "study.png"))
    return 0 if len(results) == len(METHODS) else 1


if __name__ == "__main__":
    sys.exit(main())
