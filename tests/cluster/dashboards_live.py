#!/usr/bin/env python3
"""Every dashboard panel and template variable returns data for one PPUJob on a real cluster.

Run by tests/cluster/e2e (phase 4) inside the cluster's network namespace, against the Prometheus it
started there (which finds the rank pods and the operator through Kubernetes service discovery).
Uses the same panel list and query substitution as tests/packaging/dashboards_test.py (which
checks the queries against ranks started without a cluster), with the job's namespace and name.
Polls until every expression has data or --timeout passes; exits 1 naming the empty ones.

Usage: dashboards_live.py --namespace NS --job NAME [--prometheus URL] [--timeout SECONDS]
"""

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "packaging"))
import dashboards_test as dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--prometheus", default="http://127.0.0.1:9090")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    dt.NS, dt.JOB = a.namespace, a.job
    targets = dt.dashboard_targets()
    if not targets:
        dt.fail("no dashboard targets found in dashboards/*.json")
    dt.check_metric_names(targets)

    deadline = time.time() + a.timeout
    while True:
        try:
            dt.http_get(f"{a.prometheus}/-/ready")
            break
        except Exception as e:  # noqa: BLE001 - any connection error means not up yet
            if time.time() > deadline:
                dt.fail(f"prometheus at {a.prometheus} not ready: {e}")
            time.sleep(1)

    empty = targets
    while time.time() < deadline:
        empty = []
        for t in targets:
            _, _, expr, kind = t
            res = (
                dt.prom_label_values(a.prometheus, expr)
                if kind == "variable"
                else dt.prom_query(a.prometheus, dt.substitute(expr))
            )
            if not res:
                empty.append(t)
        if not empty:
            break
        time.sleep(3)
    for dash, what, expr, _ in empty:
        print(f"EMPTY: {dash} / {what}: {dt.substitute(expr)}", file=sys.stderr)
    if empty:
        dt.fail(f"{len(empty)} of {len(targets)} dashboard expressions returned no data")
    # The data came through service discovery: the targets are pods and the operator's endpoints.
    up = dt.prom_query(a.prometheus, "up == 1")
    jobs = {r["metric"].get("job") for r in up}
    if a.job not in jobs:
        dt.fail(f"no rank pod target of job {a.job} is up (up targets: {sorted(j for j in jobs if j)})")
    ranks = dt.prom_query(a.prometheus, f'count(up{{job="{a.job}",namespace="{a.namespace}"}} == 1)')
    n = int(float(ranks[0]["value"][1])) if ranks else 0
    if n < 1:
        dt.fail("no rank pod discovered")
    dt.log(
        f"all {len(targets)} dashboard expressions returned data; {n} rank pods discovered "
        f"through Kubernetes service discovery"
    )


if __name__ == "__main__":
    main()
