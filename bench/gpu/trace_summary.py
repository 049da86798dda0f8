#!/usr/bin/env python3
"""Where a step's device time goes: profiler traces of ppu-train and of the PyTorch reference, side by side.

usage: bench/gpu/trace_summary.py LABEL=TRACE.json:STEPS [LABEL=TRACE.json:STEPS ...] [--top 15] [--out FILE.md]

Each TRACE is a Chrome-format trace from the PyTorch (Kineto) profiler covering STEPS inner steps:
ppu-train's train.profile_dir (engine/obs/step_profiler.h) or reference_step.py --profile. Per
trace, per step: the device span (first device event's start to the last one's end), the time
the device was busy (the union of kernel, memcpy and memset intervals) and idle (span − busy:
launch gaps and host synchronisation), the kernel time by category (GEMM, attention, loss and
softmax, LayerNorm, optimiser, elementwise, reductions, copies and casts) and the kernels with the
most time. Prints a Markdown report (and writes it to --out).
"""

import argparse
import collections
import json
import re
import sys

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
# First match wins: attention kernels contain "gemm"-like words, so they come first.
KERNEL_CLASSES = [
    ("attention", re.compile(r"flash|fmha|attention", re.IGNORECASE)),
    ("GEMM", re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|sm80_|cublas|splitk", re.IGNORECASE)),
    ("optimiser", re.compile(r"adam|multi_tensor_apply", re.IGNORECASE)),
    ("LayerNorm", re.compile(r"layer_?norm", re.IGNORECASE)),
    ("loss and softmax", re.compile(r"softmax|logsumexp|nll_loss|cross_entropy|log_softmax", re.IGNORECASE)),
    ("copies and casts", re.compile(r"copy|CatArray|cat_|memcpy|memset", re.IGNORECASE)),
    ("reductions", re.compile(r"reduce", re.IGNORECASE)),
    ("elementwise", re.compile(r"elementwise|functor|gelu|relu|fill", re.IGNORECASE)),
]


def kernel_class(event):
    if event.get("cat") in ("gpu_memcpy", "gpu_memset"):
        return "copies and casts"
    for name, pattern in KERNEL_CLASSES:
        if pattern.search(event["name"]):
            return name
    return "other"


def short_name(name, width=90):
    """A kernel's name without its template arguments' noise, at most `width` characters."""
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= width else name[: width - 1] + "…"


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def summarise(path, steps):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES and "dur" in e]
    if not device:
        raise ValueError(f"{path}: no device events (a CPU trace, or the profiler saw no CUDA activity)")
    intervals = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in device]
    span = max(stop for _, stop in intervals) - min(start for start, _ in intervals)
    busy = union_length(intervals)
    by_class = collections.Counter()
    by_kernel = collections.Counter()
    calls = collections.Counter()
    for e in device:
        by_class[kernel_class(e)] += float(e["dur"])
        by_kernel[e["name"]] += float(e["dur"])
        calls[e["name"]] += 1
    ms = 1e-3 / steps  # trace microseconds -> milliseconds per step
    return {
        "span_ms": span * ms,
        "busy_ms": busy * ms,
        "idle_ms": (span - busy) * ms,
        "launches": len(device) / steps,
        "classes": {k: v * ms for k, v in by_class.items()},
        "kernels": [(name, t * ms, calls[name] / steps) for name, t in by_kernel.most_common()],
    }


def report(summaries, top):
    labels = list(summaries)
    lines = ["| per step | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for key, title in [
        ("span_ms", "device span (ms)"),
        ("busy_ms", "device busy (ms)"),
        ("idle_ms", "device idle (ms)"),
        ("launches", "device events"),
    ]:
        lines.append(f"| {title} | " + " | ".join(f"{summaries[x][key]:.1f}" for x in labels) + " |")
    classes = sorted(
        {c for s in summaries.values() for c in s["classes"]}, key=lambda c: -summaries[labels[0]]["classes"].get(c, 0)
    )
    for c in classes:
        lines.append(f"| {c} (ms) | " + " | ".join(f"{summaries[x]['classes'].get(c, 0):.1f}" for x in labels) + " |")
    for x in labels:
        lines += ["", f"Top {top} kernels, {x} (ms per step, launches per step):", ""]
        lines += ["| ms | launches | kernel |", "|---|---|---|"]
        for name, t, n in summaries[x]["kernels"][:top]:
            lines.append(f"| {t:.2f} | {n:.1f} | `{short_name(name)}` |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="LABEL=TRACE.json:STEPS")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--out")
    a = ap.parse_args()
    summaries = {}
    for spec in a.traces:
        m = re.fullmatch(r"([^=]+)=(.+):(\d+)", spec)
        if not m:
            sys.exit(f"trace '{spec}': expected LABEL=TRACE.json:STEPS")
        try:
            summaries[m.group(1)] = summarise(m.group(2), int(m.group(3)))
        except ValueError as e:
            sys.exit(str(e))
    text = report(summaries, a.top)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
