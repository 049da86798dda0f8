"""Prometheus in the cluster's network namespace, finding the ranks and the operator by Kubernetes service discovery.

Contract: start(run, binary, opns) gives ServiceAccount opns/prometheus the rights discovery and
GET /metrics need (manifests.prometheus_rbac), writes its token, the cluster's CA and a
configuration into $PPU_CLUSTER_DIR/prometheus, and starts `binary` (Prometheus 2.54 built from
its Go module: Debian's 2.42 is built without Kubernetes discovery) inside the cluster's network
namespace on 127.0.0.1:9090, its output in prometheus.log there. The run ends it on the way out.
Two scrape jobs: ppu-ranks (the chart's PodMonitor as plain pod discovery) and ppu-operator (the
chart's metrics Service through its endpoints, with the token the operator's metrics auth checks).
"""

import shutil
from pathlib import Path
from string import Template

from . import kube, manifests
from .run import Run

URL = "http://127.0.0.1:9090"

_CONFIG = Template("""\
global: {scrape_interval: 2s, evaluation_interval: 2s}
scrape_configs:
  - job_name: ppu-ranks     # the chart's PodMonitor, as plain service discovery
    kubernetes_sd_configs:
      - role: pod
        api_server: https://127.0.0.1:443
        tls_config: {ca_file: ${dir}/ca.crt}
        bearer_token_file: ${dir}/token
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_label_ppu_dev_job], regex: .+, action: keep}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_pod_label_ppu_dev_job], target_label: job}
      - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
  - job_name: ppu-operator  # the chart's metrics Service, through its endpoints
    honor_labels: true
    bearer_token_file: ${dir}/token
    kubernetes_sd_configs:
      - role: endpoints
        namespaces: {names: [${opns}]}
        api_server: https://127.0.0.1:443
        tls_config: {ca_file: ${dir}/ca.crt}
        bearer_token_file: ${dir}/token
    relabel_configs:
      - {source_labels: [__meta_kubernetes_service_name], regex: ppu-operator-metrics, action: keep}
      - {source_labels: [__meta_kubernetes_endpoint_port_name], regex: metrics, action: keep}
""")


def start(run: Run, binary: str, opns: str) -> Path:
    """Starts Prometheus in the cluster's network namespace; returns its log file."""
    kube.apply(manifests.prometheus_rbac(opns))
    directory = run.cluster.state_dir / "prometheus"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(
        kube.kubectl("-n", opns, "create", "token", "prometheus", "--duration=2h", json=False)
    )
    shutil.copyfile(run.cluster.state_dir / "pki" / "ca.crt", directory / "ca.crt")
    config = directory / "prometheus.yml"
    config.write_text(_CONFIG.substitute(dir=directory, opns=opns))
    log = directory / "prometheus.log"
    flags = [f"--config.file={config}", f"--storage.tsdb.path={directory / 'tsdb'}"]
    flags += ["--web.listen-address=127.0.0.1:9090", "--log.level=warn"]
    run.background(run.cluster.netns_background(binary, *flags, log=log))
    return log
