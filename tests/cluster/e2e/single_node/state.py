"""What a phase of the one-node program leaves for the phases after it, in files after its own.

Contract: one State per session (conftest.py's `state` fixture), empty until the phase that
fills a field has passed: service_account (test_10_install: the operator's ServiceAccount, which
the security checks probe), ref_checksum (test_35_reference_result: the uninterrupted job's
param_checksum, the reference of test_40_gang_restart), store_deleted_at_round (test_50_live_chaos:
the round at which its rendezvous pod was deleted) and live_perplexity (test_50_live_chaos: the
live job's final perplexity, judged by test_90_final_status).
"""

from dataclasses import dataclass


@dataclass
class State:
    """What a phase leaves for the later ones."""

    service_account: str = ""
    ref_checksum: str = ""
    live_perplexity: str | None = None
    store_deleted_at_round: int = 0
