#!/usr/bin/env python3
"""Dashboard test: every panel's PromQL returns data from a real Prometheus.

Starts, all on loopback:
  - a kube-apiserver + etcd (scripts/kube-test-env.sh) and ppu-operator against it;
  - a short real `ppu-launch --nproc 2 --config configs/tiny.yaml` run serving rank /metrics;
  - a PPUJob whose two pods this test marks Running at 127.0.0.1 (no kubelet here), so the
    operator scrapes the same rank endpoints and exports its per-job series;
  - Prometheus (Debian's /usr/bin/prometheus) scraping the ranks (as job=<the PPUJob's name>,
    namespace=default, the labels the chart's PodMonitor gives rank pods) and the operator.
Then evaluates every target of every panel in dashboards/*.json through /api/v1/query and
every template variable through /api/v1/label/.../values, requiring a non-empty result for each;
checks that the dashboards use only metric names from docs/METRICS.md; and runs
`promtool check metrics` on a live scrape of rank 0.

Usage: dashboards_test.py --launch PPU_LAUNCH --train PPU_TRAIN --operator PPU_OPERATOR
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from kubeapi import KubeAPI

NS, JOB = "default", "dash"
PROCS = []


def log(msg):
    print(f"[dashboards_test] {msg}", flush=True)


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def free_port(span=1):
    """A port p such that p..p+span-1 were all free (ppu-launch uses metrics.port + local rank)."""
    for _ in range(100):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        ok = True
        for q in range(p + 1, p + span):
            t = socket.socket()
            try:
                t.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                t.close()
        if ok:
            return p
    fail("no free port range")


def start(cmd, logfile, **kw):
    with open(logfile, "w") as f:  # the child writes to its own copy of the descriptor
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, **kw)
    PROCS.append(p)
    return p


def stop_all():
    for p in reversed(PROCS):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in PROCS:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_http(url, what, proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            fail(f"{what} exited with code {proc.returncode}")
        try:
            http_get(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    fail(f"{what} not answering at {url} after {seconds} s")


def ensure_prometheus():
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        log("prometheus missing: installing test dependencies (scripts/install-deps.sh --test)")
        subprocess.run([str(ROOT / "scripts" / "install-deps.sh"), "--test"], check=True)
    for b in ("prometheus", "promtool"):
        if not shutil.which(b):
            fail(f"{b} not found after installing the Debian package prometheus")


def metric_names_in_contract():
    text = (ROOT / "docs" / "METRICS.md").read_text()
    return set(re.findall(r"`(ppu_[a-z0-9_]+)", text))


def dashboard_targets():
    out = []
    for f in sorted((ROOT / "dashboards").glob("*.json")):
        d = json.loads(f.read_text())
        if d["templating"]["list"][0]["name"] != "DS_PROMETHEUS":
            fail(f"{f.name}: first template variable must be the DS_PROMETHEUS datasource")
        for v in d["templating"]["list"][1:]:
            out.append((f.name, f"variable {v['name']}", v["query"]["query"], "variable"))
        for p in d["panels"]:
            if p["datasource"]["uid"] != "${DS_PROMETHEUS}":
                fail(f"{f.name} panel {p['title']!r}: datasource is not ${{DS_PROMETHEUS}}")
            for t in p["targets"]:
                out.append((f.name, f"{p['title']} [{t['refId']}]", t["expr"], "panel"))
    return out


def check_metric_names(targets):
    contract = metric_names_in_contract()
    suffixes = ("_bucket", "_sum", "_count")
    for dash, what, expr, _ in targets:
        for name in set(re.findall(r"\bppu_[a-z0-9_]+", expr)):
            base = next((name[: -len(s)] for s in suffixes if name.endswith(s) and name[: -len(s)] in contract), name)
            if base not in contract:
                fail(f"{dash} {what}: metric {name} is not in docs/METRICS.md")
    log(f"all metric names in {len(targets)} expressions are in docs/METRICS.md")


def substitute(expr):
    return expr.replace("$__rate_interval", "30s").replace("$namespace", NS).replace("$job", JOB)


def prom_query(base, expr):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = json.loads(http_get(url))
    if r.get("status") != "success":
        fail(f"query failed: {expr}: {r}")
    return r["data"]["result"]


def prom_label_values(base, query):
    m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query.strip())
    if not m:
        fail(f"unsupported variable query {query!r}")
    url = f"{base}/api/v1/label/{m.group(2)}/values?" + urllib.parse.urlencode({"match[]": substitute(m.group(1))})
    return json.loads(http_get(url))["data"]


def mark_pods_running(api, want):
    """Plays the kubelet for the PPUJob's pods: Running + Ready at 127.0.0.1."""
    pods = [p for p in api.list_pods(NS) if p["metadata"].get("labels", {}).get("ppu.dev/job") == JOB]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for p in pods:
        if p.get("status", {}).get("phase") == "Running":
            continue
        api.patch_pod_status(
            NS,
            p["metadata"]["name"],
            {
                "phase": "Running",
                "podIP": "127.0.0.1",
                "podIPs": [{"ip": "127.0.0.1"}],
                "hostIP": "127.0.0.1",
                "startTime": now,
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                ],
                "containerStatuses": [
                    {
                        "name": "ppu-train",
                        "ready": True,
                        "restartCount": 0,
                        "image": "ppu",
                        "imageID": "",
                        "state": {"running": {"startedAt": now}},
                    }
                ],
            },
        )
    return len(pods) == want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launch", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--operator", required=True)
    ap.add_argument("--timeout", type=float, default=240)
    a = ap.parse_args()
    a.launch, a.train, a.operator = (str(pathlib.Path(x).resolve()) for x in (a.launch, a.train, a.operator))

    targets = dashboard_targets()
    check_metric_names(targets)
    ensure_prometheus()

    work = pathlib.Path(tempfile.mkdtemp(prefix="ppu-dash-"))
    kube_dir = work / "kube"
    env_script = str(ROOT / "scripts" / "kube-test-env.sh")
    try:
        subprocess.run([env_script, "start", str(kube_dir)], check=True, stdout=subprocess.DEVNULL)
        api = KubeAPI(kube_dir)
        kubeconfig = str(kube_dir / "kubeconfig")

        rank_port = free_port(2)
        op_metrics, op_health, prom_port = free_port(), free_port(), free_port()
        operator = start(
            [
                a.operator,
                "--kubeconfig",
                kubeconfig,
                "--metrics-addr",
                f"127.0.0.1:{op_metrics}",
                "--health-addr",
                f"127.0.0.1:{op_health}",
                "--scrape-interval",
                "1s",
            ],
            work / "operator.log",
        )
        wait_http(f"http://127.0.0.1:{op_health}/healthz", "ppu-operator", operator)

        # Long enough to outlive the queries; the test stops it at the end.
        env = dict(os.environ, PATH=f"{pathlib.Path(a.train).parent}:{os.environ.get('PATH', '')}")
        launch = start(
            [
                a.launch,
                "--ppu-train",
                a.train,
                "--nproc",
                "2",
                "--config",
                str(ROOT / "configs" / "tiny.yaml"),
                "--set",
                f"metrics.port={rank_port}",
                "--set",
                "train.steps=20000",
                "--set",
                "train.eval_every=5",
                "--set",
                "outer.sync_every=5",
            ],
            work / "launch.log",
            env=env,
            cwd=work,
        )
        wait_http(f"http://127.0.0.1:{rank_port}/metrics", "ppu-launch rank 0", launch, 120)
        wait_http(f"http://127.0.0.1:{rank_port + 1}/metrics", "ppu-launch rank 1", launch, 60)

        job = {
            "apiVersion": "ppu.dev/v1alpha1",
            "kind": "PPUJob",
            "metadata": {"name": JOB, "namespace": NS},
            "spec": {
                "replicas": 2,
                "image": "ppu:test",
                "metricsPort": rank_port,
                "checkpoint": {"volumeSource": {"emptyDir": {}}},
                # contract: not a summary: the config's section
                "training": {"model": {"preset": "tiny"}, "slicing": {"mode": "mlp", "slices": 2}},
            },
        }
        code, body = api.request("POST", f"/apis/ppu.dev/v1alpha1/namespaces/{NS}/ppujobs", job)
        if code != 201:
            fail(f"creating PPUJob {JOB}: HTTP {code} {body}")

        (work / "prometheus.yml").write_text(f"""
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
scrape_configs:
  - job_name: {JOB}
    static_configs:
      - targets: ['127.0.0.1:{rank_port}', '127.0.0.1:{rank_port + 1}']
        labels: {{namespace: {NS}}}
  - job_name: ppu-operator
    honor_labels: true   # its per-job series carry their own job/namespace labels
    static_configs:
      - targets: ['127.0.0.1:{op_metrics}']
""")
        prom = start(
            [
                "prometheus",
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
                "--log.level=warn",
            ],
            work / "prometheus.log",
        )
        base = f"http://127.0.0.1:{prom_port}"
        wait_http(f"{base}/-/ready", "prometheus", prom)

        # Poll until every expression has data (counters need a few scrapes for rate(), the
        # operator needs the pods Running and one scrape interval, evals and syncs need steps).
        deadline = time.time() + a.timeout
        empty = targets
        while time.time() < deadline:
            mark_pods_running(api, 2)
            if launch.poll() is not None:
                fail(f"ppu-launch exited early with code {launch.returncode}; see {work / 'launch.log'}")
            empty = []
            for t in targets:
                dash, what, expr, kind = t
                res = prom_label_values(base, expr) if kind == "variable" else prom_query(base, substitute(expr))
                if not res:
                    empty.append(t)
            if not empty:
                break
            time.sleep(2)
        for dash, what, expr, _ in empty:
            print(f"EMPTY: {dash} / {what}: {substitute(expr)}", file=sys.stderr)
        if empty:
            for f in ("operator.log", "launch.log", "prometheus.log"):
                print(f"--- tail of {f}", file=sys.stderr)
                print("\n".join((work / f).read_text().splitlines()[-15:]), file=sys.stderr)
            fail(f"{len(empty)} of {len(targets)} dashboard expressions returned no data")
        log(f"all {len(targets)} dashboard expressions (panels and variables) returned data")
        ns_values = prom_label_values(base, "label_values(ppu_step, namespace)")
        if NS not in ns_values:
            fail(f"namespace variable lacks {NS}: {ns_values}")

        # promtool's linter on a live rank scrape: names, types, HELP, units.
        scrape = http_get(f"http://127.0.0.1:{rank_port}/metrics")
        r = subprocess.run(["promtool", "check", "metrics"], input=scrape, text=True, capture_output=True, check=False)
        if r.returncode != 0:
            fail(f"promtool check metrics on rank 0's /metrics:\n{r.stdout}{r.stderr}")
        log("promtool check metrics: rank 0 /metrics is clean")
        print("dashboards_test: all checks passed")
    finally:
        stop_all()
        subprocess.run(
            [env_script, "stop", str(kube_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        if os.environ.get("PPU_KEEP_TMP") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
