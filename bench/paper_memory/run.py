#!/usr/bin/env python3
"""Table 1's memory, measured: one inner step of the real 1.3 B model per paper config, on CPU.

usage: run.py BUILD_DIR [--configs mlp-4 ...] [--seq-len 128] [--with-outer-step] [--host-state-dir DIR] [--out DIR]

For each configs/paper/*.yaml of Table 1 (opt-in: it needs ~15 GB of RAM and a few minutes per
config), ppu-train runs solo as rank 0 of the config's K = 32 (the rank's own slice plan,
streaming fragments and outer state) for one inner step of 1 x SEQ tokens in the config's
dtype (bf16) with activation recomputation, on a synthetic corpus with the model's vocabulary.
The outer momentum is allocated at a fragment's first sync, which one step does not reach at
the config's H: it is measured as 0 unless --with-outer-step sets H = 1, so that every fragment
takes its outer step once (that run holds fp32 θ and momentum of all 1.3 B parameters, +5.1 GB).
A config that does not fit in this machine's RAM is reported as such (killed), not skipped.
--host-state-dir DIR puts θ and the momentum in file-backed mappings in DIR
(outer.host_state_dir): the disk then plays the part of §3.1's host memory, which is how
Streaming DiLoCo's every-parameter-trainable state fits beside its θ in 24 GiB.
It prints, per config, the training-state memory measured from the tensors that exist
(ppu-train's summary, by the paper's components), ppu-plan's model of the same run
(runtime_memory_bytes: fp32 θ and momentum of every parameter on the host) and of §3.1's
device accounting (memory_bytes: only the fragment being synced), the process's peak RSS, and
Table 1's "Memory, GB". Writes OUT/table.md and OUT/results.json.
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from ppu import summary

# Table 1 of the paper: Memory, GB (per node, bf16, full activation recomputation).
TABLE1_GB = {
    "streaming-diloco": 19.36,
    "mlp-2": 14.87,
    "mlp-4": 12.77,
    "mlp-8": 11.72,
    "mlp-16": 11.19,
    "mlp-8-overtrained": 11.72,
    "mlp-heads-2": 13.29,
    "mlp-heads-4": 10.41,
    "streaming-diloco-28b": 19.36,
}
GB = 1e9


@dataclasses.dataclass(frozen=True)
class StateBytes:
    """The training state's components, as the summary's state_bytes and ppu-plan's
    runtime_memory_bytes and memory_bytes name them, in the table's order; file_backed: what
    outer.host_state_dir puts in its files (θ and the outer momentum)."""

    weights: float
    gradients: float
    inner_optimizer: float
    outer_optimizer: float = dataclasses.field(metadata={"file_backed": True})
    offloaded: float = dataclasses.field(metadata={"file_backed": True})
    total: float


COMPONENTS = [f.name for f in dataclasses.fields(StateBytes)]
FILE_BACKED = {f.name for f in dataclasses.fields(StateBytes) if f.metadata.get("file_backed")}


@dataclasses.dataclass
class Failed:
    """A config whose ppu-train did not finish: an entry of results.json."""

    config: str
    failed: str
    peak_rss_bytes: int
    table1_gb: float | None


@dataclasses.dataclass
class Measured:
    """A config measured: an entry of results.json. trainable_params, total_params and measured
    (its state_bytes, as written) are ppu-train's summary's; the summary reports no dtype, so
    dtype is "?". plan_runtime and plan_device: ppu-plan's runtime_memory_bytes and memory_bytes."""

    config: str
    dtype: str
    trainable_params: int
    total_params: int
    measured: dict
    plan_runtime: dict
    plan_device: dict
    peak_rss_bytes: int
    seconds: float
    table1_gb: float | None
    host_state_dir: str


def read_text(path, **kw):
    with open(path, **kw) as f:
        return f.read()


def solo_train_command(build, config, summary, sets):
    """ppu-train of `config` with `--set` overrides, and an environment without the rendezvous
    variables, so that it runs solo as rank 0 of the config's K (its slice plan and fragments)."""
    cmd = [os.path.join(build, "bin", "ppu-train"), "--config", config, "--summary", summary]
    for s in sets:
        cmd += ["--set", s]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    return cmd, env


def run_one(build, name, seq_len, work, outer_step, host_state_dir):
    config = os.path.join(ROOT, "configs", "paper", name + ".yaml")
    sets = [
        "train.device=cpu",
        "train.steps=1",
        "train.eval_every=0",
        "train.eval_batches=1",
        "train.log_every=1",
        "train.recompute=true",
        "train.threads=2",
        "inner.batch_size=1",
        f"model.seq_len={seq_len}",
        "inner.warmup_steps=1",
        "data.source=synthetic",
        "data.path=",
        "data.synthetic_train_tokens=20000",
        "data.synthetic_val_tokens=4000",
        "checkpoint.dir=",
        "metrics.port=0",
    ]
    if outer_step:
        sets.append("outer.sync_every=1")
    if host_state_dir:
        sets.append(f"outer.host_state_dir={host_state_dir}")
    summary_path = os.path.join(work, name + ".json")
    cmd, env = solo_train_command(build, config, summary_path, sets)
    start = time.time()
    log_path = os.path.join(work, name + ".log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        # wait4 returns this child's own rusage: its peak RSS, not the largest of all children.
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        why = "killed (out of memory on this machine)" if proc.returncode == -9 else f"exited {proc.returncode}"
        print(
            f"{name}: ppu-train {why}; peak RSS {usage.ru_maxrss / 2**20:.1f} GiB\n" + read_text(log_path)[-1500:],
            file=sys.stderr,
        )
        return Failed(config=name, failed=why, peak_rss_bytes=usage.ru_maxrss * 1024, table1_gb=TABLE1_GB.get(name))
    peak_kib = usage.ru_maxrss
    s = summary.load(summary_path)
    plan = subprocess.run(
        [
            os.path.join(build, "bin", "ppu-plan"),
            "--config",
            config,
            "--json",
            "--set",
            f"model.seq_len={seq_len}",
            "--set",
            "inner.batch_size=1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if plan.returncode != 0:
        sys.exit(f"{name}: ppu-plan failed: {plan.stderr}")
    p = json.loads(plan.stdout)
    return Measured(
        config=name,
        dtype="?",
        trainable_params=s.trainable_params,
        total_params=s.total_params,
        measured=s.state_bytes.as_dict(),
        plan_runtime=p["runtime_memory_bytes"],
        plan_device=p["memory_bytes"],
        peak_rss_bytes=peak_kib * 1024,
        seconds=time.time() - start,
        table1_gb=TABLE1_GB.get(name),
        host_state_dir=host_state_dir or "",
    )


def table(rows):
    out = [
        "| config | trainable / total (B) | component | measured GB | ppu-plan runtime GB | ppu-plan §3.1 device GB | Table 1 GB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if isinstance(r, Failed):
            out.append(
                f"| {r.config} | | {r.failed} at {r.peak_rss_bytes / GB:.1f} GB RSS | | | | {r.table1_gb or '—'} |"
            )
            continue
        for i, c in enumerate(COMPONENTS):
            first = i == 0
            out.append(
                "| {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {} |".format(
                    r.config if first else "",
                    f"{r.trainable_params / 1e9:.3f} / {r.total_params / 1e9:.3f}" if first else "",
                    c + (" (file-backed)" if r.host_state_dir and c in FILE_BACKED else ""),
                    r.measured.get(c, 0) / GB,
                    r.plan_runtime.get(c, 0) / GB,
                    r.plan_device.get(c, 0) / GB,
                    (f"{r.table1_gb:.2f}" if r.table1_gb else "—") if c == "total" else "",
                )
            )
        out.append(f"| | | peak RSS | {r.peak_rss_bytes / GB:.3f} | | | |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument(
        "--configs",
        nargs="*",
        default=["mlp-heads-4", "mlp-16", "mlp-8", "mlp-4", "mlp-heads-2", "mlp-2", "streaming-diloco"],
    )
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--with-outer-step", action="store_true", help="H = 1: every fragment syncs once (+5.1 GB)")
    ap.add_argument("--host-state-dir", default="", help="outer.host_state_dir: θ and momentum in files there")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "paper-memory"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in a.configs:
            row = run_one(a.build, name, a.seq_len, work, a.with_outer_step, a.host_state_dir)
            rows.append(row)
            if isinstance(row, Failed):
                continue
            print(
                f"{name}: measured {row.measured['total'] / GB:.2f} GB, plan {row.plan_runtime['total'] / GB:.2f} GB, "
                f"peak RSS {row.peak_rss_bytes / GB:.2f} GB, {row.seconds:.0f} s",
                flush=True,
            )
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump([dataclasses.asdict(r) for r in rows], f, indent=1)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table(rows))
    print(table(rows), end="")


if __name__ == "__main__":
    main()
