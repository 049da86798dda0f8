"""The study's statistics (report.py): paired differences, multiplicity, power and equivalence.

One comparison is a row against its reference row, seed by seed: d_s = loss(row, s) − loss(ref, s).
A family is every comparison of one report that has at least two paired seeds (m of them); the
settings come from analysis.yaml (alpha, power, the equivalence margin, the correction):

- difference: the paired two-sided t-test (scipy.stats.ttest_rel); its p-values Holm-adjusted over
  the family; verdict "worse"/"better" where the adjusted p is below alpha.
- interval: Bonferroni's simultaneous (1 − alpha/m) Student-t interval of the mean difference
  (Holm's test has no simple interval of its own).
- equivalence: two one-sided t-tests (TOST) against ±margin, p = the larger one-sided p, Holm-
  adjusted over the family; verdict "equivalent within ±margin" where the adjusted p is below
  alpha and no difference was found.
- detectable size: the true mean difference the two-sided paired t-test at the Bonferroni level
  alpha/m detects with the declared power, from the exact power of the test (noncentral t), in
  units of the observed sd of the differences, times that sd.
Otherwise the verdict is "not distinguishable (detectable size X nats)". Nothing stronger.

Needs Debian's python3-scipy (scripts/install-deps.sh --test), which Debian's /usr/bin/python3
imports, and python3-yaml for analysis.yaml.
"""

import math

import numpy as np
import yaml
from scipy import optimize, stats

CORRECTIONS = ("holm",)
ANALYSIS_KEYS = {"equivalence_margin_nats": float, "alpha": float, "power": float, "correction": str}


class AnalysisError(ValueError):
    """analysis.yaml is missing, malformed or asks for what this module does not do."""


def read_analysis(path):
    """analysis.yaml -> {equivalence_margin_nats, alpha, power, correction}, every key required."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise AnalysisError(f"cannot read {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise AnalysisError(f"{path} is not YAML: {e}") from e
    if not isinstance(doc, dict):
        raise AnalysisError(f"{path} is not a mapping of keys to values")
    unknown = sorted(set(doc) - set(ANALYSIS_KEYS))
    if unknown:
        raise AnalysisError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(ANALYSIS_KEYS)})")
    out = {}
    for key, kind in ANALYSIS_KEYS.items():
        if key not in doc:
            raise AnalysisError(f"{path} has no '{key}'")
        v = doc[key]
        if kind is float and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise AnalysisError(f"{path}: {key} is {v!r}, not a number")
        if kind is str and not isinstance(v, str):
            raise AnalysisError(f"{path}: {key} is {v!r}, not a word")
        out[key] = kind(v)
    if not out["equivalence_margin_nats"] > 0:
        raise AnalysisError(f"{path}: equivalence_margin_nats must be > 0")
    if not 0 < out["alpha"] < 0.5:
        raise AnalysisError(f"{path}: alpha must lie in (0, 0.5)")
    if not out["alpha"] < out["power"] < 1:
        raise AnalysisError(f"{path}: power must lie in (alpha, 1)")
    if out["correction"] not in CORRECTIONS:
        raise AnalysisError(f"{path}: correction '{out['correction']}' is not one of {', '.join(CORRECTIONS)}")
    return out


def holm(pvalues):
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest p times (m − i + 1),
    made non-decreasing along that order and capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def power_two_sided(effect, n, alpha):
    """Exact power of the two-sided one-sample (paired) t-test at level alpha with n differences
    whose true mean is `effect` standard deviations: P(|T| > t_{1−alpha/2, n−1}), T ~ noncentral t
    with n − 1 degrees of freedom and noncentrality effect·√n."""
    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = effect * math.sqrt(n)
    # scipy 1.10's Boost noncentral t warns "invalid value" or "divide by zero" for some arguments
    # (df = 1 and 2 among them) while returning correct values (statsmodels issue 8624; the unit
    # test checks them against a numerical integral); the result is checked to be finite.
    with np.errstate(invalid="ignore", divide="ignore"):
        p = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
    if not math.isfinite(p):
        raise ArithmeticError(f"noncentral t power is not finite at effect {effect}, n {n}, alpha {alpha}")
    return p


def detectable_effect(n, alpha, power):
    """The effect (in standard deviations of the differences) at which the two-sided paired t-test
    with n pairs at level alpha has exactly the given power (Brent's root finder)."""
    if n < 2:
        raise ValueError("a t-test needs at least two differences")
    hi = 1.0
    while power_two_sided(hi, n, alpha) < power:
        hi *= 2
        if hi > 1e6:
            raise ArithmeticError(f"no effect reaches power {power} with n {n} at alpha {alpha}")
    return optimize.brentq(lambda e: power_two_sided(e, n, alpha) - power, 0.0, hi, xtol=1e-12, rtol=1e-12)


def t_interval(mean, sd, n, level):
    """Two-sided Student-t interval for a mean at the given confidence level."""
    if sd == 0:
        return [mean, mean]
    lo, hi = stats.t.interval(level, n - 1, loc=mean, scale=sd / math.sqrt(n))
    return [float(lo), float(hi)]


def tost_p(differences, margin):
    """Two one-sided t-tests of equivalence within ±margin: H0 mean ≤ −margin and H0 mean ≥ +margin;
    the p-value is the larger of the two one-sided ones (both must reject)."""
    lower = stats.ttest_1samp(differences, -margin, alternative="greater").pvalue
    upper = stats.ttest_1samp(differences, margin, alternative="less").pvalue
    return float(max(lower, upper))


def one_comparison(row_losses, ref_losses, margin):
    """What a comparison has on its own: differences, mean, sd, the test's p and TOST's p."""
    if len(row_losses) != len(ref_losses):
        raise ValueError("a paired comparison needs as many reference losses as row losses")
    d = [a - b for a, b in zip(row_losses, ref_losses, strict=True)]
    n = len(d)
    res = {"n": n, "differences": d, "mean": sum(d) / n if n else None}
    if n < 2:
        return res | {"sd": None, "t": None, "p": None, "tost_p": None}
    mean = res["mean"]
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    if sd == 0:  # identical differences: no spread to test against
        p = 0.0 if mean != 0 else 1.0
        t = math.copysign(math.inf, mean) if mean else 0.0
        return res | {"sd": 0.0, "t": t, "p": p, "tost_p": 0.0 if abs(mean) < margin else 1.0}
    t = stats.ttest_rel(row_losses, ref_losses)
    return res | {"sd": sd, "t": float(t.statistic), "p": float(t.pvalue), "tost_p": tost_p(d, margin)}


def verdict(mean, p_adjusted, tost_adjusted, alpha, margin, detectable):
    if p_adjusted < alpha:
        return "worse" if mean > 0 else "better"
    if tost_adjusted < alpha:
        return f"equivalent within ±{margin:g} nats"
    return f"not distinguishable (detectable size {detectable:.3f} nats)"


def family(comparisons, analysis):
    """comparisons: {name: (row_losses, ref_losses)}, paired seed by seed. Returns {name: result}
    with, for the comparisons of at least two seeds (the family, m of them): Holm-adjusted p of the
    difference and of TOST, the Bonferroni interval, the detectable size and the verdict."""
    alpha, power, margin = analysis["alpha"], analysis["power"], analysis["equivalence_margin_nats"]
    res = {name: one_comparison(a, b, margin) for name, (a, b) in comparisons.items()}
    tested = [name for name, r in res.items() if r["n"] >= 2]
    m = len(tested)
    p_holm = dict(zip(tested, holm([res[x]["p"] for x in tested]), strict=True))
    tost_holm = dict(zip(tested, holm([res[x]["tost_p"] for x in tested]), strict=True))
    for name, r in res.items():
        r["family_size"] = m
        if r["n"] < 2:
            none = dict.fromkeys(
                ["p_holm", "tost_p_holm", "ci", "ci95", "ci_level", "detectable_effect_sd", "detectable", "alpha_each"]
            )
            r |= none | {"verdict": "n/a (one seed)" if r["n"] == 1 else "n/a (no paired seed)"}
            continue
        n, mean, sd = r["n"], r["mean"], r["sd"]
        effect = detectable_effect(n, alpha / m, power)
        r |= {
            "p_holm": p_holm[name],
            "tost_p_holm": tost_holm[name],
            "alpha_each": alpha / m,
            "ci_level": 1 - alpha / m,
            "ci": t_interval(mean, sd, n, 1 - alpha / m),
            "ci95": t_interval(mean, sd, n, 0.95),  # this comparison alone, uncorrected
            "detectable_effect_sd": effect,
            "detectable": effect * sd,
        }
        r["verdict"] = verdict(mean, r["p_holm"], r["tost_p_holm"], alpha, margin, r["detectable"])
    return res
