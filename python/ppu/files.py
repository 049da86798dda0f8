"""The names of the files PPU's binaries write, from the contract (runtime/core/checkpoint_names.h,
run_summary.h, job_contract.h):

  summary_file(dir, rank)      DIR/rank-<r>.json, a rank's summary under ppu-launch --summary-dir
  MANIFEST, GLOBAL, ROUND_PREFIX, REACHED_NOTE, NOTICE_NOTE, FALLBACK_NOTE, TERMINATION_LOG
  round_dir(r), rank_part(r), is_rank_part(name), rounds_in(ckpt), listing(ckpt)
      a checkpoint directory: DIR/round-NNNNNN/{rank-NNNNN.pt..., global.pt, manifest.json} and
      the notes beside the rounds
  receipt(r), is_receipt(name) a member's receipt of a background upload in a round's directory
"""

import os
import re

from . import CONTRACT

_FILES = CONTRACT["files"]
_CKPT = _FILES["checkpoint"]

MANIFEST = _CKPT["manifest"]
GLOBAL = _CKPT["global"]
ROUND_PREFIX = _CKPT["round_prefix"]
REACHED_NOTE = _CKPT["reached_note"]
NOTICE_NOTE = _CKPT["notice_note"]
FALLBACK_NOTE = _CKPT["fallback_note"]
TERMINATION_LOG = _FILES["termination_log"]


def _printf(fmt, value):
    """C's printf of one integer: Python's % once the length modifier ("ll") is dropped."""
    return re.sub(r"(%[0-9]*)(?:hh|h|ll|l|j|z)?([di])", r"\1\2", fmt) % value


def summary_file(directory, rank):
    return os.path.join(directory, _printf(_FILES["rank_summary_format"], rank))


def round_dir(round_):
    return _printf(_CKPT["round_dir_format"], round_)


def rank_part(rank):
    return _printf(_CKPT["rank_part_format"], rank)


def receipt(rank):
    return _printf(_CKPT["receipt_format"], rank)


def _named_by(fmt, name):
    """Whether `name` is what printf format `fmt` (one integer) makes of some number."""
    return re.fullmatch(re.sub(r"%0?\d*d", r"\\d+", re.escape(fmt)), name) is not None


def is_rank_part(name):
    return _named_by(_CKPT["rank_part_format"], name)


def is_receipt(name):
    return _named_by(_CKPT["receipt_format"], name)


def rounds_in(ckpt):
    """The rounds of checkpoint directory `ckpt` (finished or not), ascending, as numbers."""
    return sorted(
        int(d[len(ROUND_PREFIX) :]) for d in os.listdir(ckpt) if d.startswith(ROUND_PREFIX) and ".tmp" not in d
    )


def listing(ckpt):
    """Checkpoint directory `ckpt` as {round directory: {file: bytes}, note file: bytes}: equal
    listings mean nothing in it was written, added or removed (sizes; not contents)."""
    out = {}
    for name in sorted(os.listdir(ckpt)):
        path = os.path.join(ckpt, name)
        if os.path.isdir(path):
            out[name] = {f: os.path.getsize(os.path.join(path, f)) for f in sorted(os.listdir(path))}
        else:
            out[name] = os.path.getsize(path)
    return out
