#!/usr/bin/env python3
"""The study tests' checks of what the study's scripts wrote (quick_test.sh, gpu_study_test.sh),
reading rank summaries through python/ppu (checked against the contract: the test's own build
wrote them) and report.py's summary.json through report.py's records. Exits 1 with the failed
check (an AssertionError or ContractError) when one fails.

  check_outputs.py rank-summaries DIR RANKS    every rank's summary of ppu-launch --summary-dir
                                               DIR (RANKS of them): eval perplexity > 1, tokens > 0
  check_outputs.py report-runs SUMMARY_JSON "NAME..."
                                               report.py's summary.json: a run per NAME, no other,
                                               each with a peak RSS over 1 MiB and bytes sent
  check_outputs.py gpu-study STUDY_JSON        bench/gpu/study.py's study.json (the test's tiny
                                               shape: K = 2, eval every 20 of 60 steps): both runs,
                                               each curve ending at its summary's final eval loss,
                                               PPU training fewer parameters, not stopped
"""

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "study"))
import report  # bench/study/report.py: summary.json's records
from ppu import summary


def rank_summaries(directory, ranks):
    for s in summary.load_dir(directory, ranks=int(ranks)):
        assert s.eval_perplexity > 1 and s.tokens > 0, f"{s!r}: eval perplexity {s.eval_perplexity}, tokens {s.tokens}"


def report_runs(path, names):
    with open(path) as f:
        runs = json.load(f)["runs"]
    assert sorted(runs) == sorted(names.split()), sorted(runs)
    for name, row in runs.items():
        r = report.Row(**row)
        assert r.peak_rss > 1 << 20 and r.bytes_sent > 0, f"{name}: peak RSS {r.peak_rss}, sent {r.bytes_sent}"


def gpu_study(path):
    with open(path) as f:
        d = json.load(f)
    runs = d["results"]
    assert sorted(runs) == ["ppu-mlp-2", "streaming-diloco"], sorted(runs)
    ranks0 = {key: summary.of(r["summary"], where=f"{path}: {key}") for key, r in runs.items()}
    for key, r in runs.items():
        steps = [s for s, _ in r["curve"]]
        assert steps == [20, 40, 60], steps
        assert r["curve"][-1][1] == ranks0[key].eval_loss
        assert ranks0[key].world_size == 2
    assert ranks0["ppu-mlp-2"].trainable_params < ranks0["streaming-diloco"].trainable_params
    assert d["stopped"] == ""


CHECKS = {"rank-summaries": rank_summaries, "report-runs": report_runs, "gpu-study": gpu_study}

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in CHECKS:
        sys.exit(f"usage: check_outputs.py {{{' | '.join(CHECKS)}}} ARGS... (see its docstring)")
    CHECKS[sys.argv[1]](*sys.argv[2:])
