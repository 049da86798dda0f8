#!/usr/bin/env python3
"""What scripts/demo.sh prints after its run: loss, perplexity (next to the corpus's exact floor),
memory and FLOPs savings, and network use, from rank 0's summary (read through python/ppu).

usage: scripts/demo_report.py SUMMARY_DIR     (ppu-launch --summary-dir SUMMARY_DIR)
"""

import os
import sys
from typing import NamedTuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

from ppu import files, summary


class Parts(NamedTuple):
    """A summary's state_bytes (or state_bytes_full_training) in the order the demo lists them;
    the total is printed apart."""

    weights: float
    gradients: float
    inner_optimizer: float
    outer_optimizer: float
    offloaded: float


def parts(state):
    """`state` (a Record of the summary) as Parts: each read by its name, which the contract checks."""
    return Parts(*(getattr(state, name) for name in Parts._fields))


def mb(b):
    return b / 2**20


def main():
    s = summary.load(files.summary_file(sys.argv[1], 0))
    st, full = s.state_bytes, s.state_bytes_full_training
    floor = s.eval_perplexity_floor if s.eval_perplexity_floor is not None else float("nan")
    print()
    print(
        f"PPU demo: {s.method} {s.slicing.mode} N={s.slicing.slices}, {s.world_size} ranks, {s.steps} steps, "
        f"{s.outer_rounds} outer rounds"
    )
    print(f"  final train loss     {s.final_loss:.4f}")
    print(
        f"  eval loss            {s.eval_loss:.4f}   perplexity {s.eval_perplexity:.3f} (best achievable {floor:.3f})"
    )
    print(
        f"  trainable per rank   {s.trainable_params:,} of {s.total_params:,} parameters "
        f"({100 * s.trainable_params / s.total_params:.1f}%)"
    )
    print(
        f"  state memory / rank  {mb(st.total):.2f} MiB vs {mb(full.total):.2f} MiB full training "
        f"({100 * (1 - st.total / full.total):.1f}% saved)"
    )
    for name, mine, whole in zip(Parts._fields, parts(st), parts(full), strict=True):
        print(f"    {name:<18} {mb(mine):8.2f} MiB  (full {mb(whole):8.2f} MiB)")
    print(
        f"  FLOPs executed       {s.flops_executed:.3e} vs {s.flops_full_backward:.3e} with a full backward "
        f"({100 * s.flops_saved_fraction:.1f}% saved)"
    )
    print(
        f"  network per rank     {s.bytes_sent:.3e} bytes sent, {s.bytes_received:.3e} received in {s.outer_rounds} "
        f"rounds ({s.network_wait_seconds:.2f} s waiting); final checksum {s.param_checksum}"
    )


if __name__ == "__main__":
    main()
