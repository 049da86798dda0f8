#!/usr/bin/env python3
"""Writes the study's table and plots from the finished runs of run.sh.

Contract: `report.py OUT` reads OUT/runs/NAME-sSEED/{rank-*.json, run.log, rusage, done} and
writes OUT/table.md (one row per grid row, seeds averaged, spread shown), OUT/summary.json (the
numbers behind it), OUT/*.dat and, with gnuplot, OUT/loss_vs_tokens.png, OUT/loss_vs_flops.png,
OUT/memory.png, OUT/ppl_vs_n.png and, when the grid's `-noclip` rows ran, OUT/clipping.png. Fields used from the rank summaries: eval_loss,
eval_perplexity, tokens, steps, world_size, flops_executed, flops_full_backward,
flops_saved_fraction, state_bytes, bytes_sent, seconds. Eval curves come from rank 0's
"eval step N loss X" log lines (evaluations of the global θ, the same on every rank). Exits non-zero naming the run when an input is missing.
"""
import glob
import json
import math
import os
import re
import subprocess
import sys

EVAL = re.compile(r"^\[rank 0\].* eval step (\d+) loss ([0-9.]+)")
COMPONENTS = ["weights", "gradients", "inner_optimizer", "outer_optimizer", "offloaded"]


def load_run(d):
    ranks = sorted(glob.glob(os.path.join(d, "rank-*.json")))
    if not ranks:
        sys.exit(f"report.py: run {d} has no rank-*.json summary")
    s = [json.load(open(p)) for p in ranks]
    status, peak, wall = open(os.path.join(d, "rusage")).read().split()
    curve = []
    for line in open(os.path.join(d, "run.log"), errors="replace"):
        m = EVAL.match(line)
        if m:
            curve.append((int(m.group(1)), float(m.group(2))))
    r0 = s[0]
    k = r0["world_size"]
    tok_per_step = r0["tokens"] / r0["steps"] * k
    flops_per_step = r0["flops_executed"] / r0["steps"]
    curve = [(n, n * tok_per_step, n * flops_per_step, loss) for n, loss in curve]
    curve.append((r0["steps"], r0["steps"] * tok_per_step, r0["flops_executed"], r0["eval_loss"]))
    return {
        "eval_loss": r0["eval_loss"], "eval_perplexity": r0["eval_perplexity"],
        "tokens": r0["tokens"] * k, "flops_executed": r0["flops_executed"],
        "flops_full_backward": r0["flops_full_backward"], "flops_saved": r0["flops_saved_fraction"],
        "state": {c: max(x["state_bytes"].get(c, 0) for x in s) for c in COMPONENTS},
        "state_total": max(x["state_bytes"]["total"] for x in s),
        "bytes_sent": max(x["bytes_sent"] for x in s), "peak_rss": int(peak), "wall": float(wall),
        "curve": curve, "slices": r0.get("slicing", {}).get("slices", 1),
        "mode": r0.get("slicing", {}).get("mode", "none"), "method": r0["method"],
        "jacobian": r0.get("slicing", {}).get("jacobian", "full"),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py OUT_DIR")
    out = sys.argv[1]
    runs = {}
    for d in sorted(glob.glob(os.path.join(out, "runs", "*-s*"))):
        if not os.path.exists(os.path.join(d, "done")):
            continue
        name, seed = os.path.basename(d).rsplit("-s", 1)
        runs.setdefault(name, []).append((int(seed), load_run(d)))
    if not runs:
        sys.exit(f"report.py: no finished run under {out}/runs")
    mb = 1 / 2**20
    rows = ["| run | seeds | eval ppl of θ | tokens | FLOPs executed / rank | FLOPs saved | state / rank (MiB) | peak RSS / rank (MiB) | sent / rank (MiB) | wall (s) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for name, rs in runs.items():
        rs.sort()
        ppl = [r["eval_perplexity"] for _, r in rs]
        mean = sum(ppl) / len(ppl)
        spread = f" ± {(max(ppl) - min(ppl)) / 2:.2f}" if len(ppl) > 1 else ""
        r = rs[0][1]
        rows.append(f"| {name} | {','.join(str(s) for s, _ in rs)} | {mean:.2f}{spread} | {r['tokens']:.3g} | "
                    f"{r['flops_executed']:.3g} | {100 * r['flops_saved']:.1f}% | {r['state_total'] * mb:.2f} | "
                    f"{r['peak_rss'] * mb:.0f} | {r['bytes_sent'] * mb:.1f} | {sum(x['wall'] for _, x in rs) / len(rs):.0f} |")
        summary[name] = {"seeds": [s for s, _ in rs], "eval_perplexity": ppl,
                         **{k: v for k, v in r.items() if k != "curve"}}
        with open(os.path.join(out, f"curve-{name}.dat"), "w") as f:
            f.write("# step tokens flops_per_rank eval_loss (seed %d)\n" % rs[0][0])
            for p in r["curve"]:
                f.write("%d %.6g %.6g %.6f\n" % p)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "memory.dat"), "w") as f:
        f.write("run " + " ".join(COMPONENTS) + "\n")
        for name, rs in runs.items():
            if name.endswith(NOCLIP):  # the same state as its clipped twin
                continue
            f.write(name + " " + " ".join("%.4f" % (rs[0][1]["state"][c] * mb) for c in COMPONENTS) + "\n")
    with open(os.path.join(out, "ppl_vs_n.dat"), "w") as f:
        f.write("# mode N mean_ppl; 'reference' is Streaming DiLoCo (every parameter on every rank)\n")
        if "streaming-diloco" in runs:
            rs = runs["streaming-diloco"]
            ppl = [x["eval_perplexity"] for _, x in rs]
            f.write(f"reference 1 {sum(ppl) / len(ppl):.4f} {(max(ppl) - min(ppl)) / 2:.4f} {len(ppl)}\n")
        for name, rs in sorted(runs.items(), key=lambda kv: (kv[1][0][1]["mode"], kv[1][0][1]["slices"])):
            r = rs[0][1]
            # App. D's variants and the clipping check are not points of N
            if r["method"] == "ppu" and r["jacobian"] == "full" and not name.endswith(NOCLIP):
                ppl = sum(x["eval_perplexity"] for _, x in rs) / len(rs)
                f.write(f"{r['mode']} {r['slices']} {ppl:.4f}\n")
    plot(out, list(runs))
    if any(n + NOCLIP in runs for n in runs):
        plot_clipping(out, runs)
    print(open(os.path.join(out, "table.md")).read(), end="")


# The loss plots have two panels: every method at equal tokens (left), and the ablations next
# to the PPU rows they change (right, zoomed to their range). Rows absent from a run are skipped.
METHODS = ["ddp", "diloco", "streaming-diloco", "ppu-mlp-2", "ppu-mlp-4", "ppu-mlp-8", "ppu-mlp-heads-2",
           "ppu-mlp-heads-4"]
ABLATIONS = ["ppu-mlp-4", "ppu-mlp-heads-4", "ppu-wo-sliced", "ppu-horizontal", "ppu-detach-all-but-k",
             "ppu-k-plus-random"]


# One colour and point type per row, the same in every panel.
COLOURS = ["#000000", "#1f77b4", "#17becf", "#d62728", "#ff7f0e", "#8c564b", "#e377c2", "#9467bd", "#2ca02c",
           "#bcbd22", "#7f7f7f", "#aec7e8"]


def curve_plot(names, present, x, scale):
    styles = []
    for n in (k for k in names if k in present):
        i = (METHODS + ABLATIONS[2:]).index(n)
        dashed = n.startswith("ppu-") and ("heads" in n or n in ABLATIONS[2:])
        styles.append(f"'curve-{n}.dat' using (${x}/{scale}):4 with linespoints lw 2 pt {i + 1} "
                      f"lc rgb '{COLOURS[i]}' dt {2 if dashed else 1} title '{n}'")
    return "plot " + ", ".join(styles) if styles else ""


def plot(out, names):
    present = set(names)
    losses = [float(l.split()[3]) for n in ABLATIONS if n in present
              for l in open(os.path.join(out, f"curve-{n}.dat")) if not l.startswith("#")]
    ablation_floor = f"{min(losses) - 0.05:.3f}" if losses else "*"
    panels = []
    for x, scale, unit, what, fname in [(2, "1e6", "tokens, all ranks (millions)", "tokens", "loss_vs_tokens.png"),
                                        (3, "1e12", "FLOPs executed per rank (10^12)", "FLOPs executed per rank",
                                         "loss_vs_flops.png")]:
        panels.append(f"""
set output '{fname}'
set multiplot layout 1,2 title "Eval loss of the global θ vs {what}, K = 8 ranks, equal tokens"
set title 'methods'; set xlabel '{unit}'; set ylabel 'eval loss (nats/token)'; set autoscale y
set key top right box opaque
{curve_plot(METHODS, present, x, scale)}
set title 'ablations (App. A.2, D) and their references'; set ylabel ''; set yrange [{ablation_floor}:*]
set key top right box opaque
{curve_plot(ABLATIONS, present, x, scale)}
unset multiplot; set autoscale y
""")
    sd = [l.split() for l in open(os.path.join(out, "ppl_vs_n.dat")) if l.startswith("reference ")]
    sd_line = ""
    if sd:
        mean, half, n = sd[0][2], float(sd[0][3]), sd[0][4]
        sd_line = (f"{mean} with lines dt 2 lw 2 lc rgb '#17becf' title 'Streaming DiLoCo (every parameter), "
                   f"mean of {n} seeds ± {half:.1f}', ")
        if half > 0:
            sd_line += (f"{float(mean) - half} with lines dt 3 lc rgb '#17becf' notitle, "
                        f"{float(mean) + half} with lines dt 3 lc rgb '#17becf' notitle, ")
    script = f"""
set terminal pngcairo size 1400,650 font ',11' noenhanced
set key bottom left box opaque
set grid
{''.join(panels)}
set terminal pngcairo size 1000,600 font ',11' noenhanced
set output 'memory.png'
set title 'Training-state memory per rank by component (measured from the tensors)'
set key outside right; set ylabel 'MiB'; set xlabel ''; set yrange [0:*]
set style data histograms; set style histogram rowstacked; set style fill solid 0.8 border -1
set boxwidth 0.7; set xtics rotate by -30
plot for [c=2:6] 'memory.dat' using c:xtic(1) title columnheader(c)
set output 'ppl_vs_n.png'
set title 'Eval perplexity of θ vs N (PPU), equal tokens'
set key below box; set bmargin 9; set style data linespoints; set xtics norotate; set logscale x 2; set autoscale y
set xrange [1.6:10]; set xtics (2, 4, 8)
set xlabel 'N (slices)'; set ylabel 'eval perplexity'
plot {sd_line}'ppl_vs_n.dat' using 2:(strcol(1) eq "mlp" ? $3 : 1/0) title '1/N MLPs (N = 2: mean of its seeds)' with linespoints lw 2 pt 7 lc rgb '#d62728', \\
     '' using 2:(strcol(1) eq "mlp+heads" ? $3 : 1/0) title '1/N MLPs + 1/N heads' with linespoints lw 2 pt 5 dt 2 lc rgb '#9467bd'
"""
    subprocess.run(["gnuplot"], input=script, text=True, cwd=out, check=True)


NOCLIP = "-noclip"


def plot_clipping(out, runs):
    """clipping.png: each row that has a `-noclip` twin, clipped (solid) and not (dashed)."""
    pairs = [n for n in runs if not n.endswith(NOCLIP) and n + NOCLIP in runs]
    styles = []
    for i, n in enumerate(pairs):
        for suffix, dt in [("", 1), (NOCLIP, 2)]:
            styles.append(f"'curve-{n}{suffix}.dat' using ($2/1e6):4 with linespoints lw 2 pt {i + 4} "
                          f"lc rgb '{COLOURS[i + 3]}' dt {dt} title '{n}{suffix or ' (clip 1.0)'}'")
    script = f"""
set terminal pngcairo size 1000,600 font ',11' noenhanced
set output 'clipping.png'
set title 'Eval loss of θ with the inner gradient clipped at 1.0 (solid) and not clipped (dashed)'
set grid; set key top right box opaque
set xlabel 'tokens, all ranks (millions)'; set ylabel 'eval loss (nats/token)'
plot {", ".join(styles)}
"""
    subprocess.run(["gnuplot"], input=script, text=True, cwd=out, check=True)


if __name__ == "__main__":
    main()
