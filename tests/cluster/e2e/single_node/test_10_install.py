"""Phase 1 of the one-node program: helm installs the operator, which runs in-cluster under its own ServiceAccount.

Contract: the operator's Deployment has a ServiceAccount other than `default`, was started
without --kubeconfig (the in-cluster config path) and its pod becomes Ready within 60 s. Leaves
the operator installed for every later phase and its ServiceAccount in state.service_account.
"""

import json

from .. import kube
from ..helm import OperatorChart
from ..run import Run
from . import OPERATOR, OPNS
from .state import State


def test_1_helm_install_operator_in_cluster(run: Run, operator: OperatorChart, state: State) -> None:
    deployment = kube.kubectl("-n", OPNS, "get", "deploy", "ppu-operator")
    sa = deployment["spec"]["template"]["spec"].get("serviceAccountName", "")
    assert sa and sa != "default", f"operator Deployment has no ServiceAccount of its own ('{sa}')"
    pods = kube.pods(OPNS, OPERATOR)
    assert pods, "the operator Deployment has no pod"
    op_pod = pods[0]["metadata"]["name"]
    args = json.dumps(pods[0]["spec"]["containers"][0].get("args", []))
    assert "kubeconfig" not in args, "operator started with --kubeconfig; the in-cluster path is not exercised"
    kube.kubectl("-n", OPNS, "wait", "--for=condition=Ready", f"pod/{op_pod}", "--timeout=60s", json=False)
    state.service_account = sa
    run.progress.say(f"operator {op_pod} Ready under ServiceAccount {sa}, in-cluster config")
    run.progress.phase("helm install")
