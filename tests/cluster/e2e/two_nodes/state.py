"""What a step of the two-node program leaves for the steps after it, in files after its own.

Contract: one State per session (conftest.py's `state` fixture), empty until the step that fills
a field has passed: lost (test_10_spread: the ranks of job spread on node 2, which
test_20_node_lost_live loses), spread_perplexity (test_20_node_lost_live) and part_perplexity
(test_30_node_partitioned): the live jobs' final perplexities, judged by test_90_final_status.
"""

from dataclasses import dataclass, field


@dataclass
class State:
    """What a step leaves for the later ones."""

    lost: list[str] = field(default_factory=list)
    spread_perplexity: str | None = None
    part_perplexity: str | None = None
