#!/usr/bin/env python3
"""Writes the Grafana dashboards dashboards/*.json from the panel lists below.

One Python source keeps the five dashboards consistent (same variables, datasource, label
filters) and lets tests read the PromQL of every panel. Metric names come only from
docs/METRICS.md. Rank series are selected by the `namespace` and `job` labels: the chart's
PodMonitor sets them from the pod's namespace and its ppu.dev/job label, and the operator's
per-job series carry the same two labels.

Usage: dashboards/generate.py            rewrite the JSON files
       dashboards/generate.py --check    exit 1 when a JSON file differs from what this writes
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

# The metric names, from the C++ (python/ppu/metrics.py): a renamed metric fails here, not in Grafana.
from ppu.metrics import OPERATOR as O
from ppu.metrics import RANK as R

DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
SEL = 'namespace=~"$namespace", job=~"$job"'  # rank and per-job series of the chosen jobs
RI = "$__rate_interval"


def ds_var():
    # A datasource variable (rather than only __inputs) works for both UI import and the
    # Grafana sidecar, which provisions the JSON as-is.
    return {
        "name": "DS_PROMETHEUS",
        "label": "Prometheus",
        "type": "datasource",
        "query": "prometheus",
        "hide": 0,
        "current": {},
        "refresh": 1,
    }


def query_var(name, label, query):
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        "query": {"query": query, "refId": f"{name}-var"},
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "allValue": ".+",
        "multi": True,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
    }


JOB_VARS = [
    query_var("namespace", "Namespace", f"label_values({R.step}, namespace)"),
    query_var("job", "PPUJob", f'label_values({R.step}{{namespace=~"$namespace"}}, job)'),
]


def panel(title, targets, kind="timeseries", unit="short", desc="", stack=False):
    """targets: list of (legend, expr)."""
    p = {
        "type": kind,
        "title": title,
        "description": desc,
        "datasource": DS,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": DS,
                "expr": expr,
                "legendFormat": legend,
                "range": kind == "timeseries",
                "instant": kind != "timeseries",
            }
            for i, (legend, expr) in enumerate(targets)
        ],
    }
    if kind == "timeseries" and stack:
        p["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal"}, "fillOpacity": 40}
    return p


def bounded(p, lo, hi):
    """A panel whose values lie in [lo, hi] (a gauge's scale)."""
    p["fieldConfig"]["defaults"].update({"min": lo, "max": hi})
    return p


def dashboard(uid, title, desc, panels, variables):
    # Lay panels out two per row, 12 grid units wide, 8 high.
    for i, p in enumerate(panels):
        p["id"] = i + 1
        p["gridPos"] = {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)}
    return {
        "__inputs": [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "uid": uid,
        "title": title,
        "description": desc,
        "tags": ["ppu"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [ds_var()] + variables},
        "annotations": {"list": []},
        "links": [],
        "panels": panels,
    }


def overview():
    return dashboard(
        "ppu-overview",
        "PPU / Job overview",
        "Phase, ranks, outer round, loss and perplexity, throughput and ETA of PPUJobs.",
        [
            panel(
                "Jobs by phase (operator)",
                [("{{phase}}", f"sum by (phase) ({O.jobs_by_phase})")],
                kind="bargauge",
                desc="PPUJobs the operator sees in each phase.",
            ),
            panel(
                "Jobs waiting for admission (Kueue)",
                [("waiting", f"{O.jobs_waiting_for_admission}")],
                kind="stat",
                desc="PPUJobs queued for Kueue or evicted by it (operator --kueue); reason and Kueue's message "
                "in each job's status.",
            ),
            panel(
                "Ranks ready / total",
                [("{{job}} ready", f"{O.job_ranks_ready}{{{SEL}}}"), ("{{job}} total", f"{O.job_replicas}{{{SEL}}}")],
                kind="stat",
            ),
            panel(
                "Outer round",
                [
                    ("{{job}} (ranks, max)", f"max by (namespace, job) ({R.outer_round}{{{SEL}}})"),
                    ("{{job}} (operator)", f"{O.job_outer_round}{{{SEL}}}"),
                ],
                kind="stat",
            ),
            panel("Gang restarts", [("{{job}}", f"{O.job_restarts}{{{SEL}}}")], kind="stat"),
            panel(
                "Live ranks / total",
                [("{{job}} live", f"{O.job_live_ranks}{{{SEL}}}"), ("{{job}} total", f"{O.job_replicas}{{{SEL}}}")],
                kind="stat",
                desc="network.recovery=live: ranks in the live group (the smallest count any rank reports).",
            ),
            panel(
                "Ranks over time",
                [
                    ("{{job}} live", f"{O.job_live_ranks}{{{SEL}}}"),
                    ("{{job}} desired (spec.replicas)", f"{O.job_replicas}{{{SEL}}}"),
                ],
                desc="The live group's size against the size asked for. An elastic job (spec.elastic) resized "
                "with kubectl scale steps its desired size at once; the live group follows at the job's next "
                "round boundary once the new pods run (growing) or the store has the new size (shrinking). A "
                "live group below the desired size otherwise is a rank lost or Pending (docs/RESIZE.md).",
            ),
            bounded(
                panel(
                    "Min slice coverage",
                    [("{{job}}", f"{O.job_min_slice_coverage}{{{SEL}}}")],
                    kind="gauge",
                    unit="percentunit",
                    desc="Smallest fraction of an element's owners that are live; below 1 the job is Degraded.",
                ),
                0,
                1,
            ),
            panel(
                "Rank recoveries",
                [("{{job}}", f"{O.job_recoveries}{{{SEL}}}")],
                kind="stat",
                desc="Rank pods the operator recreated alone (network.recovery=live); gang restarts are apart.",
            ),
            bounded(
                panel(
                    "Progress",
                    [("{{job}}", f"{O.job_progress_ratio}{{{SEL}}}")],
                    kind="gauge",
                    unit="percentunit",
                    desc="Inner steps done by the slowest rank of train.steps (status.progressPercentage).",
                ),
                0,
                1,
            ),
            panel(
                "ETA",
                [("{{job}}", f"{O.job_remaining_seconds}{{{SEL}}}")],
                kind="stat",
                unit="s",
                desc="Seconds the slowest rank still needs at its measured rate (status.estimatedRemainingSeconds).",
            ),
            panel(
                "Eval perplexity",
                [
                    ("{{job}} mean over ranks", f"avg by (namespace, job) ({R.eval_perplexity}{{{SEL}}})"),
                    ("{{job}} operator", f"{O.job_eval_perplexity}{{{SEL}}}"),
                    (
                        "{{job}} floor (synthetic corpus)",
                        f"min by (namespace, job) ({R.eval_perplexity_floor}{{{SEL}}})",
                    ),
                ],
                desc="Held-out perplexity; the floor is the best achievable on the synthetic corpus.",
            ),
            panel(
                "Training loss per rank",
                [
                    ("rank {{rank}}", f"{R.loss}{{{SEL}}}"),
                    ("{{job}} eval loss", f"avg by (namespace, job) ({R.eval_loss}{{{SEL}}})"),
                    ("{{job}} operator", f"{O.job_loss}{{{SEL}}}"),
                ],
                desc="nats/token",
            ),
            panel("Training perplexity per rank", [("rank {{rank}}", f"{R.train_perplexity}{{{SEL}}}")]),
            panel(
                "Tokens per second",
                [
                    ("{{job}} (ranks' gauges)", f"sum by (namespace, job) ({R.tokens_per_second}{{{SEL}}})"),
                    ("{{job}} (counter rate)", f"sum by (namespace, job) (rate({R.tokens}{{{SEL}}}[{RI}]))"),
                    ("{{job}} (operator)", f"{O.job_tokens_per_second}{{{SEL}}}"),
                ],
            ),
        ],
        JOB_VARS,
    )


def memory():
    return dashboard(
        "ppu-memory",
        "PPU / Memory",
        "Training-state memory by the paper's five components, per rank, and the saving "
        "versus full (unsliced) training.",
        [
            panel(
                "State bytes by component per rank",
                [("rank {{rank}} {{component}}", f"sum by (rank, component) ({R.state_bytes}{{{SEL}}})")],
                unit="bytes",
                stack=True,
            ),
            panel(
                "State per rank vs full training",
                [
                    ("rank {{rank}} PPU", f"sum by (rank) ({R.state_bytes}{{{SEL}}})"),
                    ("rank {{rank}} full training", f"sum by (rank) ({R.state_full_training_bytes}{{{SEL}}})"),
                ],
                unit="bytes",
            ),
            panel(
                "Memory saved vs full training",
                [
                    (
                        "{{job}}",
                        (
                            f"100 * (1 - sum by (namespace, job) ({R.state_bytes}{{{SEL}}})"
                            f" / sum by (namespace, job) ({R.state_full_training_bytes}{{{SEL}}}))"
                        ),
                    )
                ],
                kind="stat",
                unit="percent",
            ),
            panel(
                "Saving by component",
                [
                    (
                        "{{component}}",
                        (
                            f"sum by (component) ({R.state_full_training_bytes}{{{SEL}}})"
                            f" - sum by (component) ({R.state_bytes}{{{SEL}}})"
                        ),
                    )
                ],
                kind="bargauge",
                unit="bytes",
            ),
            panel(
                "Job state bytes (operator, sum over ranks)",
                [("{{job}} {{component}}", f"{O.job_state_bytes}{{{SEL}}}")],
                unit="bytes",
                stack=True,
            ),
            panel(
                "Process and CUDA memory per rank",
                [
                    ("rank {{rank}} RSS", f"{R.process_resident_memory_bytes}{{{SEL}}}"),
                    ("rank {{rank}} CUDA allocated", f"{R.cuda_memory_allocated_bytes}{{{SEL}}}"),
                    ("rank {{rank}} CUDA reserved", f"{R.cuda_memory_reserved_bytes}{{{SEL}}}"),
                    ("rank {{rank}} CUDA peak", f"{R.cuda_memory_peak_bytes}{{{SEL}}}"),
                ],
                unit="bytes",
            ),
        ],
        JOB_VARS,
    )


def compute():
    return dashboard(
        "ppu-compute",
        "PPU / Compute",
        "FLOPs executed (forward + partial backward) versus what a full backward would "
        "have cost, and the cumulative saving.",
        [
            panel(
                "FLOP rate: executed vs full backward",
                [
                    ("{{job}} executed", f"sum by (namespace, job) (rate({R.flops_executed}{{{SEL}}}[{RI}]))"),
                    (
                        "{{job}} full backward",
                        f"sum by (namespace, job) (rate({R.flops_full_backward}{{{SEL}}}[{RI}]))",
                    ),
                ],
                unit="flops",
            ),
            panel(
                "Cumulative FLOPs saved",
                [
                    (
                        "{{job}} %",
                        (
                            f"100 * (1 - sum by (namespace, job) ({R.flops_executed}{{{SEL}}})"
                            f" / sum by (namespace, job) ({R.flops_full_backward}{{{SEL}}}))"
                        ),
                    )
                ],
                kind="stat",
                unit="percent",
            ),
            panel(
                "Cumulative FLOPs: executed, full, saved",
                [
                    ("{{job}} executed", f"sum by (namespace, job) ({R.flops_executed}{{{SEL}}})"),
                    ("{{job}} full backward", f"sum by (namespace, job) ({R.flops_full_backward}{{{SEL}}})"),
                    (
                        "{{job}} saved",
                        (
                            f"sum by (namespace, job) ({R.flops_full_backward}{{{SEL}}})"
                            f" - sum by (namespace, job) ({R.flops_executed}{{{SEL}}})"
                        ),
                    ),
                ],
            ),
            panel(
                "FLOPs per inner step per rank",
                [
                    ("rank {{rank}} executed", f"{R.step_flops_executed}{{{SEL}}}"),
                    ("rank {{rank}} full backward", f"{R.step_flops_full_backward}{{{SEL}}}"),
                ],
            ),
            panel(
                "FLOPs saved ratio (operator)",
                [("{{job}}", f"{O.job_flops_saved_ratio}{{{SEL}}}")],
                kind="stat",
                unit="percentunit",
            ),
            panel(
                "Job FLOPs (operator, sum over ranks)",
                [
                    ("{{job}} executed", f"{O.job_flops_executed}{{{SEL}}}"),
                    ("{{job}} full backward", f"{O.job_flops_full_backward}{{{SEL}}}"),
                ],
            ),
        ],
        JOB_VARS,
    )


def communication():
    return dashboard(
        "ppu-communication",
        "PPU / Communication",
        "Outer synchronisation: bytes sent and received, seconds and network wait per sync, per streaming fragment.",
        [
            panel(
                "Bytes per outer sync by fragment",
                [
                    (
                        "fragment {{fragment}}",
                        f"avg by (fragment) ({R.outer_sync_bytes}{{{SEL}}} / {R.outer_syncs}{{{SEL}}})",
                    )
                ],
                unit="bytes",
            ),
            panel(
                "Seconds per outer sync by fragment",
                [
                    (
                        "fragment {{fragment}}",
                        f"avg by (fragment) ({R.outer_sync_seconds}{{{SEL}}} / {R.outer_syncs}{{{SEL}}})",
                    )
                ],
                unit="s",
            ),
            panel(
                "All-reduce throughput by fragment",
                [("fragment {{fragment}}", f"sum by (fragment) (rate({R.outer_sync_bytes}{{{SEL}}}[{RI}]))")],
                unit="Bps",
            ),
            panel(
                "Share of time in outer syncs per rank",
                [("rank {{rank}}", f"sum by (rank) (rate({R.outer_sync_seconds}{{{SEL}}}[{RI}]))")],
                unit="percentunit",
            ),
            panel(
                "Outer syncs by fragment",
                [("fragment {{fragment}}", f"max by (fragment) ({R.outer_syncs}{{{SEL}}})")],
                kind="bargauge",
            ),
            panel(
                "Bytes sent and received per rank",
                [
                    ("rank {{rank}} sent", f"sum by (rank) ({R.outer_sync_bytes}{{{SEL}}})"),
                    ("rank {{rank}} received", f"sum by (rank) ({R.outer_sync_received_bytes}{{{SEL}}})"),
                ],
                unit="bytes",
            ),
            panel(
                "Share of time waiting on the network per rank",
                [("rank {{rank}}", f"sum by (rank) (rate({R.network_wait_seconds}{{{SEL}}}[{RI}]))")],
                unit="percentunit",
            ),
            panel(
                "Quorum sync: share of time waiting at sync points per rank",
                [("rank {{rank}}", f"sum by (rank) (rate({R.sync_point_wait_seconds}{{{SEL}}}[{RI}]))")],
                unit="percentunit",
                desc="outer.sync_mode=quorum: a fast rank waits for the quorum and the grace window; "
                "zero under sync_mode all (docs/QUORUM_SYNC.md)",
            ),
            panel(
                "Quorum sync: inner steps skipped per rank",
                [("rank {{rank}}", f"sum by (rank) ({R.inner_steps_skipped}{{{SEL}}})")],
                desc="A straggler skips to a sync point that closed without it: the steps it did not train",
            ),
            panel(
                "Quorum sync: short contributions per rank",
                [("rank {{rank}}", f"sum by (rank) ({R.short_contributions}{{{SEL}}})")],
                desc="Outer steps this rank's delta entered with a weight below 1 (it trained part of the window)",
            ),
            panel(
                "Quorum sync: sync points sat out and late work per rank",
                [
                    ("rank {{rank}} sat out", f'sum by (rank) ({R.sync_points}{{{SEL}, closed="sat_out"}})'),
                    ("rank {{rank}} late work {{outcome}}", f"sum by (rank, outcome) ({R.late_work}{{{SEL}}})"),
                ],
                desc="outer.quorum_sit_out: sync points a slow rank stayed away from, and the fragments it "
                "rejoined with its work merged or dropped (outer.quorum_late_work)",
            ),
            panel(
                "Quorum sync: grace window",
                [("rank {{rank}}", f"max by (rank) ({R.quorum_grace_seconds}{{{SEL}}})")],
                unit="s",
                desc="Seconds a sync point stays open after a quorum arrived (2 x the median arrival spread, bounded)",
            ),
        ],
        JOB_VARS,
    )


def operator():
    return dashboard(
        "ppu-operator",
        "PPU / Operator",
        "The controller: reconciles, errors, queue, latency, jobs by phase, gang restarts.",
        [
            panel(
                "Reconciles by result",
                [("{{result}}", f"sum by (result) (rate({O.reconciles}[{RI}]))")],
                unit="ops",
            ),
            panel(
                "Reconcile errors",
                [
                    ("errors/s", f"sum(rate({O.reconcile_errors}[{RI}]))"),
                    ("total", f"sum({O.reconcile_errors})"),
                ],
            ),
            panel("Work queue depth", [("{{instance}}", f"{O.workqueue_depth}")]),
            panel(
                "Reconcile latency",
                [
                    (
                        "p50",
                        f"histogram_quantile(0.5, sum by (le) (rate({O.reconcile_duration}_bucket[{RI}])))",
                    ),
                    (
                        "p99",
                        f"histogram_quantile(0.99, sum by (le) (rate({O.reconcile_duration}_bucket[{RI}])))",
                    ),
                    (
                        "mean",
                        (
                            f"sum(rate({O.reconcile_duration}_sum[{RI}]))"
                            f" / sum(rate({O.reconcile_duration}_count[{RI}]))"
                        ),
                    ),
                ],
                unit="s",
            ),
            panel("Jobs by phase", [("{{phase}}", f"sum by (phase) ({O.jobs_by_phase})")], stack=True),
            panel(
                "Gang restarts",
                [
                    ("total", f"sum({O.gang_restarts})"),
                    ("per hour", f"sum(increase({O.gang_restarts}[1h]))"),
                ],
            ),
        ],
        [],
    )


DASHBOARDS = {
    "ppu-overview.json": overview,
    "ppu-memory.json": memory,
    "ppu-compute.json": compute,
    "ppu-communication.json": communication,
    "ppu-operator.json": operator,
}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, build in DASHBOARDS.items():
        text = json.dumps(build(), indent=2, sort_keys=True) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print("dashboards out of date (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
