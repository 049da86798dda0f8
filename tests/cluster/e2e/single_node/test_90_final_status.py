"""Phase 5c of the one-node program, its last: the live job's final perplexity inside the fault-free band.

Contract: the band's three local fault-free runs (the `band` fixture, started before the cluster)
all succeed, and state.live_perplexity (test_50_live_chaos) is inside their band
(scripts/cluster/band.sh: seed 0's final perplexity -/+ the seeds' range). Prints the program's
last line.
"""

from ..band import Band, assert_inside
from ..run import Run
from .state import State


def test_5c_live_perplexity_in_fault_free_band(run: Run, band: Band, state: State) -> None:
    """The band's three local runs started with the session; what remains of them runs alone now."""
    bounds = band.checked_bounds("step 5c")
    assert_inside(bounds, "live job", state.live_perplexity)
    run.progress.passed(
        f"chaos: the live job's perplexity {state.live_perplexity} after 5 faults is inside the fault-free band "
        f"{bounds} (seed 0 fault-free: {bounds.p0:.3f})"
    )
    run.progress.phase("fault-free band (what was left of it)")
    run.progress.done()
