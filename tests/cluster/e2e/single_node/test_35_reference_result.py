"""The end of phase 2 of the one-node program: the reference job's result, which later phases compare with.

Contract: PPUJob ref (started by test_20_training_and_security) Succeeds within 900 s with one
param_checksum on all 4 ranks, left in state.ref_checksum: the parameters test_40_gang_restart's
interrupted jobs must end at. Read back 20 s after completion, its status is its ranks' result:
ResultReported True, outerRound the ranks' (and ROUNDS), perplexity rank 0's final one (within
5e-4) and lastCheckpointRound the last one they wrote.
"""

import math
import time

from .. import summaries
from ..ppujob import Jobs
from ..run import Run
from . import NS, ROUNDS
from .checks import same
from .state import State


def test_2_uninterrupted_job_result(run: Run, state: State, jobs: Jobs) -> None:
    """The job of phase 2 Succeeds; its final status is its ranks' own result, read after the last scrape."""
    ref = jobs("ref")
    ref.wait_phase("Succeeded", 900)
    ref_dir = summaries.pv_dir(NS, "ckpt-ref")
    ref_sum = summaries.checksum(ref_dir, 0)
    for rank in (1, 2, 3):
        assert summaries.checksum(ref_dir, rank) == ref_sum, "ref ranks disagree on param_checksum"
    state.ref_checksum = ref_sum
    run.progress.say(f"ref Succeeded, param_checksum {ref_sum} on all 4 ranks")
    # Read back a while after completion, when the last scrape is long over.
    time.sleep(20)
    rank_0 = summaries.load(ref_dir, 0)
    now = ref.status()
    assert now.condition_status("ResultReported") == "True", (
        f"ref: condition ResultReported is not True: {now.dump_conditions()}"
    )
    outer_rounds = rank_0.outer_rounds
    assert same(now.outer_round, outer_rounds) and same(now.outer_round, ROUNDS), (
        f"ref: status.outerRound '{now.outer_round}', the ranks ended at round {outer_rounds} of {ROUNDS}"
    )
    final = float(rank_0.eval_perplexity)
    shown = float(now.perplexity) if now.perplexity else math.nan
    assert abs(shown - final) <= 5e-4 + 1e-9 * final, (
        f"ref: status.perplexity '{now.perplexity}' is not the ranks' final {rank_0.eval_perplexity}"
    )
    last_written = rank_0.last_checkpoint_round
    assert same(now.last_checkpoint_round, last_written), (
        f"ref: status.lastCheckpointRound '{now.last_checkpoint_round}', the ranks' last written {last_written}"
    )
    run.progress.say(
        f"ref's final status is the ranks' result: round {now.outer_round}, perplexity {now.perplexity}, "
        f"checkpoint round {now.last_checkpoint_round}"
    )
    run.progress.phase("uninterrupted job")
