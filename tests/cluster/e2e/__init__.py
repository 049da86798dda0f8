"""The cluster end-to-end tests: PPUJobs on a real cluster of one node and of two (ctest label `cluster`).

Contract: a pytest package run by the pinned pytest (scripts/install-pytest.sh), one directory per
program: single_node/ (ctest cluster_e2e) and two_nodes/ (ctest cluster_nodes_e2e), each run by a
pytest session of its own. A program's test files are named so that pytest's order (file names,
then definition order) is its phase order, one file per concern; each test is one phase, run
against state the earlier ones left (a failed phase skips the rest of the session). conftest.py
holds the fixtures both programs share (run, image, helm, band, tools, cluster, operator chart,
operator, namespace, jobs), the one cleanup and the failure hooks; each program's conftest.py its own fixtures
(its Program, the state crossing its files); the other modules here are the library they share.
Needs root, podman and the cluster tools (docs/DEPLOY.md). REPO is the repository's root; its
python/ directory is put on sys.path here, so that the modules read summaries and PPUJob status
through the contract package ppu (python/ppu).
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "python"))
