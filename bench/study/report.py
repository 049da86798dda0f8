#!/usr/bin/env python3
"""Writes the study's tables and plots from the finished runs of run.sh.

Contract: `report.py OUT` reads OUT/runs/NAME-sSEED/{rank-*.json, run.log, rusage, done} for
every run with a `done` marker (others are skipped with a note), the token shards
OUT/corpus/data/{train,val}.bin and, for the row order and the `paired` tags, grid.tsv next to
this file. It writes into OUT:
  table.md         one row per grid row that ran: final eval loss of θ (mean, and each seed's),
                   perplexity, tokens, FLOPs, state, peak RSS, bytes sent, wall time
  paired.md        each `paired` PPU row against streaming-diloco seed by seed: the differences
                   in final eval loss, their mean, sd, 95 % Student-t interval, the verdict and the
                   smallest difference the seeds could have detected (80 % power)
  summary.json     every number above, per seed and per row, the eval curves and the unigram
                   entropy reference; top-level keys: study, unigram, runs, paired
  loss_vs_tokens.png, loss_vs_flops.png, paired.png, memory.png, ppl_vs_n.png (gnuplot),
  plots.gp and the *.dat files it reads (gnuplot plots.gp in OUT redraws them).
Fields used from the rank summaries (ppu-train --summary): eval_loss, eval_perplexity, tokens,
steps, world_size, flops_executed, flops_full_backward, state_bytes (weights, gradients,
inner_optimizer, outer_optimizer, offloaded, total), bytes_sent, method, slicing. Eval curves come
from rank 0's "eval step N loss X" log lines (evaluations of the global θ, the same on every
rank); the final point is the summary's eval_loss. rusage is "status peak_rss_bytes wall_seconds"
(peak_rss.py). Exits non-zero with a message naming the run or file when an input is missing or
malformed. Python standard library and gnuplot only.
"""

import glob
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import sys
from array import array
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = "streaming-diloco"  # the paired rows are compared with this row, seed by seed
EVAL = re.compile(r"^\[rank 0\].* eval step (\d+) loss ([0-9.]+)")
COMPONENTS = ["weights", "gradients", "inner_optimizer", "outer_optimizer", "offloaded"]
# Paper §3.1 items (iv) outer-optimizer state and (v) offloaded parameters: the runtime keeps θ
# and the outer momentum in fp32 host memory, not on the accelerator (docs/RUNTIME.md).
HOST = {"outer_optimizer", "offloaded"}
COMPONENT_TITLE = {
    "weights": "weights",
    "gradients": "gradients",
    "inner_optimizer": "inner AdamW moments",
    "outer_optimizer": "outer momentum (host)",
    "offloaded": "global θ, offloaded (host)",
}
COMPONENT_COLOUR = {
    "weights": "#4c72b0",
    "gradients": "#dd8452",
    "inner_optimizer": "#55a868",
    "outer_optimizer": "#8172b3",
    "offloaded": "#937860",
}

# Method families (memory.png's groups, the loss plots' panels, ppl_vs_n.png's lines). Rows not
# named here are shown with the ablations.
BASELINES = ["ddp", "diloco", "streaming-diloco"]
PPU_MLP = ["ppu-mlp-2", "ppu-mlp-4", "ppu-mlp-8"]
PPU_MLP_HEADS = ["ppu-mlp-heads-2", "ppu-mlp-heads-4", "ppu-mlp-heads-8"]
# More tokens than the rest: a curve among the methods; its state is that of the row it extends.
LONGER_OF = {"ppu-mlp-8-1.5x": "ppu-mlp-8"}
LONGER = list(LONGER_OF)
ABLATION_REFERENCES = ["ppu-mlp-4", "ppu-mlp-heads-4"]  # what the ablations change (ppu-wo-sliced: + heads)
STYLE = {  # colour, point type; the same in every plot
    "ddp": ("#000000", 1),
    "diloco": ("#1f77b4", 2),
    "streaming-diloco": ("#2ca02c", 5),
    "ppu-mlp-2": ("#d62728", 7),
    "ppu-mlp-4": ("#ff7f0e", 9),
    "ppu-mlp-8": ("#8c564b", 11),
    "ppu-mlp-8-1.5x": ("#e377c2", 13),
    "ppu-mlp-heads-2": ("#c5b0d5", 4),
    "ppu-mlp-heads-4": ("#9467bd", 4),
    "ppu-mlp-heads-8": ("#5b3d91", 4),
    "ppu-grouping-slices": ("#17becf", 3),
    "ppu-wo-sliced": ("#bcbd22", 6),
    "ppu-horizontal": ("#7f7f7f", 8),
    "ppu-detach-all-but-k": ("#393b79", 10),
    "ppu-k-plus-random": ("#843c39", 12),
}
EXTRA_COLOURS = ["#637939", "#e7969c", "#6b6ecf", "#b5cf6b", "#ad494a", "#3182bd"]
MIB = 1 / 2**20

# Two-sided 95 % and one-sided 80 % quantiles of Student's t, t_{0.975,df} and t_{0.80,df}, for
# df = n - 1 = 1..9 (n = 2..10 seeds), from the standard tables. More seeds use df = 9's values,
# which are larger than the true ones (a wider interval and a larger detectable effect: conservative).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
T80 = {1: 1.376, 2: 1.061, 3: 0.978, 4: 0.941, 5: 0.920, 6: 0.906, 7: 0.896, 8: 0.889, 9: 0.883}


def die(msg):
    sys.exit(f"report.py: {msg}")


def mean(xs):
    return sum(xs) / len(xs)


# ---------------------------------------------------------------------------------------------
# Inputs


def read_grid():
    """grid.tsv's rows in order: [(name, tags)]."""
    path = os.path.join(HERE, "grid.tsv")
    try:
        lines = pathlib.Path(path).read_text().splitlines()
    except OSError as e:
        die(f"cannot read the grid {path}: {e}")
    rows = []
    for line in lines:
        f = line.split("\t")
        if not f[0] or f[0].startswith("#"):
            continue
        tags = set(f[3].split(",")) if len(f) > 3 and f[3] else set()
        rows.append((f[0], tags))
    return rows


def read_shard(path):
    """Token shard (runtime/data/token_shard.h): 64-byte header, then the tokens. -> (vocab, tokens)"""
    try:
        buf = pathlib.Path(path).read_bytes()
    except OSError as e:
        die(f"token shard {path} is missing or unreadable ({e.strerror}); the corpus is built by corpus.sh")
    if len(buf) < 64 or buf[:8] != b"PPUTOKS\0":
        die(f"token shard {path} is malformed: no 'PPUTOKS\\0' magic in a 64-byte header")
    version, width, count, vocab = struct.unpack_from("<IIQQ", buf, 8)
    if version != 1 or width not in (2, 4):
        die(f"token shard {path} is malformed: version {version}, {width} bytes per token (want 1, 2 or 4)")
    if len(buf) != 64 + count * width:
        die(f"token shard {path} is malformed: {len(buf)} bytes, the header says 64 + {count} x {width}")
    tokens = array("H" if width == 2 else "I")
    if tokens.itemsize != width:
        tokens = array("L" if width == 4 else "H")
    tokens.frombytes(buf[64:])
    if sys.byteorder == "big":
        tokens.byteswap()
    if count and max(tokens) >= vocab:
        die(f"token shard {path} is malformed: token {max(tokens)} is outside vocab {vocab}")
    return vocab, tokens


def unigram_entropy(data_dir):
    """Cross-entropy (nats/token) of the val split under the train split's unigram distribution,
    add-one smoothed over the vocab: p(t) = (count_train(t) + 1) / (train tokens + vocab)."""
    train_path, val_path = os.path.join(data_dir, "train.bin"), os.path.join(data_dir, "val.bin")
    vocab, train = read_shard(train_path)
    val_vocab, val = read_shard(val_path)
    if val_vocab != vocab:
        die(f"token shards disagree on the vocab: {train_path} {vocab}, {val_path} {val_vocab}")
    if not val:
        die(f"token shard {val_path} holds no tokens")
    counts, denom = Counter(train), len(train) + vocab
    h = -sum(c * math.log((counts.get(t, 0) + 1) / denom) for t, c in Counter(val).items()) / len(val)
    return {
        "nats_per_token": h,
        "perplexity": math.exp(h),
        "vocab": vocab,
        "train_tokens": len(train),
        "val_tokens": len(val),
        "smoothing": "add-one over the vocab",
        "files": [train_path, val_path],
    }


def field(s, key, where):
    if key not in s:
        die(f"{where} has no '{key}'")
    return s[key]


def eval_losses(log_lines):
    """{step: eval loss of θ} from rank 0's 'eval step N loss X' lines of a ppu-launch log (the
    final evaluation, after the last step, is logged otherwise: it is the summary's eval_loss)."""
    evals = {}
    for line in log_lines:
        m = EVAL.match(line)
        if m:
            evals[int(m.group(1))] = float(m.group(2))
    return evals


def load_run(d, name, seed):
    run = f"run {name} seed {seed} ({d})"
    paths = sorted(
        glob.glob(os.path.join(d, "rank-*.json")), key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0)
    )
    if not paths:
        die(f"{run} has no rank-*.json summary")
    s = []
    for p in paths:
        try:
            s.append(json.loads(pathlib.Path(p).read_text()))
        except (OSError, ValueError) as e:
            die(f"{run}: cannot read {os.path.basename(p)}: {e}")
    r0 = s[0]
    where = f"{run}: {os.path.basename(paths[0])}"
    k = field(r0, "world_size", where)
    if len(s) != k:
        die(f"{run} has {len(s)} rank-*.json summaries for world_size {k}")
    for p, x in zip(paths, s, strict=True):
        for key in (
            "eval_loss",
            "eval_perplexity",
            "tokens",
            "steps",
            "flops_executed",
            "flops_full_backward",
            "state_bytes",
            "bytes_sent",
            "method",
        ):
            field(x, key, f"{run}: {os.path.basename(p)}")
        for c in COMPONENTS + ["total"]:
            if c not in x["state_bytes"]:
                die(f"{run}: {os.path.basename(p)} has no state_bytes.{c}")
    try:
        status, peak, wall = pathlib.Path(d, "rusage").read_text().split()
        status, peak, wall = int(status), int(peak), float(wall)
    except OSError:
        die(f"{run} has no rusage file")
    except ValueError:
        die(f"{run}: rusage is not 'status peak_rss_bytes wall_seconds'")
    if status != 0:
        die(f"{run}: rusage records exit status {status}, yet the run is marked done")
    try:
        log = pathlib.Path(d, "run.log").read_text(errors="replace").splitlines()
    except OSError:
        die(f"{run} has no run.log")
    evals = eval_losses(log)
    steps = r0["steps"]
    if not evals:
        die(f"{run}: run.log has no '[rank 0] ... eval step N loss X' line (the eval curve)")
    evals[steps] = r0["eval_loss"]  # the final evaluation of θ, after the last step
    tokens = sum(x["tokens"] for x in s)  # all ranks
    flops = mean([x["flops_executed"] for x in s])  # per rank
    flops_full = mean([x["flops_full_backward"] for x in s])
    return {
        "seed": seed,
        "eval_loss": r0["eval_loss"],
        "eval_perplexity": r0["eval_perplexity"],
        "world_size": k,
        "steps": steps,
        "tokens": tokens,
        "flops_executed_per_rank": flops,
        "flops_full_backward_per_rank": flops_full,
        "flops_saved_fraction": 1 - flops / flops_full if flops_full else 0.0,
        "state_bytes": {c: max(x["state_bytes"][c] for x in s) for c in COMPONENTS + ["total"]},
        "bytes_sent_per_rank": max(x["bytes_sent"] for x in s),
        "peak_rss_bytes": peak,
        "wall_seconds": wall,
        "method": r0["method"],
        "slicing": r0.get("slicing", {}),
        # (step, tokens all ranks, FLOPs per rank, eval loss), tokens and FLOPs at a constant rate per step
        "curve": [(n, n * tokens / steps, n * flops / steps, evals[n]) for n in sorted(evals)],
    }


def load_runs(out):
    found = {}
    for d in sorted(glob.glob(os.path.join(out, "runs", "*"))):
        m = re.match(r"^(.+)-s(\d+)$", os.path.basename(d))
        if not m or not os.path.isdir(d):
            continue
        if not os.path.exists(os.path.join(d, "done")):
            print(f"report.py: skipping {d}: no done marker (unfinished)", file=sys.stderr)
            continue
        name, seed = m.group(1), int(m.group(2))
        found.setdefault(name, {})[seed] = load_run(d, name, seed)
    if not found:
        die(f"no finished run under {out}/runs")
    return found


# ---------------------------------------------------------------------------------------------
# Numbers


def row_summary(name, seeds):
    """One grid row over its seeds (the state, FLOPs and bytes are the same for every seed)."""
    rs = [seeds[s] for s in sorted(seeds)]
    r = rs[0]
    losses, ppls = [x["eval_loss"] for x in rs], [x["eval_perplexity"] for x in rs]
    return {
        "seeds": sorted(seeds),
        "eval_loss": losses,
        "eval_loss_mean": mean(losses),
        "eval_perplexity": ppls,
        "eval_perplexity_mean": mean(ppls),
        "world_size": r["world_size"],
        "steps": r["steps"],
        "tokens": r["tokens"],
        "flops_executed_per_rank": r["flops_executed_per_rank"],
        "flops_full_backward_per_rank": r["flops_full_backward_per_rank"],
        "flops_saved_fraction": r["flops_saved_fraction"],
        "state_bytes": max((x["state_bytes"] for x in rs), key=lambda b: b["total"]),
        "peak_rss": max(x["peak_rss_bytes"] for x in rs),
        "bytes_sent": max(x["bytes_sent_per_rank"] for x in rs),
        "wall_seconds": [x["wall_seconds"] for x in rs],
        "wall_seconds_mean": mean([x["wall_seconds"] for x in rs]),
        "method": r["method"],
        "slicing": r["slicing"],
        "per_seed": [
            {k: v for k, v in x.items() if k != "curve"} | {"curve": [list(p) for p in x["curve"]]} for x in rs
        ],
    }


def mean_curve(seeds):
    """At the eval steps every seed has: step, tokens, FLOPs, mean, min, max, then each seed's loss."""
    rs = [seeds[s] for s in sorted(seeds)]
    common = set.intersection(*({p[0] for p in x["curve"]} for x in rs))
    by_step = [{p[0]: p for p in x["curve"]} for x in rs]
    rows = []
    for n in sorted(common):
        ls = [b[n][3] for b in by_step]
        p = by_step[0][n]
        rows.append((n, p[1], p[2], mean(ls), min(ls), max(ls), *ls))
    return rows


def paired_stats(name, ppu, ref):
    """Paired differences d_s = loss(name, s) − loss(reference, s) over the seeds both rows ran."""
    seeds = sorted(set(ppu) & set(ref))
    d = [ppu[s]["eval_loss"] - ref[s]["eval_loss"] for s in seeds]
    res = {
        "reference": REFERENCE,
        "seeds": seeds,
        "n": len(d),
        "loss": [ppu[s]["eval_loss"] for s in seeds],
        "reference_loss": [ref[s]["eval_loss"] for s in seeds],
        "differences": d,
        "mean": mean(d) if d else None,
        "ppl_ratio_mean": math.exp(mean(d)) if d else None,
    }
    na = "n/a (one seed)" if len(d) == 1 else "n/a (no paired seed)"
    if len(d) < 2:
        return res | {
            "sd": None,
            "t975": None,
            "ci95": None,
            "verdict": na,
            "t80": None,
            "mde80": None,
            "ppl_ratio_ci95": None,
            "ppl_ratio_mde80": None,
        }
    n, m = len(d), mean(d)
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1))
    t975, t80 = T975[min(n - 1, 9)], T80[min(n - 1, 9)]
    half = t975 * sd / math.sqrt(n)
    lo, hi = m - half, m + half
    verdict = "worse" if lo > 0 else "better" if hi < 0 else "indistinguishable at this power"
    mde = (t975 + t80) * sd / math.sqrt(n)
    return res | {
        "sd": sd,
        "t975": t975,
        "ci95": [lo, hi],
        "verdict": verdict,
        "t80": t80,
        "mde80": mde,
        "ppl_ratio_ci95": [math.exp(lo), math.exp(hi)],
        "ppl_ratio_mde80": math.exp(mde),
    }


# ---------------------------------------------------------------------------------------------
# Tables


def write_table(out, order, rows):
    lines = [
        (
            "| run | seeds | final eval loss of θ (mean; per seed) | eval ppl (mean) | tokens (all ranks) | "
            "FLOPs executed / rank | FLOPs saved | state / rank (MiB) | peak RSS / rank (MiB) | "
            "sent / rank (MiB) | wall (s) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        r = rows[name]
        loss = f"{r['eval_loss_mean']:.4f}"
        if len(r["seeds"]) > 1:
            loss += " (" + ", ".join(f"{x:.4f}" for x in r["eval_loss"]) + ")"
        lines.append(
            f"| {name} | {','.join(map(str, r['seeds']))} | {loss} | {r['eval_perplexity_mean']:.2f} | "
            f"{r['tokens'] / 1e6:.4g} M | {r['flops_executed_per_rank']:.3g} | "
            f"{100 * r['flops_saved_fraction']:.1f} % | {r['state_bytes']['total'] * MIB:.2f} | "
            f"{r['peak_rss'] * MIB:.0f} | {r['bytes_sent'] * MIB:.1f} | {r['wall_seconds_mean']:.0f} |"
        )
    lines += [
        "",
        (
            "Final eval loss: of the global θ after the last step (nats/token); with several seeds the mean, "
            "then each seed's value in seed order. Eval ppl: the mean over seeds of exp(loss). Tokens: trained by "
            "all ranks together. FLOPs: matmul FLOPs executed by one rank over the run (mean over ranks); saved: "
            "relative to a full backward. State: the training state of one rank measured from its tensors "
            "(largest rank; memory.png splits it). Peak RSS: the largest resident set of any rank process, largest "
            "over seeds. Sent: payload bytes one rank put on the wire (largest rank). Wall: the run's wall time "
            "(start-up and evaluation included), mean over seeds."
        ),
    ]
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def fmt(x, spec="+.4f"):
    return "n/a" if x is None else format(x, spec)


def write_paired(out, paired):
    lines = [
        f"# Paired comparison with {REFERENCE} (final eval loss of θ, nats/token)",
        "",
        (
            f"Seed s is the same initial θ and the same data streams for both rows, so d_s = loss(row, s) − "
            f"loss({REFERENCE}, s) removes what the seed does to both. Mean and sample sd over the seeds; the 95 % "
            "interval is mean ± t_{0.975,n−1}·sd/√n (Student t). Verdict: **worse** if the interval lies above 0, "
            "**better** if below 0, otherwise **indistinguishable at this power**."
        ),
        "",
        (
            "MDE (80 %) = (t_{0.975,n−1} + t_{0.80,n−1})·sd/√n, the minimum detectable effect: the smallest true "
            "mean difference that this many seeds, with this seed-to-seed spread, would find (interval excluding 0) "
            "4 times in 5. A true difference smaller than it would often be called indistinguishable, so "
            "'indistinguishable' rules out only differences of about the MDE or more, not small ones. "
            "The ppl ratio columns are exp() of the loss columns: PPU's perplexity over "
            f"{REFERENCE}'s (a ratio of geometric means over seeds)."
        ),
        "",
        (
            "| run | seeds | d_s per seed | mean d | sd | 95 % interval | verdict | MDE (80 %) | ppl ratio | "
            "ppl ratio 95 % | ppl ratio MDE |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for name, p in paired.items():
        ci = "n/a" if p["ci95"] is None else f"[{p['ci95'][0]:+.4f}, {p['ci95'][1]:+.4f}]"
        rci = "n/a" if p["ppl_ratio_ci95"] is None else "[{:.3f}, {:.3f}]".format(*tuple(p["ppl_ratio_ci95"]))
        if p["n"] < 2:
            sd = ci = mde = p["verdict"]
            rci = rmde = "n/a"
        else:
            sd, mde, rmde = fmt(p["sd"], ".4f"), fmt(p["mde80"], ".4f"), fmt(p["ppl_ratio_mde80"], ".3f")
        lines.append(
            f"| {name} | {','.join(map(str, p['seeds'])) or '-'} | "
            f"{', '.join(format(x, '+.4f') for x in p['differences']) or '-'} | {fmt(p['mean'])} | {sd} | "
            f"{ci} | {p['verdict']} | {mde} | {fmt(p['ppl_ratio_mean'], '.3f')} | {rci} | {rmde} |"
        )
        if p["n"] >= 2:
            notes.append(
                f"- **{name}**: {p['verdict']}. Over {p['n']} seeds its final eval loss differs from "
                f"{REFERENCE}'s by {p['mean']:+.4f} nats/token on average (perplexity "
                f"×{p['ppl_ratio_mean']:.3f}), 95 % interval "
                f"[{p['ci95'][0]:+.4f}, {p['ci95'][1]:+.4f}] (×{p['ppl_ratio_ci95'][0]:.3f} to "
                f"×{p['ppl_ratio_ci95'][1]:.3f}); the seeds could detect a true difference of about "
                f"{p['mde80']:.4f} nats (perplexity ×{p['ppl_ratio_mde80']:.3f}) at 80 % power."
            )
        else:
            notes.append(f"- **{name}**: {p['verdict']}: no interval or verdict.")
    with open(os.path.join(out, "paired.md"), "w") as f:
        f.write("\n".join(lines + [""] + (notes or ["No paired row ran."])) + "\n")


# ---------------------------------------------------------------------------------------------
# Plots


def style(name, order):
    if name in STYLE:
        return STYLE[name]
    extra = [n for n in order if n not in STYLE]
    return EXTRA_COLOURS[extra.index(name) % len(EXTRA_COLOURS)], 14


def write_curves(out, runs):
    for name, seeds in runs.items():
        with open(os.path.join(out, f"curve-{name}.dat"), "w") as f:
            f.write(
                "# step tokens_all_ranks flops_per_rank mean min max "
                + " ".join(f"seed{s}" for s in sorted(seeds))
                + "  (eval loss of θ, nats/token)\n"
            )
            f.writelines(
                f"{row[0]:d} {row[1]:.6g} {row[2]:.6g} " + " ".join(f"{x:.6f}" for x in row[3:]) + "\n"
                for row in mean_curve(seeds)
            )


def curve_elements(names, runs, order, xcol, scale, reference=()):
    """Thin curve per seed, a min..max band and the thick mean, for every row with several seeds."""
    bands, thin, thick = [], [], []
    for n in names:
        colour, pt = style(n, order)
        k = len(runs[n])
        x = f"(${xcol}/{scale})"
        f = f"'curve-{n}.dat'"
        if k > 1:
            bands.append(
                f"{f} using {x}:5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '{colour}' notitle"
            )
            thin += [f"{f} using {x}:{7 + i} with lines lw 0.8 lc rgb '{colour}' notitle" for i in range(k)]
        title = n + (f" (mean of {k} seeds)" if k > 1 else "") + (" (reference)" if n in reference else "")
        dt = 2 if n in reference else 1
        thick.append(
            f"{f} using {x}:4 with linespoints lw {3 if k > 1 else 2} dt {dt} pt {pt} ps 0.9 pi 4 "
            f"lc rgb '{colour}' title '{title}'"
        )
    return bands, thin, thick


def loss_range(names, runs, unigram):
    """y range: every curve from its second evaluation on (the first ones are far above the rest),
    with room on top for the key (top right, where falling loss curves are not)."""
    ys = [p[3] for n in names for x in runs[n].values() for p in x["curve"][1:]] or [unigram]
    lo, hi = min(ys + [unigram]), max(ys + [unigram])
    span = hi - lo or 1
    return lo - 0.04 * span, hi + (0.25 + 0.05 * len(names)) * span


def loss_plots(runs, order, unigram, budget):
    left = [n for n in BASELINES + PPU_MLP + PPU_MLP_HEADS + LONGER if n in runs]
    refs = [n for n in ABLATION_REFERENCES if n in runs]
    right = refs + [n for n in order if n not in left]
    ulabel = f"unigram entropy ({unigram:.3f} nats)"
    script = []
    for xcol, scale, xlabel, what, png in [
        (2, "1e6", "tokens, all ranks (millions)", "tokens", "loss_vs_tokens.png"),
        (3, "1e12", "FLOPs executed per rank (10^12)", "FLOPs executed per rank", "loss_vs_flops.png"),
    ]:
        script.append(
            f"set output '{png}'\n"
            f'set multiplot layout 1,2 title "Eval loss of the global θ vs {what}: {budget}\\n'
            'rows with several seeds: thick line = mean, band = min..max, thin lines = each seed" '
            "font ',12'"
        )
        for title, names, reference in [
            ("methods", left, ()),
            ("ablations (App. A.1, A.2, D) and their references", right, refs),
        ]:
            if not names:
                script.append("set multiplot next")
                continue
            lo, hi = loss_range(names, runs, unigram)
            bands, thin, thick = curve_elements(names, runs, order, xcol, scale, reference)
            uni = f"{unigram} with lines dt 3 lw 2 lc rgb '#555555' title '{ulabel}'"
            seedkey = (
                [
                    (
                        "NaN with filledcurves fs transparent solid 0.15 noborder lc rgb '#777777' "
                        "title 'seed range (min..max)'"
                    )
                ]
                if bands
                else []
            )
            script.append(
                f"set title '{title}'; set xlabel '{xlabel}'; set ylabel 'eval loss of θ (nats/token)'\n"
                f"set yrange [{lo:.4f}:{hi:.4f}]; set xrange [0:*]\n"
                f"set label 1 'unigram entropy of val under train counts' at graph 0.98, first {unigram} "
                "right offset 0, 0.7 textcolor rgb '#555555'\n"
                "plot " + ", \\\n  ".join(bands + thin + thick + seedkey + [uni])
            )
        script.append("unset multiplot; unset label 1")
    return "\n".join(script)


def nice_step(span, tics=6):
    raw = span / tics
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def paired_plot(paired):
    names = list(paired)
    ys = (
        [0.0]
        + [d for p in paired.values() for d in p["differences"]]
        + [y for p in paired.values() if p["ci95"] for y in p["ci95"]]
    )
    lo, hi = min(ys), max(ys)
    pad = 0.1 * (hi - lo or 0.01)
    lo, hi = lo - pad, hi + pad

    def tic(n):
        p = paired[n]
        extra = f"MDE {p['mde80']:.3f} nats" if p["mde80"] is not None else ""
        return f'"{n}\\n{p["verdict"]}\\n{extra}" {names.index(n)}'

    lines = [
        "set output 'paired.png'",
        (
            f"set title \"Final eval loss of each paired PPU row minus {REFERENCE}'s with the same seed\\n"
            'points: one seed each; bar: mean and its 95 % Student-t interval; MDE: detectable at 80 % power" '
            "font ',12'"
        ),
        "set ylabel 'final eval loss − Streaming DiLoCo (nats)'; set xlabel ''",
        f"set yrange [{lo:.5f}:{hi:.5f}]",
        "set y2label 'perplexity ratio PPU / Streaming DiLoCo = exp(difference)'",
        "set link y2 via exp(y) inverse log(y)",
        f"set y2tics {nice_step(math.exp(hi) - math.exp(lo)):g} format '%.4g'",
        f"set xrange [-0.6:{len(names) - 0.4}]; set xtics (" + ", ".join(tic(n) for n in names) + ")",
        "set key outside bottom center horizontal; set bmargin 8",
    ]
    seed_set = sorted({s for p in paired.values() for s in p["seeds"]})
    elems = ["0 with lines lw 1.5 lc rgb '#000000' title 'no difference'"]
    points = [(7, "#1f77b4"), (5, "#ff7f0e"), (9, "#2ca02c"), (11, "#9467bd"), (13, "#8c564b")]
    for j, s in enumerate(seed_set):
        pt, colour = points[j % len(points)]
        elems.append(
            f"'paired-seeds.dat' using ($3 == {s} ? $1 : 1/0):4 with points pt {pt} ps 1.6 "
            f"lc rgb '{colour}' title 'seed {s}'"
        )
    if any(p["ci95"] for p in paired.values()):
        elems.append(
            "'paired.dat' using 1:3:4:5 with yerrorbars pt 3 ps 2.5 lw 2.5 lc rgb '#d62728' "
            "title 'mean with 95 % interval'"
        )
    lines.append("plot " + ", \\\n  ".join(elems))
    return "\n".join(lines)


def memory_plot(rows, order, out):
    groups = [
        ("baselines", [n for n in BASELINES if n in rows]),
        ("PPU 1/N MLPs", [n for n in PPU_MLP if n in rows]),
        ("PPU 1/N MLPs\\n+ 1/N heads", [n for n in PPU_MLP_HEADS if n in rows]),
        ("ablations", [n for n in order if n not in BASELINES + PPU_MLP + PPU_MLP_HEADS + LONGER]),
    ]
    groups = [(g, ns) for g, ns in groups if ns]
    ref = rows.get(REFERENCE)
    ref_total = ref["state_bytes"]["total"] if ref else None
    ref_dev = sum(ref["state_bytes"][c] for c in COMPONENTS if c not in HOST) if ref else None
    x, tics, group_labels, separators, labels = 0.0, [], [], [], []
    top = max(r["state_bytes"]["total"] for r in rows.values()) * MIB
    with open(os.path.join(out, "memory.dat"), "w") as f:
        f.write("# x run " + " ".join(f"cum_{c}" for c in ["0"] + COMPONENTS) + " (MiB per rank, cumulative)\n")
        for gi, (g, names) in enumerate(groups):
            if gi:
                separators.append(x - 0.75)
            group_labels.append((g, x + (len(names) - 1) / 2))
            for n in names:
                b = rows[n]["state_bytes"]
                cum = [0.0]
                for c in COMPONENTS:
                    cum.append(cum[-1] + b[c] * MIB)
                f.write(f"{x:.2f} {n} " + " ".join(f"{v:.4f}" for v in cum) + "\n")
                tics.append(f"'{n}' {x:.2f}")
                if ref_total and rows[n]["method"] == "ppu":
                    dev = sum(b[c] for c in COMPONENTS if c not in HOST)
                    text = (
                        f"{100 * (b['total'] / ref_total - 1):+.1f} %\\ndev. {100 * (dev / ref_dev - 1):+.0f} %"
                    ).replace("-", "−")
                    labels.append(f"set label \"{text}\" at {x:.2f}, {cum[-1] + 0.07 * top:.4f} center font ',9'")
                x += 1
            x += 0.5
    elems = []
    for i, c in enumerate(COMPONENTS):
        fill = "fs pattern 4 border lc rgb '#333333'" if c in HOST else "fs solid 0.85 border lc rgb '#333333'"
        elems.append(
            f"'memory.dat' using 1:{3 + i}:($1-0.35):($1+0.35):{3 + i}:{4 + i} with boxxyerror "
            f"{fill} fc rgb '{COMPONENT_COLOUR[c]}' title '{COMPONENT_TITLE[c]}'"
        )
    if ref_total:
        elems.append(f"{ref_total * MIB} with lines dt 2 lw 1.5 lc rgb '#2ca02c' title '{REFERENCE} total'")
    k = next(iter(rows.values()))["world_size"]
    note = (
        f"labels: state vs {REFERENCE}, in all and on the device (dev.: weights + gradients + AdamW)"
        if ref_total
        else ""
    ) + "".join(f"; {n}: as {LONGER_OF[n]}" for n in LONGER if n in rows)
    return "\n".join(
        [
            "set terminal pngcairo size 1500,760 font ',11' noenhanced",
            "set output 'memory.png'",
            f'set title "Training-state memory per rank by component (K = {k}), measured from the tensors\\n{note}"',
            "set ylabel 'MiB per rank'; set xlabel ''",
            f"set yrange [0:{top * 1.28:.3f}]",
            f"set xrange [-0.7:{x - 0.8:.2f}]",
            "set xtics (" + ", ".join(tics) + ") rotate by 30 right nomirror",
            "unset grid; set grid ytics",
            "set key outside bottom center horizontal box maxrows 2",
            *[f"set arrow from {s:.2f}, graph 0 to {s:.2f}, graph 1 nohead dt 3 lc rgb '#777777'" for s in separators],
            *[f"set label \"{g}\" at {c:.2f}, graph 0.95 center font ',11'" for g, c in group_labels],
            *labels,
            "plot " + ", \\\n  ".join(elems),
            "unset arrow; unset label",
        ]
    )


def ppl_plot(rows, runs, out, tokens):
    """ppl_vs_n.png: per series, each seed's perplexity (small points, spread a little around N)
    and the mean over seeds (line); Streaming DiLoCo as a horizontal line with its seed range."""
    longer = [n for n in LONGER if n in rows]
    more = ", ".join(f"{n}: {rows[n]['tokens'] / tokens:.2g}x tokens" for n in longer)
    series = [
        ("1/N MLPs", PPU_MLP, "#d62728", 7),
        ("1/N MLPs + 1/N heads", PPU_MLP_HEADS, "#9467bd", 5),
        ("1/N MLPs, more tokens", LONGER, "#e377c2", 13),
    ]
    series = [(t, [n for n in names if n in rows], c, pt) for t, names, c, pt in series]
    series = [x for x in series if x[1]]
    with open(os.path.join(out, "ppl_vs_n.dat"), "w") as f:
        f.write("# block 0: series N seed eval_perplexity (one line per seed); block i + 1: series i's means\n")
        for i, (_, names, _, _) in enumerate(series):
            for n in names:
                k = len(runs[n])
                f.writelines(
                    f"{i} {rows[n]['slicing'].get('slices', 1) * 1.04 ** (j - (k - 1) / 2):.4f} {s} "
                    f"{x['eval_perplexity']:.4f}\n"
                    for j, (s, x) in enumerate(sorted(runs[n].items()))
                )
        for i, (_, names, _, _) in enumerate(series):
            f.write(f"\n\n# series {i} means\n")
            for n in names:
                f.write(f"{i} {rows[n]['slicing'].get('slices', 1)} - {rows[n]['eval_perplexity_mean']:.4f}\n")
    elems = []
    ref = rows.get(REFERENCE)
    if ref:
        lo, hi = min(ref["eval_perplexity"]), max(ref["eval_perplexity"])
        m, k = ref["eval_perplexity_mean"], len(ref["seeds"])
        if k > 1:
            elems.append(
                f"'+' using 1:({lo}):({hi}) with filledcurves fs transparent solid 0.18 noborder "
                f"lc rgb '#2ca02c' title '{REFERENCE}: seed range ({lo:.1f}..{hi:.1f})'"
            )
        seeds = f"mean of {k} seeds" if k > 1 else "one seed"
        elems.append(
            f"{m} with lines dt 2 lw 2.5 lc rgb '#2ca02c' title '{REFERENCE} (every parameter), {seeds}: {m:.2f}'"
        )
    for i, (title, _names, colour, pt) in enumerate(series):
        elems.append(
            f"'ppl_vs_n.dat' index 0 using ($1 == {i} ? $2 : 1/0):4 with points pt {pt} ps 1.1 "
            f"lc rgb '{colour}' notitle"
        )
        elems.append(
            f"'ppl_vs_n.dat' index {1 + i} using 2:4 with linespoints lw 2.5 pt {pt} ps 2 "
            f"lc rgb '{colour}' title '{title}: mean over seeds (line), each seed (small points)'"
        )
    ns = sorted({rows[n]["slicing"].get("slices", 1) for _, names, _, _ in series for n in names}) or [2, 4]
    return "\n".join(
        [
            "set terminal pngcairo size 1000,760 font ',11' noenhanced",
            "set output 'ppl_vs_n.png'",
            (
                'set title "Final eval perplexity of θ vs N (each PPU rank trains 1/N of the sliced layers)\\n'
                f'equal tokens{" except " + more if more else ""}"'
            ),
            "set key outside bottom center vertical maxrows 6 maxcols 1 box; set bmargin 10",
            f"set logscale x 2; set xrange [{min(ns) / 1.5}:{max(ns) * 1.5}]",
            "set xtics (" + ", ".join(f"'{n}' {n}" for n in ns) + ")",
            "set xlabel 'N (slices)'",
            "set ylabel 'eval perplexity'; set autoscale y; set offsets 0, 0, graph 0.08, graph 0.08; set grid",
            "plot " + ", \\\n  ".join(elems) if elems else "",
            "unset logscale x; set offsets 0, 0, 0, 0; set bmargin",
        ]
    )


def plots(out, runs, rows, order, paired, unigram):
    write_curves(out, runs)
    k = rows[order[0]]["world_size"]
    tokens = Counter(rows[n]["tokens"] for n in order).most_common(1)[0][0]
    budget = f"{tokens / 1e6:.1f} M tokens per run (K = {k})" + "".join(
        f", {n}: {rows[n]['tokens'] / 1e6:.1f} M ({rows[n]['tokens'] / tokens:.2g}x)"
        for n in order
        if abs(rows[n]["tokens"] / tokens - 1) > 0.01
    )
    with open(os.path.join(out, "paired.dat"), "w") as f:
        f.write("# index run mean ci_low ci_high (final eval loss − reference, nats)\n")
        for i, (n, p) in enumerate(paired.items()):
            lo, hi = p["ci95"] or ("NaN", "NaN")
            f.write(f"{i} {n} {p['mean'] if p['mean'] is not None else 'NaN'} {lo} {hi}\n")
    with open(os.path.join(out, "paired-seeds.dat"), "w") as f:
        f.write("# x run seed difference\n")
        for i, (n, p) in enumerate(paired.items()):
            f.writelines(
                f"{i - 0.15 + 0.1 * j:.3f} {n} {s} {d}\n"
                for j, (s, d) in enumerate(zip(p["seeds"], p["differences"], strict=True))
            )
    script = [
        "# Written by report.py; `gnuplot plots.gp` in this directory redraws the plots.",
        "set terminal pngcairo size 1700,800 font ',11' noenhanced",
        "set grid",
        "set key inside top right vertical box opaque samplen 3",
        loss_plots(runs, order, unigram, budget),
        "set autoscale",
        "set terminal pngcairo size 1100,680 font ',11' noenhanced",
    ]
    if paired:
        script += [paired_plot(paired), "unset y2tics; unset y2label; unset link y2; set bmargin"]
    script += [
        "set autoscale; set xtics autofreq norotate",
        memory_plot(rows, order, out),
        "set autoscale; set xtics autofreq norotate",
        ppl_plot(rows, runs, out, tokens),
    ]
    with open(os.path.join(out, "plots.gp"), "w") as f:
        f.write("\n".join(script) + "\n")
    try:
        subprocess.run(["gnuplot", "plots.gp"], cwd=out, check=True)
    except FileNotFoundError:
        die("gnuplot not found (scripts/install-deps.sh --test installs it); the tables are written, the plots not")
    except subprocess.CalledProcessError as e:
        die(f"gnuplot failed on {os.path.join(out, 'plots.gp')} (exit {e.returncode})")


# ---------------------------------------------------------------------------------------------


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py OUT_DIR")
    out = sys.argv[1]
    grid = read_grid()
    unigram = unigram_entropy(os.path.join(out, "corpus", "data"))
    runs = load_runs(out)
    grid_names = [n for n, _ in grid]
    order = [n for n in grid_names if n in runs] + sorted(n for n in runs if n not in grid_names)
    rows = {n: row_summary(n, runs[n]) for n in order}
    ks = {r["world_size"] for r in rows.values()}
    if len(ks) > 1:
        die(f"runs under {out}/runs mix world sizes {sorted(ks)}; the study compares at one K")
    paired = {}
    for n, tags in grid:
        if "paired" in tags and n != REFERENCE and n in runs:
            paired[n] = paired_stats(n, runs[n], runs.get(REFERENCE, {}))
    write_table(out, order, rows)
    write_paired(out, paired)
    tokens = Counter(r["tokens"] for r in rows.values()).most_common(1)[0][0]
    ref = rows.get(REFERENCE)
    for r in rows.values():
        b = r["state_bytes"]
        r["device_state_bytes"] = sum(b[c] for c in COMPONENTS if c not in HOST)
        r["host_state_bytes"] = sum(b[c] for c in HOST)
        if ref:
            r["state_vs_reference"] = b["total"] / ref["state_bytes"]["total"] - 1
            r["device_state_vs_reference"] = (
                r["device_state_bytes"] / (sum(ref["state_bytes"][c] for c in COMPONENTS if c not in HOST)) - 1
            )
    summary = {
        "study": {
            "world_size": ks.pop(),
            "tokens_per_run": tokens,
            "reference": REFERENCE,
            "host_components": sorted(HOST),
            "rows": order,
            "t_quantiles": {"t975_by_df": T975, "t80_by_df": T80},
        },
        "unigram": unigram,
        "runs": rows,
        "paired": paired,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    plots(out, runs, rows, order, paired, unigram["nats_per_token"])
    print(pathlib.Path(out, "table.md").read_text(), end="")
    print()
    print(pathlib.Path(out, "paired.md").read_text(), end="")
    print(
        f"\nunigram entropy of val under train counts: {unigram['nats_per_token']:.4f} nats/token "
        f"(perplexity {unigram['perplexity']:.1f})"
    )


if __name__ == "__main__":
    main()
