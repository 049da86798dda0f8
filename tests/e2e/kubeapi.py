"""A minimal Kubernetes REST client for tests (python3 stdlib only).

Talks to the throw-away control plane of scripts/kube-test-env.sh with its admin client
certificate: DIR/env names the port, DIR/certs/apiserver.crt is the serving cert (its own CA),
DIR/pki/admin.{crt,key} is a system:masters client. Enough for the node agent and the tests:
get/list/create/delete and merge patches of the status subresource.
"""

import json
import pathlib
import ssl
import urllib.error
import urllib.request


def read_env(kube_dir):
    env = {}
    for line in (pathlib.Path(kube_dir) / "env").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    return env


class KubeAPI:
    def __init__(self, kube_dir):
        d = pathlib.Path(kube_dir)
        self.base = f"https://127.0.0.1:{read_env(d)['APISERVER_PORT']}"
        self.ctx = ssl.create_default_context(cafile=str(d / "certs" / "apiserver.crt"))
        self.ctx.load_cert_chain(str(d / "pki" / "admin.crt"), str(d / "pki" / "admin.key"))

    def request(self, method, path, body=None, content_type="application/json", timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"{}")
            except ValueError:
                return e.code, {}

    def get(self, path):
        code, obj = self.request("GET", path)
        return obj if code == 200 else None

    def list_pods(self, namespace=None):
        path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
        obj = self.get(path)
        return obj.get("items", []) if obj else []

    def get_configmap(self, namespace, name):
        return self.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")

    def get_ppujob(self, namespace, name):
        return self.get(f"/apis/ppu.dev/v1alpha1/namespaces/{namespace}/ppujobs/{name}")

    def patch_pod_status(self, namespace, name, status):
        """Merge-patches status; returns the HTTP code (404 when the pod is gone)."""
        code, _ = self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"status": status},
            "application/merge-patch+json",
        )
        return code
