#!/usr/bin/env python3
"""Table 1's memory and the inner step's speed of the 1.3 B model, measured on one CUDA GPU.

usage: bench/gpu/run.py BUILD_DIR [--out DIR] [--configs mlp-heads-4 ...] [--steps 6] [--batch 16]
                        [--seq-len 1024] [--reference-steps 6] [--skip-reference] [--speed-only]
                        [--profile]

In one invocation, on one GPU, one process at a time (so that every timing has the GPU alone):
  1. the GPU's measured bf16 GEMM rate (8192^3 products through PyTorch): the MFU denominator
     besides the datasheet's 989 TFLOP/s;
  2. per Table 1 configuration (configs/paper/*.yaml): ppu-train solo as rank 0 of the
     config's K = 32 (its slice plan, fragments and outer state) on cuda in bf16 with
     activation recomputation, the paper's micro-batch (16 x 1024), synthetic tokens of the
     model's vocabulary, --steps inner steps, train.deterministic=false (PyTorch's defaults, as
     the reference runs; one extra row measures what the default true costs). From its summary: the peak allocated CUDA memory
     (caching allocator), the training state by component, the median inner step; from
     ppu-plan: the §3.1 device memory model and the step's FLOPs (Appendix C);
  3. Streaming DiLoCo's full-backward step once more without recomputation: the MFU row; and
     again with loss chunks of LOSS_CHUNK_ROW tokens (train.loss_chunk_tokens) instead of the
     default 64 MiB of fp32 logits;
  4. the PyTorch reference of the same model and step (bench/pytorch_peer/reference_step.py
     on cuda, bf16, fp32 masters, fused AdamW), for full training and for 1/4 MLPs + 1/4 heads,
     with and without recomputation as the rows above: tokens/s of ours against it;
  5. --profile: Streaming DiLoCo's step, ours (train.profile_dir) and the reference's
     (--profile), traced by the PyTorch profiler for 2 steps after warm-up, with and without
     recomputation: OUT/profile.md (bench/gpu/trace_summary.py: device busy and idle time, kernel
     time by category, top kernels) and the gzipped traces in OUT/traces/.
Writes OUT/results.json, OUT/table.md and OUT/table1.png, and prints the tables.
"""

import argparse
import glob
import gzip
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ppu import summary  # the repository's python/, above

# A ppu-train row of results.json keeps some of its rank summary's fields as they are, under the
# summary's names: FIELD.x is the contract's name "x" (python/ppu/contract.json; a name it does not
# have is an AttributeError). The objects among them stay Records, read by attribute (.peak).
FIELD = types.SimpleNamespace(**{name: name for name in summary.FIELDS})
GB = 1e9
DATASHEET_BF16_TFLOPS = 989.4  # H100/H200 SXM dense bf16, the figure llm.c's MFU divides by
CONFIGS = ["streaming-diloco", "mlp-2", "mlp-4", "mlp-8", "mlp-16", "mlp-heads-2", "mlp-heads-4"]
LABELS = {
    "streaming-diloco": "Streaming DiLoCo",
    "mlp-2": "1/2 MLPs",
    "mlp-4": "1/4 MLPs",
    "mlp-8": "1/8 MLPs",
    "mlp-16": "1/16 MLPs",
    "mlp-heads-2": "1/2 MLPs + 1/2 heads",
    "mlp-heads-4": "1/4 MLPs + 1/4 heads",
}
CHILD = None  # the process being measured, killed if the deadline's SIGTERM arrives
# The reference's slicing for a config: (mode, slices).
REFERENCE = {"streaming-diloco": ("none", 1), "mlp-heads-4": ("mlp+heads", 4)}


def load_module(name, path):
    """A bench script of this tree as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The CPU memory bench keeps Table 1's figures and the solo ppu-train command.
PAPER_MEMORY = load_module("paper_memory", os.path.join(ROOT, "bench", "paper_memory", "run.py"))
TRACE_SUMMARY = load_module("trace_summary", os.path.join(HERE, "trace_summary.py"))


def table1_gb():
    """Table 1's "Memory, GB" column."""
    return PAPER_MEMORY.TABLE1_GB


def gemm_tflops(reps=10, n=8192):
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize()
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e12, torch.cuda.get_device_name()


def ppu_plan(build, config, sets):
    cmd = [os.path.join(build, "bin", "ppu-plan"), "--config", config, "--json"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"ppu-plan {config}: {out.stderr}")
    return json.loads(out.stdout)


def run_measured(cmd, log_path, env=None):
    """Runs cmd with stdout/stderr in log_path; returns its exit code (CHILD while it runs)."""
    global CHILD
    with open(log_path, "w") as log:
        CHILD = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        rc = CHILD.wait()
    CHILD = None
    return rc


# The speed row that tries larger loss chunks than the default 16 Mi / vocab tokens (524 at
# 32000): fewer passes over the fp32 dL/dW, ~0.3 GB more peak memory (docs/GPU.md's lead).
LOSS_CHUNK_ROW = 2048

# A profiled run: PROFILED_AFTER untraced steps (ours: train.profile_first_step; the
# reference: --warmup), then PROFILED_STEPS traced ones, and no more.
PROFILED_AFTER, PROFILED_STEPS = 3, 2


def run_train(build, name, a, work, recompute, deterministic, profile_dir=None, loss_chunk=0):
    config = os.path.join(ROOT, "configs", "paper", name + ".yaml")
    tag = name + ("" if recompute else "-no-recompute") + ("" if deterministic else "-nondeterministic")
    if profile_dir:
        tag += "-profiled"
    if loss_chunk:
        tag += f"-loss-chunk-{loss_chunk}"
    sets = [
        f"train.deterministic={'true' if deterministic else 'false'}",
        "train.device=cuda",
        "train.dtype=bf16",
        f"train.recompute={'true' if recompute else 'false'}",
        f"train.steps={PROFILED_AFTER + PROFILED_STEPS if profile_dir else a.steps}",
        "train.eval_every=0",
        "train.eval_batches=1",
        "train.log_every=1",
        f"inner.batch_size={a.batch}",
        f"model.seq_len={a.seq_len}",
        "inner.warmup_steps=1",
        "data.source=synthetic",
        "data.path=",
        "data.synthetic_train_tokens=2000000",
        "data.synthetic_val_tokens=40000",
        "checkpoint.dir=",
        "metrics.port=0",
    ]
    if loss_chunk:
        sets.append(f"train.loss_chunk_tokens={loss_chunk}")
    if profile_dir:
        sets += [
            f"train.profile_dir={profile_dir}",
            f"train.profile_first_step={PROFILED_AFTER}",
            f"train.profile_steps={PROFILED_STEPS}",
        ]
    summary_path = os.path.join(work, tag + ".json")
    cmd, env = PAPER_MEMORY.solo_train_command(build, config, summary_path, sets)
    start = time.time()
    rc = run_measured(cmd, os.path.join(work, tag + ".log"), env)
    row = {
        "config": name,
        "recompute": recompute,
        "deterministic": deterministic,
        "loss_chunk_tokens": loss_chunk,
        "rc": rc,
        "seconds": time.time() - start,
    }
    if rc != 0 or not os.path.exists(summary_path):
        with open(os.path.join(work, tag + ".log")) as f:
            row["error"] = f.read()[-1500:]
        print(f"{tag}: ppu-train exited {rc}\n{row['error']}", file=sys.stderr, flush=True)
        return row
    s = summary.load(summary_path)
    plan = ppu_plan(build, config, [f"inner.batch_size={a.batch}", f"model.seq_len={a.seq_len}"])
    row.update(
        {
            FIELD.device: s.device,
            FIELD.cuda_memory_bytes: s.cuda_memory_bytes,
            FIELD.state_bytes: s.state_bytes,
            FIELD.trainable_params: s.trainable_params,
            FIELD.total_params: s.total_params,
            "step_seconds_median": s.inner_step_seconds_median,
            "phases_median": s.inner_step_phases_median,
            FIELD.final_loss: s.final_loss,
            "plan_device_bytes": plan["memory_bytes"],
            "flops_per_step": plan["flops_per_step"],
            "flops_ratio": plan["flops_ratio"],
            "tokens_per_step": a.batch * a.seq_len,
        }
    )
    peak = s.cuda_memory_bytes.peak if s.cuda_memory_bytes else 0
    print(
        f"{tag}: peak {peak / GB:.2f} GB, state {s.state_bytes.total / GB:.2f} GB, "
        f"step {row['step_seconds_median']:.3f} s, loss {s.final_loss:.3f}",
        flush=True,
    )
    return row


def run_reference(name, a, recompute, work, profile=None):
    mode, slices = REFERENCE[name]
    cmd = [
        sys.executable,
        os.path.join(ROOT, "bench", "pytorch_peer", "reference_step.py"),
        "--device=cuda",
        "--dtype=bf16",
        "--grad-clip=0",
        "--layers=24",
        "--d-model=2048",
        "--heads=16",
        "--vocab=32000",
        f"--seq-len={a.seq_len}",
        f"--batch={a.batch}",
        f"--mode={mode}",
        f"--slices={slices}",
        f"--steps={PROFILED_STEPS if profile else a.reference_steps}",
        f"--warmup={PROFILED_AFTER if profile else 2}",
    ] + (["--recompute"] if recompute else [])
    tag = f"reference-{name}" + ("" if recompute else "-no-recompute")
    if profile:
        cmd += [f"--profile={profile}", f"--profile-steps={PROFILED_STEPS}"]
        tag += "-profiled"
    log_path = os.path.join(work, tag + ".log")
    rc = run_measured(cmd, log_path)
    with open(log_path) as f:
        text = f.read()
    if rc != 0:
        print(f"{tag}: exited {rc}\n{text[-1500:]}", file=sys.stderr, flush=True)
        return {"config": name, "recompute": recompute, "rc": rc, "error": text[-1500:]}
    r = json.loads([line for line in text.splitlines() if line.startswith("{")][-1])
    r.update({"config": name, "recompute": recompute, "rc": 0})
    print(f"{tag}: step {r['median_step_seconds']:.3f} s", flush=True)
    return r


def profile_pair(a, work, out, recompute):
    """Streaming DiLoCo's step traced, ours and the reference's; the report in OUT/profile.md."""
    tag = "recompute" if recompute else "no-recompute"
    ours_dir = os.path.join(work, f"profile-ours-{tag}")
    row = run_train(a.build, "streaming-diloco", a, work, recompute, False, profile_dir=ours_dir)
    ref_trace = os.path.join(work, f"profile-reference-{tag}.json")
    ref = run_reference("streaming-diloco", a, recompute, work, profile=ref_trace)
    traces = {}
    ours = sorted(glob.glob(os.path.join(ours_dir, "rank0-*.json")))
    if row["rc"] == 0 and ours:
        traces["ours"] = ours[0]
    if ref.get("rc") == 0 and os.path.exists(ref_trace):
        traces["PyTorch reference"] = ref_trace
    if not traces:
        return {"recompute": recompute, "error": "no trace written"}
    try:
        summaries = {label: TRACE_SUMMARY.summarise(path, PROFILED_STEPS) for label, path in traces.items()}
    except ValueError as e:
        print(f"profile, {tag}: {e}", flush=True)
        return {"recompute": recompute, "error": str(e)}
    text = f"### Streaming DiLoCo, {tag}, {PROFILED_STEPS} steps traced\n\n" + TRACE_SUMMARY.report(summaries, 15)
    with open(os.path.join(out, "profile.md"), "a") as f:
        f.write(text + "\n")
    print(text, flush=True)
    os.makedirs(os.path.join(out, "traces"), exist_ok=True)
    for label, path in traces.items():
        name = ("ours" if label == "ours" else "reference") + f"-{tag}.json.gz"
        with open(path, "rb") as src, gzip.open(os.path.join(out, "traces", name), "wb") as dst:
            dst.write(src.read())
    return {"recompute": recompute, "summaries": summaries}


def tables(res):
    t1 = res["table1_gb"]
    rows = [r for r in res["ppu_train"] if r["recompute"] and not r["deterministic"] and not r.get("loss_chunk_tokens")]
    rows.sort(key=lambda r: CONFIGS.index(r["config"]))
    full = next((r for r in rows if r["config"] == "streaming-diloco" and r["rc"] == 0), None)
    out = [
        (
            f"GPU: {res['gpu']}; bf16 GEMM {res['gemm_tflops']:.0f} TFLOP/s measured (8192^3); "
            f"batch {res['batch']} x {res['seq_len']}, bf16, recomputation, {res['steps']} steps per row"
        ),
        "",
        (
            "| config | trainable / total (B) | peak allocated (GB) | state: weights + grads + AdamW (GB) | "
            "ppu-plan §3.1 device (GB) | Table 1 (GB) | step (s) | step / full | Appendix C FLOPs ratio |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["rc"] != 0:
            out.append(f"| {LABELS[r['config']]} | failed (rc {r['rc']}) | | | | {t1.get(r['config'])} | | | |")
            continue
        sb = r[FIELD.state_bytes]
        ratio = r["step_seconds_median"] / full["step_seconds_median"] if full else float("nan")
        out.append(
            f"| {LABELS[r['config']]} | {r[FIELD.trainable_params] / 1e9:.3f} / {r[FIELD.total_params] / 1e9:.3f} | "
            f"{r[FIELD.cuda_memory_bytes].peak / GB:.2f} | "
            f"{sb.weights / GB:.2f} + {sb.gradients / GB:.2f} + {sb.inner_optimizer / GB:.2f} | "
            f"{r['plan_device_bytes']['total'] / GB:.2f} | {t1.get(r['config'])} | "
            f"{r['step_seconds_median']:.3f} | {ratio:.3f} | {r['flops_ratio']:.3f} |"
        )
    out += [
        "",
        (
            "| step | ours (s) | tokens/s ours | PyTorch reference (s) | tokens/s reference | ours / reference "
            "| MFU (model FLOPs / datasheet) | MFU (/ measured GEMM) | peak GB ours / reference |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["ppu_train"]:
        if r["rc"] != 0 or r["config"] not in REFERENCE:
            continue
        ref = next(
            (x for x in res["reference"] if x["config"] == r["config"] and x["recompute"] == r["recompute"]),
            None,
        )
        if r["deterministic"]:
            ref = None  # the reference runs PyTorch's (nondeterministic) defaults, as the other rows do
        tokens = r["tokens_per_step"]
        model_flops = r["flops_per_step"]["executed"]  # Appendix C: forward + (partial) backward, no recompute
        mfu = model_flops / r["step_seconds_median"] / 1e12
        ref_ok = ref is not None and ref.get("rc") == 0
        chunks = r.get("loss_chunk_tokens")
        chunk_label = f", loss chunks of {chunks} tokens" if chunks else ""
        out.append(
            f"| {LABELS[r['config']]}, {'recompute' if r['recompute'] else 'no recompute'}"
            f"{', train.deterministic=true' if r['deterministic'] else ''}{chunk_label} | "
            f"{r['step_seconds_median']:.3f} | {tokens / r['step_seconds_median']:,.0f} | "
            + (
                f"{ref['median_step_seconds']:.3f} | {tokens / ref['median_step_seconds']:,.0f} | "
                f"{ref['median_step_seconds'] / r['step_seconds_median']:.2f}x | "
                if ref_ok
                else "— | — | — | "
            )
            + f"{100 * mfu / DATASHEET_BF16_TFLOPS:.1f} % | {100 * mfu / res['gemm_tflops']:.1f} % | "
            + f"{r[FIELD.cuda_memory_bytes].peak / GB:.2f} / "
            + (f"{ref.get('cuda_peak_allocated_bytes', 0) / GB:.2f} |" if ref_ok else "— |")
        )
    return "\n".join(out) + "\n"


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in res["ppu_train"] if r["recompute"] and not r["deterministic"] and r["rc"] == 0]
    rows.sort(key=lambda r: CONFIGS.index(r["config"]))
    if not rows:
        return
    names = [LABELS[r["config"]] for r in rows]
    x = range(len(rows))
    fig, (m, s) = plt.subplots(1, 2, figsize=(13, 4.8))
    w = 0.27
    m.bar([i - w for i in x], [r[FIELD.cuda_memory_bytes].peak / GB for r in rows], w, label="measured peak allocated")
    m.bar(list(x), [r["plan_device_bytes"]["total"] / GB for r in rows], w, label="ppu-plan §3.1 device model")
    m.bar([i + w for i in x], [res["table1_gb"].get(r["config"]) or 0 for r in rows], w, label="paper, Table 1")
    m.set_xticks(list(x), names, rotation=30, ha="right")
    m.set_ylabel("GB per rank (10^9 bytes)")
    m.set_title(f"1.3 B model, bf16, {res['batch']} x {res['seq_len']}, recompute")
    m.legend(fontsize=8)
    full = next((r for r in rows if r["config"] == "streaming-diloco"), None)
    if full:
        s.bar(
            [i - 0.2 for i in x],
            [r["step_seconds_median"] / full["step_seconds_median"] for r in rows],
            0.4,
            label="measured inner step / full backward",
        )
        s.bar([i + 0.2 for i in x], [r["flops_ratio"] for r in rows], 0.4, label="Appendix C FLOPs ratio")
        s.set_xticks(list(x), names, rotation=30, ha="right")
        s.set_ylim(0, 1.1)
        s.set_title("Inner-step time relative to full backward")
        s.legend(fontsize=8, loc="lower left")
    fig.suptitle(res["gpu"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "gpu"))
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--reference-steps", type=int, default=6)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument(
        "--speed-only", action="store_true", help="only the rows the speed table needs (no other Table 1 rows)"
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="trace Streaming DiLoCo's step, ours and the reference's (OUT/profile.md)",
    )
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.out, "runs")
    os.makedirs(work, exist_ok=True)
    tflops, gpu = gemm_tflops()
    print(f"{gpu}: bf16 GEMM {tflops:.0f} TFLOP/s", flush=True)
    res = {
        "gpu": gpu,
        "gemm_tflops": tflops,
        "batch": a.batch,
        "seq_len": a.seq_len,
        "steps": a.steps,
        "table1_gb": table1_gb(),
        "ppu_train": [],
        "reference": [],
        "profiles": [],
    }

    def save():
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(res, f, indent=1, default=lambda record: record.as_dict())  # the summaries' Records

    # Most telling first, so that a deadline (SIGTERM) cuts the least: the headline pair, their
    # references, the MFU row, then the other Table 1 rows.
    jobs = []
    for name in [c for c in ("streaming-diloco", "mlp-heads-4") if c in a.configs]:
        jobs.append(("ours", name, True, False))
        if not a.skip_reference:
            jobs.append(("reference", name, True, False))
    if "streaming-diloco" in a.configs:
        jobs.append(("ours", "streaming-diloco", False, False))
        if not a.skip_reference:
            jobs.append(("reference", "streaming-diloco", False, False))
        jobs.append(("ours-loss-chunk", "streaming-diloco", False, False))  # the dL/dW lead (docs/GPU.md)
        if not a.speed_only:
            jobs.append(("ours", "streaming-diloco", False, True))  # what train.deterministic costs
    if a.profile:  # after the speed rows (traced steps are slower), before the other Table 1 rows
        jobs += [("profile", "streaming-diloco", True, False), ("profile", "streaming-diloco", False, False)]
    if not a.speed_only:
        jobs += [("ours", name, True, False) for name in a.configs if name not in ("streaming-diloco", "mlp-heads-4")]

    def stop(signum, frame):
        raise TimeoutError(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    try:
        for kind, name, recompute, deterministic in jobs:
            if kind == "ours":
                res["ppu_train"].append(run_train(a.build, name, a, work, recompute, deterministic))
            elif kind == "ours-loss-chunk":
                res["ppu_train"].append(
                    run_train(a.build, name, a, work, recompute, deterministic, loss_chunk=LOSS_CHUNK_ROW)
                )
            elif kind == "profile":
                res["profiles"].append(profile_pair(a, work, a.out, recompute))
            else:
                res["reference"].append(run_reference(name, a, recompute, work))
            save()
    except TimeoutError as e:
        if CHILD and CHILD.poll() is None:
            CHILD.kill()
        res["stopped"] = f"{e} before every row ran"
        print(f"stopped by {e}: tables from the rows that finished", flush=True)
        save()
    text = tables(res)
    print(text)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text)
    plot(res, os.path.join(a.out, "table1.png"))
    failed = [r for r in res["ppu_train"] if r["rc"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
