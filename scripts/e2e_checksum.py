#!/usr/bin/env python3
"""scripts/e2e.sh's parameter checksums, read from the ranks' summaries through python/ppu.

usage: e2e_checksum.py job JOB_DIR JOB K
           the final checksum of the PPUJob's K ranks, from the summaries the node agent had them
           write (tests/e2e/node_agent.py: JOB_DIR/summary-<pod>.json); the ranks must agree
       e2e_checksum.py reference JOB_SUM SUMMARY CONFIG WORK ROOT
           whether the uninterrupted reference run of CONFIG (its summary SUMMARY) ended at the
           job's checksum JOB_SUM; CONFIG is named relative to WORK when they differ, to ROOT
           when they agree
Prints the checksum, or the sentence e2e.sh says; on a failure prints what failed and exits 1.
"""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

from ppu import summary


def pod(job, rank):
    """The operator's name of the job's rank pod (the node agent's pid files are named after it too)."""
    return f"{job}-rank-{rank}"


def agent_summary(job_dir, pod_name):
    """Where tests/e2e/node_agent.py has a pod's ppu-train write its summary (--summary)."""
    return os.path.join(job_dir, f"summary-{pod_name}.json")


def fail(sentence):
    """What failed, on stdout for e2e.sh's die; exit status 1."""
    print(sentence)
    sys.exit(1)


def checksum(path):
    try:
        return summary.load(path).param_checksum
    except (OSError, ValueError) as e:  # no file, not JSON, or not the contract's summary (ContractError)
        fail(f"cannot read the summary {path}: {e}")


def job(job_dir, name, ranks):
    first = checksum(agent_summary(job_dir, pod(name, 0)))
    for r in range(1, ranks):
        if checksum(agent_summary(job_dir, pod(name, r))) != first:
            fail("ranks disagree on param_checksum")
    print(first)


def reference(job_sum, path, config, work, root):
    ref = checksum(path)
    if ref != job_sum:
        named = config.removeprefix(work + "/")
        fail(f"param_checksum {job_sum} (killed and resumed job) != {ref} (uninterrupted run of {named})")
    print(f"param_checksum {job_sum} equals the uninterrupted run of {config.removeprefix(root + '/')}")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "job":
        job(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 7 and sys.argv[1] == "reference":
        reference(*sys.argv[2:])
    else:
        sys.exit(__doc__.split("\n\n", 1)[1])


if __name__ == "__main__":
    main()
