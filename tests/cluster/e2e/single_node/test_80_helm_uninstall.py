"""The one-node program's operator removed: helm uninstall, after every phase that needs it.

Contract: `helm uninstall` of the release the `operator` fixture installed; it fails when helm does.
"""

from ..helm import OperatorChart
from ..run import Run


def test_helm_uninstall(run: Run, operator: OperatorChart) -> None:
    operator.uninstall()
    run.progress.phase("helm uninstall")
