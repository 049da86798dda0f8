"""The operator's /metrics as a metrics reader reads them: through a port-forward, with its ServiceAccount's token.

Contract: scrape(opns, reader) creates a token for ServiceAccount opns/reader (one that the chart's
metricsAuth.readers names), forwards local port 18089 to the operator Deployment's `metrics`
port, and returns the /metrics text (up to 40 tries, 0.5 s apart, while the forward comes up);
it fails when nothing answered. job_value(text, name, job, ns) is the value of the series
NAME{job="JOB",namespace="NS",...} as the text writes it (several, one a line; '' when none);
counter_values(text, name) the values of the unlabelled series NAME, as integers, one a line.
"""

import urllib.request

from . import kube
from .waiting import wait_at_most

PORT = 18089


def scrape(opns: str, reader: str) -> str:
    """The operator's /metrics text, read through `kubectl port-forward` with reader's token."""
    token = kube.kubectl("-n", opns, "create", "token", reader, json=False).strip()
    forward = kube.spawn("-n", opns, "port-forward", "deploy/ppu-operator", f"{PORT}:metrics")

    def read() -> str | None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{PORT}/metrics", headers={"Authorization": "Bearer " + token}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.read().decode()
        except (OSError, ValueError):
            return None

    try:
        text = wait_at_most(read, 20, until=lambda t: t is not None, interval_s=0.5)
    finally:
        forward.kill()
        forward.wait()
    assert text, "the operator's /metrics did not answer through a port-forward"
    return text


def job_value(text: str, name: str, job: str, ns: str) -> str:
    """The value(s) of series name{job=...,namespace=...} in a /metrics text, one a line."""
    values = [
        line.split()[1]
        for line in text.splitlines()
        if line.startswith(name + "{")
        and f'job="{job}"' in line
        and f'namespace="{ns}"' in line
        and len(line.split()) > 1
    ]
    return "\n".join(values)


def counter_values(text: str, name: str) -> str:
    """The values of the unlabelled series `name`, as integers, one a line."""
    values = [
        str(int(float(line.split()[1])))
        for line in text.splitlines()
        if line.split()[:1] == [name] and len(line.split()) > 1
    ]
    return "\n".join(values)
