"""Run summaries (`ppu-train --summary FILE`, `ppu-launch --summary-dir DIR`), checked against
the contract's field list (runtime/core/run_summary.h) and read by attribute:

  s = load(path)                 a Summary; ContractError when a field is missing, unknown or of
                                 another type (check=False: read as it is, e.g. an archived run's
                                 older summary; a field the contract does not know still fails)
  s.eval_loss, s.recovery.theta_mismatches, s.state_bytes.total, s.recovery.faults["killed"].count
  load_dir(dir, ranks)           every rank's Summary of a launch, in rank order; ranks=None: the
                                 ranks whose file is there
  of(data, where)                a Summary of a JSON object already read
  FIELDS                         the contract's summary fields (name -> shape)
  field_names(shape)             a shape's field names by attribute: field_names(SHAPE).eval_loss
                                 is "eval_loss", and a name the contract lacks is an AttributeError
"""

import json
import os
import types

from . import CONTRACT, files
from .record import ContractError, Record, check

SHAPE = CONTRACT["summary"]
FIELDS = SHAPE["fields"]


def field_names(shape):
    """The fields of a shape of the contract by attribute (see the module docstring): for code that
    writes a summary's keys (a report's own JSON) rather than reading them."""
    return types.SimpleNamespace(**{name: name for name in shape["fields"]})


class Summary(Record):
    """One rank's run summary (see the module docstring)."""

    __slots__ = ()


def of(data, where="summary", check_fields=True):
    if check_fields:
        err = check(data, SHAPE, where)
        if err:
            raise err
    return Summary(data, SHAPE, where)


def load(path, check=True):
    with open(path) as f:
        data = json.load(f)
    return of(data, where=path, check_fields=check)


def load_dir(directory, ranks=None, check=True):
    """Summaries of DIR/rank-<r>.json for r in range(ranks) (every one must be there), or, with
    ranks=None, of every rank whose file is there (rank 0 up, stopping at the first gap)."""
    out = []
    rank = 0
    while ranks is None or rank < ranks:
        path = files.summary_file(directory, rank)
        if not os.path.exists(path):
            if ranks is None:
                break
            raise ContractError(f"{path}: no summary for rank {rank} of {ranks}")
        out.append(load(path, check))
        rank += 1
    return out


__all__ = ["FIELDS", "ContractError", "Summary", "load", "load_dir", "of"]
