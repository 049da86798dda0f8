#!/usr/bin/env python3
"""Quorum sync against sync_mode all on the study's config (issue 58's quality measurement).

usage: python3 bench/study/quorum_study.py [--out DIR] [--corpus DIR] [--seeds 0,1,2,3,4] [--arms A,B]
                                           [--report-only]
       (as root: the straggler arm holds a rank in a CPU cgroup; PPU_BUILD as run.sh)

The study's ppu-mlp-2 row (study.yaml, K = 8, grid.tsv's keys, the study's inner lr, one kernel
path) under outer.sync_mode quorum, seed by seed, in two arms:
  quorum            every rank at full speed
  quorum-straggler  rank 7 held at 10 % of one core from its start (bench/straggler/cpu_cap.py)
                    (it sits out sync points; its late work is merged, the default)
  quorum-straggler-drop  the same with outer.quorum_late_work drop
Each is paired seed by seed with the same row under sync_mode all, the study's own runs in
docs/study/grid-v2/runs (same corpus, checked by MANIFEST; seed s is the same θ and data). A
straggler does not change all's result: every rank trains every step whatever its speed (the
straggler bench's capped all rows end on the uncapped row's loss). The statistics are the study's
(stats.py) under the plans declared before the runs: quorum_analysis.yaml (the first two arms
against all, Holm over the two, TOST at ±0.05 nats) and quorum_drop_analysis.yaml (drop against
all and against merge). Resumable: a run with OUT/runs/ARM-sSEED/done is kept.
Writes OUT/quorum.json and OUT/quorum.md (the table and the verdicts) and prints the table.
The report needs scipy (Debian's /usr/bin/python3; scripts/install-deps.sh --test).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "python"), os.path.join(ROOT, "bench", "chaos"), os.path.join(ROOT, "tests", "engine"),
                os.path.join(ROOT, "bench", "straggler")]  # fmt: skip

from cpu_cap import run_capped
from ppu import choices, files, summary
from ppu.record import ContractError

ALL, QUORUM = choices.names("outer.sync_mode")
REFERENCE_DIR = os.path.join(ROOT, "docs", "study", "grid-v2")
ROW = "ppu-mlp-2"  # the grid row the arms run, and the reference runs they are paired with
K = 8
SLOW_RANK = K - 1
SLOW_SHARE = 0.1
MERGE, DROP = choices.names("outer.quorum_late_work")
STRAGGLER = f"{QUORUM}-straggler"
STRAGGLER_DROP = f"{STRAGGLER}-{DROP}"
# arm -> (the slow rank's share of a core, extra config keys)
ARMS = {QUORUM: (None, []), STRAGGLER: (SLOW_SHARE, []),
        STRAGGLER_DROP: (SLOW_SHARE, [f"outer.quorum_late_work={DROP}"])}  # fmt: skip
# Each family's plan, declared before its runs: comparisons (arm, reference arm or ALL).
FAMILIES = {
    "quorum_analysis.yaml": [(QUORUM, ALL), (STRAGGLER, ALL)],
    "quorum_drop_analysis.yaml": [(STRAGGLER_DROP, ALL), (STRAGGLER_DROP, STRAGGLER)],
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "study", "quorum"))
    p.add_argument("--corpus", default=os.path.join(ROOT, "out", "study-corpus"))
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--arms", default=",".join(ARMS), help="the arms to run (the report shows every arm it finds)")
    p.add_argument("--report-only", action="store_true")
    return p.parse_args()


def pinned_env():
    """This environment with the study's kernel pin exported by kernel_pin.sh, which alone spells
    it (and stops on a CPU without AVX2 and FMA)."""
    script = f'source "{HERE}/kernel_pin.sh" && study_pin_kernels quorum_study.py && env -0'
    out = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, check=True).stdout.decode()
    return dict(kv.split("=", 1) for kv in out.split("\0") if "=" in kv)


def row_sets(name):
    """grid.tsv's --set keys of row `name` (read, not copied, so that the arms run the row's keys)."""
    with open(os.path.join(HERE, "grid.tsv")) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0] == name:
                return cols[2].split()
    sys.exit(f"quorum_study.py: no row {name} in grid.tsv")


def check_corpus(corpus):
    def manifest(path):
        with open(os.path.join(path, "MANIFEST")) as f:
            return [line for line in f if not line.startswith("wrote ")]

    if not os.path.exists(os.path.join(corpus, "MANIFEST")):
        sys.exit(f"quorum_study.py: no corpus at {corpus}; build it: bash bench/study/corpus.sh --full {corpus}")
    if manifest(corpus) != manifest(REFERENCE_DIR):
        sys.exit(f"quorum_study.py: {corpus} is not the corpus of {REFERENCE_DIR} (MANIFEST differs)")


def run_one(build, corpus, arm, seed, out):
    work = os.path.join(out, "runs", f"{arm}-s{seed}")
    if os.path.exists(os.path.join(work, "done")):
        return
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(REFERENCE_DIR, "inner_lr")) as f:
        inner_lr = f.read().strip()
    keys = [*row_sets(ROW), f"ranks={K}", f"data.path={os.path.join(corpus, 'data')}", f"train.seed={seed}",
            f"inner.lr={inner_lr}", f"outer.sync_mode={QUORUM}", *ARMS[arm][1]]  # fmt: skip
    cmd = [os.path.join(build, "bin", "ppu-launch"), "--nproc", str(K), "--config", os.path.join(HERE, "study.yaml"),
           "--summary-dir", work, *[x for k in keys for x in ("--set", k)]]  # fmt: skip
    env = pinned_env()
    print(f"{arm} seed {seed}: running", flush=True)
    rc, wall = run_capped(cmd, os.path.join(work, "run.log"), SLOW_RANK, ARMS[arm][0], 4 * 3600, env)
    if rc != 0:
        sys.exit(f"quorum_study.py: {arm} seed {seed}: ppu-launch exited {rc}; see {work}/run.log")
    check = subprocess.run([sys.executable, os.path.join(HERE, "summaries.py"), "check-kernels",
                            files.summary_file(work, 0)], check=False, env=env)  # fmt: skip
    if check.returncode != 0:
        sys.exit(f"quorum_study.py: {arm} seed {seed} ran on another kernel path")
    commit = os.path.join(build, "COMMIT")
    if os.path.exists(commit):
        shutil.copy(commit, os.path.join(work, "commit"))
    else:
        with open(os.path.join(work, "commit"), "w") as f:
            subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=f, check=True)
    with open(os.path.join(work, "wall_seconds"), "w") as f:
        f.write(f"{wall:.1f}\n")
    with open(os.path.join(work, "done"), "w"):
        pass
    print(f"{arm} seed {seed}: {wall:.0f} s", flush=True)


def arm_runs(out, arm, seeds):
    runs = {}
    for s in seeds:
        work = os.path.join(out, "runs", f"{arm}-s{s}")
        if os.path.exists(os.path.join(work, "done")):
            with open(os.path.join(work, "wall_seconds")) as f:
                wall = float(f.read())
            runs[s] = (summary.load_dir(work, K, check=False), wall)
    return runs


def reference_runs(seeds):
    runs = {}
    for s in seeds:
        work = os.path.join(REFERENCE_DIR, "runs", f"{ROW}-s{s}")
        runs[s] = (
            summary.load_dir(work, K, check=False),
            summary.load(files.summary_file(work, 0), check=False).seconds,
        )
    return runs


def sat_out(rank_summary):
    """Sync points a rank sat out; 0 in a summary written before sitting out existed."""
    try:
        return rank_summary.outer_sync.sat_out
    except ContractError:
        return 0


def report(out, seeds):
    import stats  # beside this file; needs scipy

    ref = reference_runs(seeds)
    arms = {arm: arm_runs(out, arm, seeds) for arm in ARMS}
    rows = []
    for s in seeds:
        r = {"seed": s, ALL: ref[s][0][0].eval_loss, "all_checksum": ref[s][0][0].param_checksum}
        for arm, runs in arms.items():
            if s not in runs:
                continue
            sums, wall = runs[s]
            slow = sums[SLOW_RANK]
            r[arm] = {
                "loss": sums[0].eval_loss,
                "same_bits_as_all": sums[0].param_checksum == r["all_checksum"],
                "wall_seconds": wall,
                "tokens": sum(x.tokens for x in sums),
                "slow_rank_steps_skipped": slow.outer_sync.steps_skipped,
                "slow_rank_sitting_out": sat_out(slow),
                "slow_rank_share": next(c.share for c in sums[0].outer_sync.ranks if c.rank == SLOW_RANK),
                "grace_closes": sums[0].outer_sync.closed_by_grace,
            }
        rows.append(r)
    all_tokens = sum(x.tokens for x in ref[seeds[0]][0])

    def loss(row, arm):
        return row[ALL] if arm == ALL else row[arm]["loss"]

    verdicts = {}  # plan -> comparison -> verdict
    for plan, comparisons in FAMILIES.items():
        pairs = {}
        for arm, against in comparisons:
            both = [r for r in rows if arm in r and (against == ALL or against in r)]
            pairs[f"{arm} vs {against}"] = ([loss(r, arm) for r in both], [loss(r, against) for r in both])
        verdicts[plan] = stats.family(pairs, stats.read_analysis(os.path.join(HERE, plan)))
    result = {"command": " ".join(sys.argv), "plans": list(FAMILIES), "reference": f"{REFERENCE_DIR}/runs/{ROW}-sS",
              "all_tokens": all_tokens, "rows": rows, "verdicts": verdicts}  # fmt: skip
    with open(os.path.join(out, "quorum.json"), "w") as f:
        json.dump(result, f, indent=1)
    header = (
        "| seed | all: eval loss | quorum: eval loss (same bits) | rank 7 at 10 %, merge: eval loss | "
        "its tokens vs all | rank 7's steps skipped | sync points it sat out | rank 7's share of its slice | "
        "rank 7 at 10 %, drop: eval loss | its tokens vs all | sync points it sat out |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        q, st, dr = r.get(QUORUM), r.get(STRAGGLER), r.get(STRAGGLER_DROP)
        lines.append(
            f"| {r['seed']} | {r[ALL]:.4f} | "
            + (f"{q['loss']:.4f} ({'yes' if q['same_bits_as_all'] else 'no'}) | " if q else "— | ")
            + (
                f"{st['loss']:.4f} | {st['tokens'] / all_tokens:.3f} | {st['slow_rank_steps_skipped']} | "
                f"{st['slow_rank_sitting_out']} | {st['slow_rank_share']:.3f} | "
                if st
                else "— | — | — | — | — | "
            )
            + (
                f"{dr['loss']:.4f} | {dr['tokens'] / all_tokens:.3f} | {dr['slow_rank_sitting_out']} |"
                if dr
                else "— | — | — |"
            )
        )
    for plan, family in verdicts.items():
        lines += ["", f"Plan {plan}:", "",
                  "| comparison | seeds | mean difference | Bonferroni interval | Holm p | TOST p (Holm) | verdict |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for name, v in family.items():
            ci = f"[{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}]" if v.get("ci") else "—"
            p = f"{v['p_holm']:.3g}" if v.get("p_holm") is not None else "—"
            t = f"{v['tost_p_holm']:.3g}" if v.get("tost_p_holm") is not None else "—"
            mean = f"{v['mean']:+.4f}" if v["mean"] is not None else "—"
            lines.append(f"| {name} | {v['n']} | {mean} | {ci} | {p} | {t} | {v['verdict']} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "quorum.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    args = parse_args()
    out = os.path.abspath(args.out)
    seeds = [int(s) for s in args.seeds.split(",")]
    if not args.report_only:
        build = os.environ.get("PPU_BUILD", os.path.join(ROOT, "build"))
        check_corpus(os.path.abspath(args.corpus))
        os.makedirs(os.path.join(out, "runs"), exist_ok=True)
        for arm in args.arms.split(","):  # an arm at a time (each pairs with all on its own)
            if arm not in ARMS:
                sys.exit(f"quorum_study.py: --arms: no arm '{arm}' (known: {', '.join(ARMS)})")
            for s in seeds:
                run_one(build, os.path.abspath(args.corpus), arm, s, out)
    report(out, seeds)


if __name__ == "__main__":
    main()
