#!/usr/bin/env python3
"""Prints PPU's gap to Streaming DiLoCo by owners per slice: the grid's pairs at K = 8 and owners.sh's at K = 4.

Contract: `owners.py OUT` reads run.sh's runs (OUT/runs, K = 8) and owners.sh's (OUT/owners/runs,
K = 4) with report.py's loader, pairs each PPU MLP row with streaming-diloco of the same K seed by
seed and analyses every pair as one family (report.paired_family: Holm-corrected verdicts,
Bonferroni intervals, exact detectable sizes, over all (K, N) pairs that have two or more seeds),
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
    """{key: (K, N, tokens, (reference, row runs, reference runs))} for every PPU MLP row under
    OUT/runs that has a reference."""
    runs = report.load_runs(out)
    ref = runs.get(report.REFERENCE, {})
    found = {}
    for name, n in ROWS:
        if name in runs and ref:
            any_run = next(iter(runs[name].values()))
            k = any_run.world_size
            found[f"K{k}-{name}"] = (k, n, any_run.tokens, (report.REFERENCE, runs[name], ref))
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
            "(PPU − Streaming DiLoCo, nats) | mean d | Bonferroni interval | verdict (Holm) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    found = {key: x for d in sets for key, x in pairs(d).items()}
    family = report.paired_family({key: x[3] for key, x in found.items()})
    for key, (k, n, tokens, _) in sorted(found.items(), key=lambda kv: (kv[1][0] // kv[1][1], kv[1][0])):
        p = family[key]
        if not p["n"]:
            continue
        ds = ", ".join(report.fmt(x) for x in p["differences"])
        ci = f"[{report.fmt(p['ci'][0])}, {report.fmt(p['ci'][1])}]" if p["ci"] else "n/a"
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
