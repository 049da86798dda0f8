"""Phase 4 of the one-node program: what the running reference job shows, through Prometheus and `kubectl get ppj`.

Contract: Prometheus (built by the `tools` fixture) discovers the operator and ref's rank pods by
Kubernetes service discovery, and tests/cluster/dashboards_live.py finds data for ref in every
dashboard panel and variable within 300 s; `kubectl get ppj ref` shows a round of at least 1 and
a perplexity within 240 s. Prometheus runs on until the run ends; ref is left running.
"""

import re

from .. import REPO, kube, prometheus
from ..run import Run
from ..waiting import wait_at_most
from . import NS, OPNS


def test_4_prometheus_every_panel_has_data(run: Run, tools: dict[str, str]) -> None:
    log = prometheus.start(run, tools["prometheus"], OPNS)
    dashboards = REPO / "tests" / "cluster" / "dashboards_live.py"
    live = [
        "python3",
        str(dashboards),
        "--prometheus",
        prometheus.URL,
        "--namespace",
        NS,
        "--job",
        "ref",
        "--timeout",
        "300",
    ]
    try:
        run.cluster.netns(*live)
    except RuntimeError as e:
        raise AssertionError(f"dashboard panels without data (see {log})") from e
    run.progress.phase("prometheus: every panel has data")


def test_4_kubectl_get_ppj_shows_round_and_perplexity(run: Run) -> None:
    """`kubectl get ppj` columns: round and perplexity from the ranks' metrics."""

    def columns() -> tuple[str, str, str]:
        line = kube.table_line("-n", NS, "ppj", "ref")
        words = line.split()
        return line, words[3] if len(words) > 3 else "", words[4] if len(words) > 4 else ""

    def shown(round_: str, perplexity: str) -> bool:
        return bool(re.fullmatch(r"[0-9]+", round_) and re.fullmatch(r"[0-9.]+", perplexity))

    line, round_, perplexity = wait_at_most(columns, 240, until=lambda c: shown(c[1], c[2]) and int(c[1]) >= 1)
    assert shown(round_, perplexity), f"kubectl get ppj shows no round/perplexity: '{line}'"
    run.progress.say(f"kubectl get ppj ref: {line}")
