#!/usr/bin/env python3
"""A stand-in kubelet for end-to-end tests: runs each pod's container as a local process.

Polls the API server for pods. For a new pod it starts the container's command (+ args) with
the pod's env, rewritten for one machine:
  MASTER_ADDR        -> 127.0.0.1 (the rank-0 DNS name does not resolve here)
  MASTER_PORT        -> a free port per gang (per job and ppu.dev/restart annotation), so a
                        restarted gang never races the old one's TCPStore for the port
  PPU_CONFIG         -> a local file holding the mounted ConfigMap's content
  PPU_CHECKPOINT_DIR -> WORK/<namespace>/<job>/checkpoints (one dir per job: plays the PVC)
  PPU_METRICS_PORT   -> a free port per pod
and `--summary WORK/<ns>/<job>/summary-<pod>.json` appended, so tests can read the final
param_checksum. It reports status like a kubelet: podIP 127.0.0.1 and phase Running (Ready),
then Succeeded/Failed with the exit code in containerStatuses[].state.terminated (a signal N
reads as 128+N, as container runtimes report it). A pod deleted from the API server gets its
process killed (SIGTERM, then SIGKILL after a grace period).
Each running pod's pid is in WORK/pids/<namespace>_<pod>.pid so a test can kill a rank.

Usage: node_agent.py --kube-dir DIR --work DIR --bin-dir DIR   (DIR holding ppu-train)
"""

import argparse
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from kubeapi import KubeAPI


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def log(msg):
    print(f"[node-agent {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Agent:
    def __init__(self, api, work, bin_dir, grace, metrics=True):
        self.metrics = metrics  # False: ranks serve no /metrics (to bisect a failure)
        self.api, self.work, self.bin_dir, self.grace = api, pathlib.Path(work), pathlib.Path(bin_dir), grace
        self.running = {}  # uid -> dict(proc, ns, name, started)
        self.done = set()  # uids already finished and reported
        self.gang_ports = {}  # (ns, job, restart) -> master port
        (self.work / "pids").mkdir(parents=True, exist_ok=True)

    def job_dir(self, ns, job):
        d = self.work / ns / job
        (d / "checkpoints").mkdir(parents=True, exist_ok=True)
        return d

    def start_pod(self, pod):
        md, spec = pod["metadata"], pod["spec"]
        ns, name, uid = md["namespace"], md["name"], md["uid"]
        job = md.get("labels", {}).get("ppu.dev/job", name)
        restart = md.get("annotations", {}).get("ppu.dev/restart", "0")
        c = spec["containers"][0]
        jd = self.job_dir(ns, job)
        # The agent's own environment stands in for the image's: the reference ppu-launch run
        # inherits the same one, and e.g. OMP_NUM_THREADS changes BLAS summation order. The
        # rendezvous variables come only from the pod.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("PPU_") and k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
        }
        env["PATH"] = f"{self.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        for e in c.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
        env["MASTER_ADDR"] = "127.0.0.1"
        key = (ns, job, restart)
        if key not in self.gang_ports:
            self.gang_ports[key] = free_port()
        env["MASTER_PORT"] = str(self.gang_ports[key])
        if "PPU_CONFIG" in env:
            env["PPU_CONFIG"] = str(self.materialise_config(pod, env["PPU_CONFIG"], jd))
        env["PPU_CHECKPOINT_DIR"] = str(jd / "checkpoints")
        if self.metrics:
            env["PPU_METRICS_PORT"] = str(free_port())
        else:
            env.pop("PPU_METRICS_PORT", None)
        cmd = list(c.get("command", [])) + list(c.get("args", []))
        if not cmd:
            return self.finish({"ns": ns, "name": name}, 1, "no command", None)
        cmd[0] = str(self.bin_dir / cmd[0]) if (self.bin_dir / cmd[0]).exists() else cmd[0]
        cmd += ["--summary", str(jd / f"summary-{name}.json")]
        with open(jd / f"{name}-{uid[:8]}.log", "w") as logf:  # the child writes to its own copy of it
            try:
                proc = subprocess.Popen(
                    cmd, env=env, cwd=jd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True
                )
            except OSError as e:
                return self.finish({"ns": ns, "name": name}, 127, f"cannot start {cmd[0]}: {e}", None)
        started = now()
        self.running[uid] = {"proc": proc, "ns": ns, "name": name, "started": started}
        (self.work / "pids" / f"{ns}_{name}.pid").write_text(str(proc.pid))
        log(f"started {ns}/{name} (restart {restart}) pid {proc.pid}: {' '.join(cmd)}")
        self.api.patch_pod_status(
            ns,
            name,
            {
                "phase": "Running",
                "hostIP": "127.0.0.1",
                "podIP": "127.0.0.1",
                "podIPs": [{"ip": "127.0.0.1"}],
                "startTime": started,
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": started},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": started},
                ],
                "containerStatuses": [
                    {
                        "name": c["name"],
                        "image": c.get("image", ""),
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "started": True,
                        "state": {"running": {"startedAt": started}},
                    }
                ],
            },
        )

    def materialise_config(self, pod, path, jd):
        """Writes the ConfigMap mounted at dirname(path) to a local file; returns its path."""
        mount_dir = os.path.dirname(path)
        c = pod["spec"]["containers"][0]
        vol_name = next((m["name"] for m in c.get("volumeMounts", []) if m["mountPath"] == mount_dir), None)
        vol = next((v for v in pod["spec"].get("volumes", []) if v["name"] == vol_name), None)
        if not vol or "configMap" not in vol:
            raise RuntimeError(f"{pod['metadata']['name']}: no ConfigMap volume mounted at {mount_dir}")
        cm = self.api.get_configmap(pod["metadata"]["namespace"], vol["configMap"]["name"])
        if cm is None:
            raise RuntimeError(f"ConfigMap {vol['configMap']['name']} not found")
        out = jd / f"config-{pod['metadata']['name']}.yaml"
        out.write_text(cm["data"][os.path.basename(path)])
        return out

    def finish(self, who, code, message, started):
        """who: {ns, name} of the pod."""
        ns, name = who["ns"], who["name"]
        t = now()
        status = {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": t, "reason": "PodCompleted"}],
            "containerStatuses": [
                {
                    "name": "ppu-train",
                    "image": "",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "reason": "Completed" if code == 0 else "Error",
                            "message": message,
                            "startedAt": started or t,
                            "finishedAt": t,
                        }
                    },
                }
            ],
        }
        rc = self.api.patch_pod_status(ns, name, status)
        log(f"{ns}/{name} exited with code {code} (status patch HTTP {rc})")

    def kill(self, uid, r):
        p = r["proc"]
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            except ProcessLookupError:
                pass
        log(f"pod {r['ns']}/{r['name']} deleted: process {p.pid} stopped")

    def step(self):
        pods = self.api.list_pods()
        if pods is None:
            return
        live = {}
        for pod in pods:
            uid = pod["metadata"]["uid"]
            live[uid] = pod
            deleting = "deletionTimestamp" in pod["metadata"]
            if uid not in self.running and uid not in self.done and not deleting:
                try:
                    self.start_pod(pod)
                except Exception as e:  # noqa: BLE001  (a test helper: report the pod Failed, keep serving others)
                    log(f"cannot start {pod['metadata']['name']}: {e}")
                    self.finish({"ns": pod["metadata"]["namespace"], "name": pod["metadata"]["name"]}, 1, str(e), None)
                    self.done.add(uid)
                if uid not in self.running:
                    self.done.add(uid)
        for uid, r in list(self.running.items()):
            code = r["proc"].poll()
            if uid not in live or "deletionTimestamp" in live[uid]["metadata"]:
                self.kill(uid, r)
                del self.running[uid]
                self.done.add(uid)
            elif code is not None:
                self.finish(r, code if code >= 0 else 128 - code, "", r["started"])
                del self.running[uid]
                self.done.add(uid)

    def shutdown(self):
        for uid, r in list(self.running.items()):
            self.kill(uid, r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kube-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--grace", type=float, default=5)
    ap.add_argument("--interval", type=float, default=0.3)
    ap.add_argument("--no-metrics", action="store_true", help="drop PPU_METRICS_PORT from the ranks' env")
    a = ap.parse_args()
    agent = Agent(KubeAPI(a.kube_dir), a.work, pathlib.Path(a.bin_dir).resolve(), a.grace, metrics=not a.no_metrics)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    log("serving pods")
    while not stop:
        try:
            agent.step()
        except OSError as e:  # API server restarting: retry on the next tick
            log(f"API error: {e}")
        time.sleep(a.interval)
    agent.shutdown()


if __name__ == "__main__":
    main()
