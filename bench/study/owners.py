#!/usr/bin/env python3
"""Prints PPU's gap to Streaming DiLoCo by owners per slice: the grid's pairs at K = 8 and owners.sh's at K = 4.

Contract: `owners.py OUT` reads run.sh's runs (OUT/runs, K = 8) and owners.sh's (OUT/owners/runs,
K = 4) with report.py's loader, pairs each PPU MLP row with streaming-diloco of the same K seed by
seed (report.py's statistics: mean difference in final eval loss, 95 % Student-t interval, verdict)
and writes OUT/owners/owners.md, one line per (K, N): owners per slice K / N, the fraction of the
MLP each rank trains 1 / N, tokens, seeds and the paired difference. Rows without a finished run
are left out. Exits non-zero with a message when OUT has neither set of runs.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # the study's loader and statistics, next to this file

ROWS = [("ppu-mlp-2", 2), ("ppu-mlp-4", 4), ("ppu-mlp-8", 8)]


def pairs(out):
    """[(K, N, tokens, paired stats)] for every PPU MLP row under OUT/runs that has a reference."""
    runs = report.load_runs(out)
    ref = runs.get(report.REFERENCE, {})
    found = []
    for name, n in ROWS:
        if name in runs and ref:
            stats = report.paired_stats(name, runs[name], ref)
            if stats["n"]:
                any_run = next(iter(runs[name].values()))
                found.append((any_run["world_size"], n, any_run["tokens"], stats))
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: owners.py OUT_DIR")
    out = sys.argv[1]
    sets = [d for d in (out, os.path.join(out, "owners")) if os.path.isdir(os.path.join(d, "runs"))]
    if not sets:
        report.die(f"neither {out}/runs nor {out}/owners/runs exists (run run.sh, then owners.sh)")
    lines = [
        (
            "| K | N | owners per slice (K/N) | MLP trained per rank | tokens | seeds | d per seed "
            "(PPU − Streaming DiLoCo, nats) | mean d | 95 % interval | verdict |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, n, tokens, p in sorted((x for d in sets for x in pairs(d)), key=lambda x: (x[0] // x[1], x[0])):
        ds = ", ".join(report.fmt(x) for x in p["differences"])
        ci = f"[{report.fmt(p['ci95'][0])}, {report.fmt(p['ci95'][1])}]" if p["ci95"] else "n/a"
        lines.append(
            f"| {k} | {n} | {k // n} | 1/{n} | {tokens / 1e6:.2f} M | {len(p['seeds'])} | {ds} | "
            f"{report.fmt(p['mean'])} | {ci} | {p['verdict']} |"
        )
    os.makedirs(os.path.join(out, "owners"), exist_ok=True)
    with open(os.path.join(out, "owners", "owners.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
