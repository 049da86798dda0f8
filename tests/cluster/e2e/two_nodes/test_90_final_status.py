"""Step 4 of the two-node program, its last: the live jobs' final perplexities inside the fault-free band.

Contract: the band's three local fault-free runs (the `band` fixture, started before the first
cluster) all succeed, and state.spread_perplexity (test_20_node_lost_live) and
state.part_perplexity (test_30_node_partitioned) are each inside their band
(scripts/cluster/band.sh: seed 0's final perplexity -/+ the seeds' range), each with its own PASS
line. Prints the program's last line.
"""

from ..band import Band, assert_inside
from ..node_loss import NODE_2
from ..run import Run
from .state import State


def test_4_live_perplexities_inside_fault_free_band(run: Run, band: Band, state: State) -> None:
    bounds = band.checked_bounds("step 4")
    assert_inside(bounds, "spread", state.spread_perplexity)
    run.progress.passed(
        f"live: after losing {NODE_2}, perplexity {state.spread_perplexity} inside the fault-free band {bounds} "
        f"(seed 0 fault-free: {bounds.p0:.3f})"
    )
    assert_inside(bounds, "part", state.part_perplexity)
    run.progress.passed(
        f"live: after partitioning {NODE_2}, perplexity {state.part_perplexity} inside the fault-free band {bounds}"
    )
    run.progress.done()
