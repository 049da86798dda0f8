#!/usr/bin/python3
"""study_stats: bench/study/stats.py and report.py's pairing rules, against answers computed another way.

- p-values of the paired t-test: closed forms of Student's t for 1 and 2 degrees of freedom
  (two-sided p = 1 − (2/π)·atan|t| and 1 − |t|/√(t² + 2)); the v1 grid's three differences.
- Holm: hand-computed adjusted p-values (order, monotonicity, the cap at 1) and a verdict that the
  correction turns from "worse" into "not distinguishable".
- TOST: a case inside the margin that passes, one on the margin that fails, and the v1 grid's 1/2
  MLPs, which passes alone (p 0.049) and fails in a family of three; p from the df = 2 closed form.
- Power: the exact power of the two-sided paired t-test at the detectable effect, integrated
  numerically over the χ² of the sd (no noncentral t), equals the declared 0.80 within 1e-6; and
  the old (t.975 + t.80)·sd/√n size has 76.6 % power at n = 3 (issue 44).
- Bonferroni intervals: mean ± t_{1 − α/(2m), n−1}·sd/√n.
- report.py: `vs=NAME` references, and refusal (exit non-zero, naming both runs) of fabricated runs
  on different kernel paths and of runs without kernel_path; equal paths give table.md and paired.md.
Usage: stats_test.py SOURCE_DIR. Prints "PASS study-stats" or "FAIL: ...". Needs Debian's
/usr/bin/python3 with python3-scipy and python3-yaml (scripts/install-deps.sh --test).
"""

import json
import math
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import types

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STUDY = os.path.join(SRC, "bench", "study")
sys.path.insert(0, STUDY)
sys.path.insert(0, os.path.join(SRC, "python"))
from ppu import files

try:
    import numpy as np
    import report
    import stats
    from scipy import integrate
    from scipy import stats as sps
except ImportError as e:
    print(f"FAIL: {e} (python3-scipy and python3-yaml for {sys.executable}: scripts/install-deps.sh --test)")
    sys.exit(1)

checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        print(f"FAIL: {what}")
        sys.exit(1)


def close(a, b, tol, what):
    check(a is not None and abs(a - b) <= tol, f"{what}: {a} vs {b} (tolerance {tol})")


PLAN = {"equivalence_margin_nats": 0.05, "alpha": 0.05, "power": 0.8, "correction": "holm"}

# The v1 grid (docs/study/grid-2026-11-24): final eval losses, seeds 0, 1, 2.
SD = [3.7630107179284096, 3.736911103129387, 3.7583900913596153]
V1 = {
    "ppu-mlp-2": [3.800392061471939, 3.7331670969724655, 3.760021284222603],
    "ppu-mlp-4": [4.121588051319122, 3.8912324383854866, 4.0258700624108315],
    "ppu-mlp-heads-4": [4.204305946826935, 4.153228387236595, 4.162245579063892],
}


def t_stat(d):
    n = len(d)
    m = sum(d) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1))
    return m, sd, m / (sd / math.sqrt(n))


def p_df2(t):  # two-sided, Student t with 2 degrees of freedom
    return 1 - abs(t) / math.sqrt(t * t + 2)


def cdf_df2(t):
    return 0.5 + t / (2 * math.sqrt(t * t + 2))


def p_df1(t):  # two-sided, Cauchy
    return 1 - 2 / math.pi * math.atan(abs(t))


# --- paired t-test p-values ------------------------------------------------------------------
one = stats.family({n: (v, SD) for n, v in V1.items()}, PLAN)
for name, losses in V1.items():
    d = [a - b for a, b in zip(losses, SD, strict=True)]
    m, sd, t = t_stat(d)
    close(one[name]["p"], p_df2(t), 1e-12, f"{name}: p of the paired t-test")
    close(one[name]["mean"], m, 1e-12, f"{name}: mean difference")
    close(one[name]["sd"], sd, 1e-12, f"{name}: sd of the differences")
two = stats.family({"x": ([1.0, 2.3], [0.9, 2.0])}, PLAN)["x"]
m, sd, t = t_stat([0.1, 0.3])
close(two["p"], p_df1(t), 1e-12, "n = 2: p of the paired t-test (Cauchy)")

# --- Holm ------------------------------------------------------------------------------------
adj = stats.holm([0.01, 0.04, 0.03, 0.005])
# sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> raised to 0.06
for a, b in zip(adj, [0.03, 0.06, 0.06, 0.02], strict=True):
    close(a, b, 1e-15, f"Holm-adjusted p {adj}")
check(stats.holm([0.6, 0.5]) == [1.0, 1.0], "Holm caps adjusted p at 1")
check(stats.holm([]) == [], "Holm of an empty family")
# v1: 1/4 MLPs has p 0.0479 (worse alone), second smallest of three: 2·p = 0.096 -> not distinguishable
alone = stats.family({"ppu-mlp-4": (V1["ppu-mlp-4"], SD)}, PLAN)["ppu-mlp-4"]
check(alone["verdict"] == "worse", f"1/4 MLPs alone: {alone['verdict']}")
fam = one["ppu-mlp-4"]
close(fam["p_holm"], 2 * fam["p"], 1e-15, "1/4 MLPs: Holm multiplier 2 (second smallest of 3)")
check(fam["verdict"].startswith("not distinguishable (detectable size "), f"1/4 MLPs in the family: {fam['verdict']}")
close(one["ppu-mlp-heads-4"]["p_holm"], 3 * one["ppu-mlp-heads-4"]["p"], 1e-15, "1/4 + heads: multiplier 3")
check(one["ppu-mlp-heads-4"]["verdict"] == "worse", "1/4 + heads stays worse")
check(all(r["family_size"] == 3 for r in one.values()), "family size 3")
better = stats.family({"b": ([1.0, 1.1, 1.2], [1.5, 1.62, 1.69])}, PLAN)["b"]
check(better["verdict"] == "better", f"a clear improvement: {better['verdict']}")

# --- TOST ------------------------------------------------------------------------------------
inside = [0.010, -0.008, 0.002]
m, sd, _ = t_stat(inside)
se = sd / math.sqrt(3)
want = max(1 - cdf_df2((m + 0.05) / se), cdf_df2((m - 0.05) / se))
close(stats.tost_p(inside, 0.05), want, 1e-12, "TOST p inside the margin")
check(want < 0.05 / 1, f"the TOST case inside the margin has p {want}")
r = stats.family({"in": ([1 + x for x in inside], [1.0] * 3)}, PLAN)["in"]
check(r["verdict"] == "equivalent within ±0.05 nats", f"differences {inside}: {r['verdict']}")
# a small difference the seeds do resolve: worse, though inside the margin (TOST passes too)
small = stats.family({"s": ([1.010, 1.012, 1.008], [1.0] * 3)}, PLAN)["s"]
check(small["verdict"] == "worse" and small["tost_p_holm"] < 0.05, f"0.010 ± 0.002: {small['verdict']}")
on_edge = [0.04, 0.06, 0.05]  # mean exactly at the margin: the upper one-sided t is 0, p = 0.5
close(stats.tost_p(on_edge, 0.05), 0.5, 1e-9, "TOST p on the margin")
r = stats.family({"edge": ([1 + x for x in on_edge], [1.0] * 3)}, PLAN)["edge"]
check(r["verdict"].startswith("not distinguishable") or r["verdict"] == "worse", f"on the margin: {r['verdict']}")
check(not r["verdict"].startswith("equivalent"), "a mean on the margin is not equivalent")
d2 = [a - b for a, b in zip(V1["ppu-mlp-2"], SD, strict=True)]
m, sd, _ = t_stat(d2)
se = sd / math.sqrt(3)
want = max(1 - cdf_df2((m + 0.05) / se), cdf_df2((m - 0.05) / se))
close(stats.tost_p(d2, 0.05), want, 1e-12, "v1 1/2 MLPs: TOST p")
check(want < 0.05, f"v1 1/2 MLPs passes TOST alone (p {want})")
alone = stats.family({"ppu-mlp-2": (V1["ppu-mlp-2"], SD)}, PLAN)["ppu-mlp-2"]
check(alone["verdict"] == "equivalent within ±0.05 nats", f"v1 1/2 MLPs alone: {alone['verdict']}")
check(one["ppu-mlp-2"]["tost_p_holm"] > 0.05, "v1 1/2 MLPs fails TOST in the family of three")
check(one["ppu-mlp-2"]["verdict"].startswith("not distinguishable"), f"v1 1/2 MLPs: {one['ppu-mlp-2']['verdict']}")


# --- exact power, by numerical integration (no noncentral t) ---------------------------------
def power_by_integral(effect, n, alpha):
    """P(|T| > c) with T = (Z + λ)/√(V/ν), Z standard normal, V ~ χ²_ν, λ = effect·√n."""
    nu, lam = n - 1, effect * math.sqrt(n)
    c = sps.t.ppf(1 - alpha / 2, nu)

    def f(v):
        s = c * math.sqrt(v / nu)
        return (sps.norm.sf(s - lam) + sps.norm.cdf(-s - lam)) * sps.chi2.pdf(v, nu)

    # split at the χ² mode region so quad resolves the peak of the density
    parts = [(0, nu), (nu, 10 * nu + 50), (10 * nu + 50, np.inf)]
    return sum(integrate.quad(f, a, b, limit=400, epsabs=1e-13, epsrel=1e-12)[0] for a, b in parts)


for n in (2, 3, 5, 10):
    for alpha in (0.05, 0.05 / 3, 0.05 / 6):
        e = stats.detectable_effect(n, alpha, 0.8)
        close(power_by_integral(e, n, alpha), 0.8, 1e-6, f"power at the detectable effect, n {n}, alpha {alpha:.4g}")
        close(stats.power_two_sided(e, n, alpha), 0.8, 1e-9, f"root of the power equation, n {n}, alpha {alpha:.4g}")
old = (sps.t.ppf(0.975, 2) + sps.t.ppf(0.8, 2)) / math.sqrt(3)  # the v1 approximation, n = 3, in sd
close(power_by_integral(old, 3, 0.05), 0.766, 5e-4, "power of the v1 (t.975 + t.80)·sd/√n size at n = 3")
r = one["ppu-mlp-2"]
close(r["detectable"], r["detectable_effect_sd"] * r["sd"], 1e-15, "detectable size = effect × sd")
close(r["detectable_effect_sd"], stats.detectable_effect(3, 0.05 / 3, 0.8), 1e-12, "detectable effect at alpha/m")

# --- Bonferroni intervals --------------------------------------------------------------------
for name, r in one.items():
    half = sps.t.ppf(1 - 0.05 / 6, 2) * r["sd"] / math.sqrt(3)
    close(r["ci"][0], r["mean"] - half, 1e-12, f"{name}: Bonferroni interval, low end")
    close(r["ci"][1], r["mean"] + half, 1e-12, f"{name}: Bonferroni interval, high end")
    close(r["ci_level"], 1 - 0.05 / 3, 1e-15, f"{name}: interval level")
# one seed: in no family, no verdict
r = stats.family({"a": ([1.0], [0.9]), "b": (V1["ppu-mlp-4"], SD)}, PLAN)
check(r["a"]["verdict"] == "n/a (one seed)" and r["b"]["family_size"] == 1, "one-seed comparisons are not counted")

# --- analysis.yaml ---------------------------------------------------------------------------
plan = stats.read_analysis(os.path.join(STUDY, "analysis.yaml"))
check(plan == PLAN, f"bench/study/analysis.yaml declares {plan}, not {PLAN}")
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "a.yaml")
    for text, word in (
        ("alpha: 0.05\npower: 0.8\ncorrection: holm\n", "equivalence_margin_nats"),
        ("equivalence_margin_nats: 0.05\nalpha: 0.05\npower: 0.8\ncorrection: holm\nextra: 1\n", "extra"),
        ("equivalence_margin_nats: 0.05\nalpha: 0.05\npower: 0.8\ncorrection: bh\n", "bh"),
    ):
        pathlib.Path(bad).write_text(text)
        try:
            stats.read_analysis(bad)
            check(False, f"analysis.yaml {text!r} accepted")
        except stats.AnalysisError as e:
            check(word in str(e), f"analysis.yaml error does not name {word}: {e}")

# --- report.py: references and kernel paths ----------------------------------------------------
grid = [
    ("streaming-diloco", {"paired"}),
    ("ppu-mlp-2", {"paired"}),
    ("streaming-diloco-d48", {"width"}),
    ("ppu-mlp-4-d48", {"paired", "vs=streaming-diloco-d48", "width"}),
    ("ddp", set()),
]
check(
    report.comparisons(grid) == [("ppu-mlp-2", "streaming-diloco"), ("ppu-mlp-4-d48", "streaming-diloco-d48")],
    f"vs= references: {report.comparisons(grid)}",
)

# gap_points: one 1/4-MLPs comparison per model size, with its tokens; 1/2 MLPs, another
# reference method and other optimiser settings are left out.
OPT = {"inner": {"lr": 0.003}, "outer": {"lr": 0.4}}


def gap_row(method, params, tokens, mode="mlp", slices=4, opt=OPT):
    """What gap_points reads of a report.Row."""
    sl = {"mode": mode, "slices": slices} if method == "ppu" else {}
    return types.SimpleNamespace(method=method, slicing=sl, total_params=params, tokens=tokens, optimizer_settings=opt)


gap_rows = {
    "sd-small": gap_row("streaming-diloco", 200, 3.2e6),
    "q-small": gap_row("ppu", 200, 3.2e6),
    "sd": gap_row("streaming-diloco", 600, 9.6e6),
    "q": gap_row("ppu", 600, 9.6e6),
    "half": gap_row("ppu", 600, 9.6e6, slices=2),
    "q-other-opt": gap_row("ppu", 600, 9.6e6, opt={"inner": {"lr": 0.01}, "outer": {"lr": 0.4}}),
    "ddp": gap_row("ddp", 600, 9.6e6),
    "q-vs-ddp": gap_row("ppu", 601, 9.6e6),
}
comparison = {
    "ci": [0.1, 0.3],
    "family_size": 2,
    "mean": 0.2,
    "seeds": [0, 1],
    "differences": [0.19, 0.21],
    "verdict": "worse",
}
gap_paired = {
    "q": comparison | {"reference": "sd"},
    "q-small": comparison | {"reference": "sd-small"},
    "half": comparison | {"reference": "sd"},
    "q-other-opt": comparison | {"reference": "sd"},
    "q-vs-ddp": comparison | {"reference": "ddp"},
}
points = report.gap_points(gap_paired, gap_rows)
check([(k, n, t) for k, n, _, t in points] == [(200, "q-small", 3.2e6), (600, "q", 9.6e6)], f"gap points: {points}")
script = report.gap_plot(points, {"alpha": 0.05}, tempfile.mkdtemp())
check('"600\\n9.60 M tokens" 600' in script, "gap_vs_params.png's axis does not name each size's tokens")

# A rank summary's fields by their names in the contract (report.py's SUMMARY_FIELD, KERNEL, STATE).
F, KERNEL = report.SUMMARY_FIELD, report.KERNEL
PATH_A = {
    KERNEL.cpu_model: "CPU A",
    KERNEL.openblas_core: "Haswell",
    KERNEL.aten_capability: "avx2",
    KERNEL.onednn: False,
}


def fabricate(out, name, seed, loss, kp, method="streaming-diloco"):
    d = os.path.join(out, "runs", f"{name}-s{seed}")
    os.makedirs(d)
    state = {c: 1000.0 for c in report.COMPONENTS} | {report.STATE.total: 5000.0}
    # Only the fields report.py reads: it takes a summary as it is (check=False), as it takes an archived run's.
    s = {
        F.world_size: 1,
        F.eval_loss: loss,
        F.eval_perplexity: math.exp(loss),
        F.tokens: 1000.0,
        F.steps: 10,
        F.flops_executed: 1e9,
        F.flops_full_backward: 1.1e9,
        F.state_bytes: state,
        F.bytes_sent: 100.0,
        F.method: method,
        F.slicing: {"mode": "mlp", "slices": 2, "jacobian": "full"} if method == "ppu" else {},
        F.total_params: 1000,
        F.optimizer_settings: {"inner": {"lr": 0.003, "grad_clip": 0.0}, "outer": {"lr": 0.4, "momentum": 0.9}},
    }
    if kp is not None:
        s[F.kernel_path] = kp
    pathlib.Path(files.summary_file(d, 0)).write_text(json.dumps(s))
    pathlib.Path(d, "run.log").write_text(f"[rank 0] t info eval step 5 loss {loss + 0.5:.4f} ppl 1 of θ\n")
    pathlib.Path(d, "rusage").write_text("0 1048576 1.0\n")
    pathlib.Path(d, "done").touch()


def corpus(out):
    d = os.path.join(out, "corpus", "data")
    os.makedirs(d)
    for split, toks in (("train", [1, 2, 3, 1, 2, 1]), ("val", [1, 2, 3])):
        head = b"PPUTOKS\0" + struct.pack("<IIQQ", 1, 2, len(toks), 8)
        pathlib.Path(d, f"{split}.bin").write_bytes(head.ljust(64, b"\0") + struct.pack(f"<{len(toks)}H", *toks))


def run_report(out):
    return subprocess.run(
        [sys.executable, os.path.join(STUDY, "report.py"), out], capture_output=True, text=True, check=False
    )


with tempfile.TemporaryDirectory() as tmp:
    # two kernel paths: refused, naming both runs
    out = os.path.join(tmp, "mixed")
    corpus(out)
    other = PATH_A | {KERNEL.aten_capability: "avx512", KERNEL.cpu_model: "CPU B"}
    for seed, (a, b) in enumerate([(3.70, 3.75), (3.72, 3.71)]):
        fabricate(out, "streaming-diloco", seed, a, PATH_A)
        fabricate(out, "ppu-mlp-2", seed, b, other if seed == 1 else PATH_A, "ppu")
    r = run_report(out)
    check(r.returncode != 0, "report.py paired runs on different kernel paths")
    check(
        "run ppu-mlp-2 seed 1 ran on OpenBLAS Haswell, ATen avx512, oneDNN off, run ppu-mlp-2 seed 0 on "
        "OpenBLAS Haswell, ATen avx2, oneDNN off (3 on OpenBLAS Haswell, ATen avx2, oneDNN off; 1 on" in r.stderr,
        f"the refusal does not name both runs and the paths: {r.stderr.strip()}",
    )
    check(not os.path.exists(os.path.join(out, "paired.md")), "a refused report wrote paired.md")
    # only the CPU model differs: accepted, and listed
    out = os.path.join(tmp, "cpus")
    corpus(out)
    for seed, (a, b) in enumerate([(3.70, 3.75), (3.72, 3.71), (3.69, 3.74)]):
        fabricate(out, "streaming-diloco", seed, a, PATH_A)
        fabricate(out, "ppu-mlp-2", seed, b, PATH_A | {KERNEL.cpu_model: "CPU B"} if seed == 2 else PATH_A, "ppu")
    r = run_report(out)
    table = pathlib.Path(out, "table.md").read_text() if os.path.exists(os.path.join(out, "table.md")) else ""
    check("CPU A; CPU B" in table, f"table.md does not list both CPU models (exit {r.returncode}: {r.stderr.strip()})")
    check("OpenBLAS Haswell, ATen avx2, oneDNN off | 0.4 | 0.9 | 0.003 | 0 |" in table, "table.md lacks the settings")
    paired = pathlib.Path(out, "paired.md").read_text()
    check("m = 1" in paired and "| ppu-mlp-2 | streaming-diloco | 0,1,2 |" in paired, "paired.md lacks the comparison")
    check(r.returncode == 0, f"report.py on one kernel path exited {r.returncode}: {r.stderr.strip()}")
    # a summary without kernel_path: refused as older than v2
    out = os.path.join(tmp, "old")
    corpus(out)
    fabricate(out, "streaming-diloco", 0, 3.7, None)
    r = run_report(out)
    check(r.returncode != 0 and "predates" in r.stderr and "re-run" in r.stderr, f"old run: {r.stderr.strip()}")

print(f"PASS study-stats: {checks} checks")
