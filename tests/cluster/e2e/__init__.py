"""The cluster end-to-end tests: PPUJobs on a real cluster of one node and of two (ctest label `cluster`).

Contract: a pytest package run by the pinned pytest (scripts/install-pytest.sh), one module per
program: test_single_node.py (ctest cluster_e2e) and test_two_nodes.py (ctest cluster_nodes_e2e).
Each test is one phase of its program, run in definition order against state the earlier ones
left (a failed phase skips the rest of its module); conftest.py holds the fixtures (image, tools,
cluster, operator, namespace) and the one cleanup, the other modules the library they share.
Needs root, podman and the cluster tools (docs/DEPLOY.md). REPO is the repository's root.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
