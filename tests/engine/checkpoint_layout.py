"""A checkpoint's names on disk, read from their one definition (namespace checkpoint_file in
runtime/core/checkpoint_names.h) so that no test spells them:
DIR/round-NNNNNN/{rank-NNNNN.pt..., global.pt, manifest.json}."""

import os
import re

_HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "core", "checkpoint_names.h")


def _names():
    with open(_HEADER) as f:
        text = f.read()
    block = re.search(r"namespace ppu::checkpoint_file \{(.*?)\}  // namespace ppu::checkpoint_file", text, re.DOTALL)
    if not block:
        raise RuntimeError(f"{_HEADER}: no namespace checkpoint_file block")
    return dict(re.findall(r'inline constexpr const char\* (k\w+) = "([^"]*)";', block.group(1)))


_N = _names()
MANIFEST = _N["kManifest"]
GLOBAL = _N["kGlobal"]
ROUND_PREFIX = _N["kRoundPrefix"]
REACHED_NOTE = _N["kReachedNote"]


def _printf(fmt, value):
    """C's printf of one integer: Python's % once the length modifier ("ll") is dropped."""
    return re.sub(r"(%[0-9]*)(?:hh|h|ll|l|j|z)?([di])", r"\1\2", fmt) % value


def round_dir(round_):
    return _printf(_N["kRoundDirFormat"], round_)


def rank_part(rank):
    return _printf(_N["kRankPartFormat"], rank)


def is_rank_part(name):
    return re.fullmatch(re.sub(r"%0?\d*d", r"\\d+", re.escape(_N["kRankPartFormat"])), name) is not None


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
