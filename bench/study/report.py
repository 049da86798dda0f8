#!/usr/bin/python3
"""Writes the study's tables and plots from the finished runs of run.sh.

Contract: `report.py OUT [--corpus DIR]` reads OUT/runs/NAME-sSEED/{rank-*.json, run.log, rusage,
done} for every run with a `done` marker (others are skipped with a note), the token shards
DIR/data/{train,val}.bin (DIR defaults to OUT/corpus), the statistical plan analysis.yaml and,
for the row order, the `paired` tags and their `vs=NAME` references, grid.tsv next to this file.
It writes into OUT:
  table.md         one row per grid row that ran: final eval loss of θ (mean, and each seed's),
                   perplexity, tokens, FLOPs, state, peak RSS, bytes sent, wall time; then per row
                   the parameters, the CPU models, the kernel path and the resolved outer lr,
                   outer momentum, inner lr and inner grad_clip
  paired.md        each `paired` row against its reference row (streaming-diloco, or the row its
                   `vs=NAME` tag names) seed by seed: the differences in final eval loss, their
                   mean and sd, the paired t-test's p, Holm-adjusted over the family of every
                   comparison in the report, the Bonferroni interval, TOST against the declared
                   equivalence margin, the detectable size (exact noncentral-t power) and the
                   verdict (stats.py)
  summary.json     every number above, per seed and per row, the eval curves and the unigram
                   entropy reference; top-level keys: study, statistics, unigram, runs, paired
  loss_vs_tokens.png, loss_vs_flops.png, paired.png, memory.png, ppl_vs_n.png, gap_vs_params.png
  (gnuplot), plots.gp and the *.dat files it reads (gnuplot plots.gp in OUT redraws them).
Fields used from the rank summaries (ppu-train --summary): eval_loss, eval_perplexity, tokens,
steps, world_size, total_params, flops_executed, flops_full_backward, state_bytes (weights,
gradients, inner_optimizer, outer_optimizer, offloaded, total), bytes_sent, method, slicing,
kernel_path {cpu_model, openblas_core, aten_capability, onednn} and optimizer_settings {inner,
outer}, read through python/ppu (ppu.summary.load with check=False: a study's runs are archived,
written by the ppu-train of their day, and may lack fields that today's summaries have; a field
this report uses that a summary lacks is an error naming it). Runs whose kernel paths differ in openblas_core, aten_capability or onednn are neither
paired nor compared: report.py exits naming two of them (the CPU model may differ: on one path
the bits do not depend on it); a summary without kernel_path predates the study's v2 and its run
must be re-run. Eval curves come from rank 0's "eval step N loss X" log lines (evaluations of the
global θ, the same on every rank); the final point is the summary's eval_loss. rusage is "status
peak_rss_bytes wall_seconds" (peak_rss.py). Exits non-zero with a message naming the run or file
when an input is missing or malformed. Needs Debian's /usr/bin/python3 with python3-scipy and
python3-yaml (scripts/install-deps.sh --test) for the statistics, and gnuplot.
"""

import dataclasses
import glob
import itertools
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import sys
from array import array
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
from ppu import files, summary  # the repository's python/, above
from ppu.record import ContractError

# The rank summary's fields, and those of the two objects this report keeps under their own names
# (each run's state_bytes and kernel_path in summary.json are the summaries', field for field).
SUMMARY_FIELD = summary.field_names(summary.SHAPE)
STATE = summary.field_names(summary.FIELDS[SUMMARY_FIELD.state_bytes])
KERNEL = summary.field_names(summary.FIELDS[SUMMARY_FIELD.kernel_path])
REFERENCE = "streaming-diloco"  # the paired rows are compared with this row, seed by seed
EVAL = re.compile(r"^\[rank 0\].* eval step (\d+) loss ([0-9.]+)")
# The state_bytes components in the order memory.png stacks them (total: their sum).
COMPONENTS = [STATE.weights, STATE.gradients, STATE.inner_optimizer, STATE.outer_optimizer, STATE.offloaded]
# Paper §3.1 items (iv) outer-optimizer state and (v) offloaded parameters: the runtime keeps θ
# and the outer momentum in fp32 host memory, not on the accelerator (docs/RUNTIME.md).
HOST = {STATE.outer_optimizer, STATE.offloaded}
COMPONENT_TITLE = {
    STATE.weights: "weights",
    STATE.gradients: "gradients",
    STATE.inner_optimizer: "inner AdamW moments",
    STATE.outer_optimizer: "outer momentum (host)",
    STATE.offloaded: "global θ, offloaded (host)",
}
COMPONENT_COLOUR = {
    STATE.weights: "#4c72b0",
    STATE.gradients: "#dd8452",
    STATE.inner_optimizer: "#55a868",
    STATE.outer_optimizer: "#8172b3",
    STATE.offloaded: "#937860",
}

# Method families (memory.png's groups, the loss plots' panels, ppl_vs_n.png's lines). Rows not
# named here are shown with the ablations.
BASELINES = ["ddp", "diloco", "streaming-diloco"]
PPU_MLP = ["ppu-mlp-2", "ppu-mlp-4", "ppu-mlp-8"]
PPU_MLP_HEADS = ["ppu-mlp-heads-2", "ppu-mlp-heads-4", "ppu-mlp-heads-8"]
# More tokens than the rest: a curve among the methods; its state is that of the row it extends.
LONGER_OF = {"ppu-mlp-8-1.5x": "ppu-mlp-8"}
LONGER = list(LONGER_OF)
# What the ablations change: 1/4 MLPs (App. A.1, A.2, D; ppu-wo-sliced: 1/4 + heads), and
# Streaming DiLoCo for the heads-only slicing (ppu-heads-4), which is paired with it.
ABLATION_REFERENCES = ["streaming-diloco", "ppu-mlp-4", "ppu-mlp-heads-4"]
STYLE = {  # colour, point type; the same in every plot
    "ddp": ("#000000", 1),
    "diloco": ("#1f77b4", 2),
    "streaming-diloco": ("#2ca02c", 5),
    "ppu-mlp-2": ("#d62728", 7),
    "ppu-mlp-4": ("#ff7f0e", 9),
    "ppu-mlp-8": ("#8c564b", 11),
    "ppu-mlp-8-1.5x": ("#e377c2", 13),
    "ppu-mlp-heads-2": ("#c5b0d5", 4),
    "ppu-mlp-heads-4": ("#9467bd", 4),
    "ppu-mlp-heads-8": ("#5b3d91", 4),
    "ppu-grouping-slices": ("#17becf", 3),
    "ppu-wo-sliced": ("#bcbd22", 6),
    "ppu-horizontal": ("#7f7f7f", 8),
    "ppu-detach-all-but-k": ("#393b79", 10),
    "ppu-k-plus-random": ("#843c39", 12),
    "ppu-heads-4": ("#3182bd", 14),
}
EXTRA_COLOURS = ["#637939", "#e7969c", "#6b6ecf", "#b5cf6b", "#ad494a", "#3182bd"]
MIB = 1 / 2**20

# What decides a CPU run's bits besides its config and seed (runtime/core/run_summary.h); runs
# must agree on these to be paired or compared. The CPU model is listed, not compared.
KERNEL_KEYS = (KERNEL.openblas_core, KERNEL.aten_capability, KERNEL.onednn)
ATEN_CAPABILITIES = ("default", "avx2", "avx512")


def die(msg):
    sys.exit(f"report.py: {msg}")


def mean(xs):
    return sum(xs) / len(xs)


# ---------------------------------------------------------------------------------------------
# Records: this report's own, written into summary.json as JSON objects of their fields in order
# (json.dump's default, as_json)


@dataclasses.dataclass
class Unigram:
    """The val split's unigram entropy under the train split's counts (unigram_entropy)."""

    nats_per_token: float
    perplexity: float
    vocab: int
    train_tokens: int
    val_tokens: int
    smoothing: str
    files: list


@dataclasses.dataclass
class Run:
    """One run, a grid row's seed, from its rank summaries, rusage and run.log (load_run)."""

    seed: int
    eval_loss: float  # rank 0's: the global θ's, the same on every rank
    eval_perplexity: float
    world_size: int
    steps: int
    tokens: float  # all ranks
    flops_executed_per_rank: float  # mean over the ranks
    flops_full_backward_per_rank: float
    flops_saved_fraction: float
    state_bytes: dict  # {component (STATE): bytes}, the largest rank's
    bytes_sent_per_rank: float  # the largest rank's
    peak_rss_bytes: int
    wall_seconds: float
    method: str
    slicing: dict
    total_params: int
    kernel_path: dict  # {KERNEL_KEYS: rank 0's}
    cpu_models: list
    optimizer_settings: dict
    curve: list  # [(step, tokens all ranks, FLOPs per rank, eval loss)]

    def as_json(self):
        return dataclasses.asdict(self) | {"curve": [list(p) for p in self.curve]}


@dataclasses.dataclass
class Row:
    """A grid row over its seeds (row_summary); main adds the state against the row's reference."""

    seeds: list
    eval_loss: list  # per seed
    eval_loss_mean: float
    eval_perplexity: list
    eval_perplexity_mean: float
    world_size: int
    steps: int
    tokens: float
    flops_executed_per_rank: float
    flops_full_backward_per_rank: float
    flops_saved_fraction: float
    state_bytes: dict
    peak_rss: int
    bytes_sent: float
    wall_seconds: list
    wall_seconds_mean: float
    method: str
    slicing: dict
    total_params: int
    kernel_path: dict
    cpu_models: list
    optimizer_settings: dict
    per_seed: list  # each seed's Run, as_json
    # Set by main; the last three only for a row with a reference (left out of the JSON otherwise).
    device_state_bytes: float | None = None
    host_state_bytes: float | None = None
    state_reference: str | None = None
    state_vs_reference: float | None = None
    device_state_vs_reference: float | None = None

    def as_json(self):
        unset = {f.name for f in dataclasses.fields(self) if f.default is None and getattr(self, f.name) is None}
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in unset}


@dataclasses.dataclass
class Study:
    """summary.json's "study": what every row shares."""

    world_size: int
    tokens_per_run: float
    reference: str
    host_components: list
    rows: list
    main_model_params: int
    other_model_sizes: list
    kernel_path: dict
    cpu_models: list


def as_json(record):
    """json.dump's default: a record above as its JSON object."""
    return record.as_json() if hasattr(record, "as_json") else dataclasses.asdict(record)


# ---------------------------------------------------------------------------------------------
# Inputs


def read_grid():
    """grid.tsv's rows in order: [(name, tags)]; a tag `vs=NAME` is kept as it is."""
    path = os.path.join(HERE, "grid.tsv")
    try:
        lines = pathlib.Path(path).read_text().splitlines()
    except OSError as e:
        die(f"cannot read the grid {path}: {e}")
    rows = []
    for line in lines:
        f = line.split("\t")
        if not f[0] or f[0].startswith("#"):
            continue
        tags = set(f[3].split(",")) if len(f) > 3 and f[3] else set()
        rows.append((f[0], tags))
    return rows


def reference_of(name, tags):
    """The row a `paired` row is compared with: its `vs=NAME` tag, else REFERENCE."""
    refs = [t[3:] for t in tags if t.startswith("vs=")]
    if len(refs) > 1 or (refs and not refs[0]):
        die(f"grid row {name} has tags {','.join(sorted(tags))}: at most one vs=NAME, with a name")
    return refs[0] if refs else REFERENCE


def comparisons(grid):
    """[(row, reference)] for every `paired` row of the grid that is not its own reference."""
    names = {n for n, _ in grid}
    out = []
    for n, tags in grid:
        if "paired" not in tags:
            continue
        ref = reference_of(n, tags)
        if ref not in names:
            die(f"grid row {n} is paired with {ref}, which is not a row of the grid")
        if ref != n:
            out.append((n, ref))
    return out


def read_shard(path):
    """Token shard (runtime/data/token_shard.h): 64-byte header, then the tokens. -> (vocab, tokens)"""
    try:
        buf = pathlib.Path(path).read_bytes()
    except OSError as e:
        die(f"token shard {path} is missing or unreadable ({e.strerror}); the corpus is built by corpus.sh")
    if len(buf) < 64 or buf[:8] != b"PPUTOKS\0":
        die(f"token shard {path} is malformed: no 'PPUTOKS\\0' magic in a 64-byte header")
    version, width, count, vocab = struct.unpack_from("<IIQQ", buf, 8)
    if version != 1 or width not in (2, 4):
        die(f"token shard {path} is malformed: version {version}, {width} bytes per token (want 1, 2 or 4)")
    if len(buf) != 64 + count * width:
        die(f"token shard {path} is malformed: {len(buf)} bytes, the header says 64 + {count} x {width}")
    tokens = array("H" if width == 2 else "I")
    if tokens.itemsize != width:
        tokens = array("L" if width == 4 else "H")
    tokens.frombytes(buf[64:])
    if sys.byteorder == "big":
        tokens.byteswap()
    if count and max(tokens) >= vocab:
        die(f"token shard {path} is malformed: token {max(tokens)} is outside vocab {vocab}")
    return vocab, tokens


def unigram_entropy(data_dir):
    """Cross-entropy (nats/token) of the val split under the train split's unigram distribution,
    add-one smoothed over the vocab: p(t) = (count_train(t) + 1) / (train tokens + vocab)."""
    train_path, val_path = os.path.join(data_dir, "train.bin"), os.path.join(data_dir, "val.bin")
    vocab, train = read_shard(train_path)
    val_vocab, val = read_shard(val_path)
    if val_vocab != vocab:
        die(f"token shards disagree on the vocab: {train_path} {vocab}, {val_path} {val_vocab}")
    if not val:
        die(f"token shard {val_path} holds no tokens")
    counts, denom = Counter(train), len(train) + vocab
    h = -sum(c * math.log((counts.get(t, 0) + 1) / denom) for t, c in Counter(val).items()) / len(val)
    return Unigram(
        nats_per_token=h,
        perplexity=math.exp(h),
        vocab=vocab,
        train_tokens=len(train),
        val_tokens=len(val),
        smoothing="add-one over the vocab",
        files=[train_path, val_path],
    )


def read(where, get):
    """get(), which reads fields of a rank summary; exits naming the run when one is missing (an
    archived summary is read as it is, check=False: ContractError on the first field it lacks)."""
    try:
        return get()
    except ContractError as e:
        die(f"{where}: {e}")


def eval_losses(log_lines):
    """{step: eval loss of θ} from rank 0's 'eval step N loss X' lines of a ppu-launch log (the
    final evaluation, after the last step, is logged otherwise: it is the summary's eval_loss)."""
    evals = {}
    for line in log_lines:
        m = EVAL.match(line)
        if m:
            evals[int(m.group(1))] = float(m.group(2))
    return evals


def kernel_path(x, where):
    """A rank summary's kernel_path, checked: {cpu_model, openblas_core, aten_capability, onednn}."""
    try:
        kp = x.kernel_path
    except ContractError:
        die(
            f"{where} has no kernel_path: the run predates the study's v2 (one pinned kernel path, issue 44) "
            "and must be re-run with today's run.sh"
        )
    try:
        ok = kp is not None and (
            isinstance(kp.cpu_model, str)
            and isinstance(kp.openblas_core, str)
            and kp.aten_capability in ATEN_CAPABILITIES
            and isinstance(kp.onednn, bool)
        )
    except ContractError:  # a field missing
        ok = False
    if not ok:
        raw = kp.as_dict() if kp is not None else None
        die(
            f"{where}: kernel_path {json.dumps(raw)} is not {{cpu_model: string, openblas_core: string, "
            f"aten_capability: {' | '.join(ATEN_CAPABILITIES)}, onednn: true | false}}"
        )
    return {name: getattr(kp, name) for name in vars(KERNEL)}


def path_key(kp):
    return tuple(kp[k] for k in KERNEL_KEYS)


def path_text(kp):
    return f"OpenBLAS {kp[KERNEL.openblas_core] or '(not OpenBLAS)'}, ATen {kp[KERNEL.aten_capability]}, " + (
        "oneDNN on" if kp[KERNEL.onednn] else "oneDNN off"
    )


def optimizer_settings(x, where):
    """A rank summary's optimizer_settings {inner: {...}, outer: {...}}, with the keys table.md shows."""
    o = read(where, lambda: x.optimizer_settings)
    if not (isinstance(o, dict) and isinstance(o.get("inner"), dict) and isinstance(o.get("outer"), dict)):
        die(f"{where}: optimizer_settings is not {{inner: {{...}}, outer: {{...}}}}")
    for section, key in (("outer", "lr"), ("outer", "momentum"), ("inner", "lr"), ("inner", "grad_clip")):
        if key not in o[section]:
            die(f"{where}: optimizer_settings.{section} has no '{key}'")
    return o


def fields_used(x):
    """The fields of rank summary x that load_run uses, besides kernel_path, optimizer_settings and
    the optional slicing: read once, so that a summary lacking one is refused before anything is
    computed (ContractError)."""
    return (
        x.eval_loss,
        x.eval_perplexity,
        x.tokens,
        x.steps,
        x.flops_executed,
        x.flops_full_backward,
        x.bytes_sent,
        x.method,
        x.total_params,
        [getattr(x.state_bytes, c) for c in COMPONENTS + [STATE.total]],
    )


def load_run(d, name, seed):
    run = f"run {name} seed {seed} ({d})"
    # Every rank's summary, rank 0 up; written by the ppu-train of the run's day, so read as it is
    # (check=False): an archived run may lack fields that today's summaries have.
    paths = []
    while os.path.exists(files.summary_file(d, len(paths))):
        paths.append(files.summary_file(d, len(paths)))
    if not paths:
        die(f"{run} has no rank-*.json summary")
    s = []
    for p in paths:
        try:
            s.append(summary.load(p, check=False))
        except (OSError, ValueError) as e:
            die(f"{run}: cannot read {os.path.basename(p)}: {e}")
    r0 = s[0]
    k = read(run, lambda: r0.world_size)
    if len(s) != k:
        die(f"{run} has {len(s)} rank-*.json summaries for world_size {k}")
    for x in s:
        read(run, lambda x=x: fields_used(x))
    # Every rank of a run: one kernel path and one resolved optimiser (the ranks share a config).
    names = [os.path.basename(p) for p in paths]
    kps = [kernel_path(x, f"{run}: {f}") for f, x in zip(names, s, strict=True)]
    settings = [optimizer_settings(x, f"{run}: {f}") for f, x in zip(names, s, strict=True)]
    for f, kp, o in zip(names[1:], kps[1:], settings[1:], strict=True):
        if path_key(kp) != path_key(kps[0]):
            die(f"{run}: {f} ran on {path_text(kp)}, {names[0]} on {path_text(kps[0])}: one run, two kernel paths")
        if o != settings[0]:
            die(f"{run}: {f} resolved other optimizer_settings than {names[0]}")
    try:
        status, peak, wall = pathlib.Path(d, "rusage").read_text().split()
        status, peak, wall = int(status), int(peak), float(wall)
    except OSError:
        die(f"{run} has no rusage file")
    except ValueError:
        die(f"{run}: rusage is not 'status peak_rss_bytes wall_seconds'")
    if status != 0:
        die(f"{run}: rusage records exit status {status}, yet the run is marked done")
    try:
        log = pathlib.Path(d, "run.log").read_text(errors="replace").splitlines()
    except OSError:
        die(f"{run} has no run.log")
    evals = eval_losses(log)
    steps = r0.steps
    if not evals:
        die(f"{run}: run.log has no '[rank 0] ... eval step N loss X' line (the eval curve)")
    evals[steps] = r0.eval_loss  # the final evaluation of θ, after the last step
    tokens = sum(x.tokens for x in s)  # all ranks
    flops = mean([x.flops_executed for x in s])  # per rank
    flops_full = mean([x.flops_full_backward for x in s])
    try:
        slicing = r0.slicing
    except ContractError:  # a summary from before slicing was recorded
        slicing = None
    slicing = slicing.as_dict() if slicing is not None else {}
    return Run(
        seed=seed,
        eval_loss=r0.eval_loss,
        eval_perplexity=r0.eval_perplexity,
        world_size=k,
        steps=steps,
        tokens=tokens,
        flops_executed_per_rank=flops,
        flops_full_backward_per_rank=flops_full,
        flops_saved_fraction=1 - flops / flops_full if flops_full else 0.0,
        state_bytes={c: max(getattr(x.state_bytes, c) for x in s) for c in COMPONENTS + [STATE.total]},
        bytes_sent_per_rank=max(x.bytes_sent for x in s),
        peak_rss_bytes=peak,
        wall_seconds=wall,
        method=r0.method,
        slicing=slicing,
        total_params=r0.total_params,
        kernel_path={k: kps[0][k] for k in KERNEL_KEYS},
        cpu_models=sorted({kp[KERNEL.cpu_model] for kp in kps}),
        optimizer_settings=settings[0],
        # (step, tokens all ranks, FLOPs per rank, eval loss), tokens and FLOPs at a constant rate per step
        curve=[(n, n * tokens / steps, n * flops / steps, evals[n]) for n in sorted(evals)],
    )


def load_runs(out):
    found = {}
    for d in sorted(glob.glob(os.path.join(out, "runs", "*"))):
        m = re.match(r"^(.+)-s(\d+)$", os.path.basename(d))
        if not m or not os.path.isdir(d):
            continue
        if not os.path.exists(os.path.join(d, "done")):
            print(f"report.py: skipping {d}: no done marker (unfinished)", file=sys.stderr)
            continue
        name, seed = m.group(1), int(m.group(2))
        found.setdefault(name, {})[seed] = load_run(d, name, seed)
    if not found:
        die(f"no finished run under {out}/runs")
    check_kernel_paths(found)
    return found


def check_kernel_paths(runs):
    """Every run on one kernel path, or exit naming two runs that differ and how many ran on each
    path (runs: {name: {seed: run}})."""
    by_path = {}
    for name in sorted(runs):
        for seed in sorted(runs[name]):
            kp = runs[name][seed].kernel_path
            by_path.setdefault(path_key(kp), (kp, []))[1].append(f"{name} seed {seed}")
    if len(by_path) > 1:
        (kp_a, a), (kp_b, b) = list(by_path.values())[:2]
        counts = "; ".join(f"{len(v)} on {path_text(kp)}" for kp, v in by_path.values())
        die(
            f"run {b[0]} ran on {path_text(kp_b)}, run {a[0]} on {path_text(kp_a)} ({counts}): report.py pairs "
            "and compares runs of one kernel path only; re-run the others on the study's pinned path (run.sh)"
        )


# ---------------------------------------------------------------------------------------------
# Numbers


def row_summary(name, seeds):
    """One grid row over its seeds (the state, FLOPs and bytes are the same for every seed)."""
    rs = [seeds[s] for s in sorted(seeds)]
    r = rs[0]
    for x in rs[1:]:
        if x.optimizer_settings != r.optimizer_settings:
            die(f"row {name}: seed {x.seed} resolved other optimizer_settings than seed {r.seed}")
    losses, ppls = [x.eval_loss for x in rs], [x.eval_perplexity for x in rs]
    return Row(
        seeds=sorted(seeds),
        eval_loss=losses,
        eval_loss_mean=mean(losses),
        eval_perplexity=ppls,
        eval_perplexity_mean=mean(ppls),
        world_size=r.world_size,
        steps=r.steps,
        tokens=r.tokens,
        flops_executed_per_rank=r.flops_executed_per_rank,
        flops_full_backward_per_rank=r.flops_full_backward_per_rank,
        flops_saved_fraction=r.flops_saved_fraction,
        state_bytes=max((x.state_bytes for x in rs), key=lambda b: b[STATE.total]),
        peak_rss=max(x.peak_rss_bytes for x in rs),
        bytes_sent=max(x.bytes_sent_per_rank for x in rs),
        wall_seconds=[x.wall_seconds for x in rs],
        wall_seconds_mean=mean([x.wall_seconds for x in rs]),
        method=r.method,
        slicing=r.slicing,
        total_params=r.total_params,
        kernel_path=r.kernel_path,
        cpu_models=sorted({m for x in rs for m in x.cpu_models}),
        optimizer_settings=r.optimizer_settings,
        per_seed=[x.as_json() for x in rs],
    )


def mean_curve(seeds):
    """At the eval steps every seed has: step, tokens, FLOPs, mean, min, max, then each seed's loss."""
    rs = [seeds[s] for s in sorted(seeds)]
    common = set.intersection(*({p[0] for p in x.curve} for x in rs))
    by_step = [{p[0]: p for p in x.curve} for x in rs]
    rows = []
    for n in sorted(common):
        ls = [b[n][3] for b in by_step]
        p = by_step[0][n]
        rows.append((n, p[1], p[2], mean(ls), min(ls), max(ls), *ls))
    return rows


def statistics_module():
    """stats.py beside this file (imported on first use: bench/gpu/study.py loads this file for its
    log reader on machines without scipy)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    try:
        import stats
    except ImportError as e:
        die(
            f"{e}: the statistics need scipy and yaml, Debian's python3-scipy and python3-yaml "
            f"(scripts/install-deps.sh --test), which /usr/bin/python3 imports; this is {sys.executable}. "
            "Run /usr/bin/python3 bench/study/report.py OUT"
        )
    return stats


def read_analysis():
    stats = statistics_module()
    try:
        return stats.read_analysis(os.path.join(HERE, "analysis.yaml"))
    except stats.AnalysisError as e:
        die(str(e))


def exp_or_none(x):
    return None if x is None else math.exp(x)


def paired_family(pairs, analysis=None):
    """pairs: {name: (reference name, the row's runs {seed: run}, the reference's runs)}. Differences
    d_s = loss(name, s) − loss(reference, s) over the seeds both rows ran; every comparison with at
    least two such seeds is one member of the family the corrections count (stats.family)."""
    stats = statistics_module()
    analysis = analysis or read_analysis()
    seeds = {name: sorted(set(row) & set(ref)) for name, (_, row, ref) in pairs.items()}
    res = stats.family(
        {
            name: ([row[s].eval_loss for s in seeds[name]], [ref[s].eval_loss for s in seeds[name]])
            for name, (_, row, ref) in pairs.items()
        },
        analysis,
    )
    out = {}
    for name, (reference, row, ref) in pairs.items():
        r = res[name]
        out[name] = {
            "reference": reference,
            "seeds": seeds[name],
            "loss": [row[s].eval_loss for s in seeds[name]],
            "reference_loss": [ref[s].eval_loss for s in seeds[name]],
            **r,
            "ppl_ratio_mean": exp_or_none(r["mean"]),
            "ppl_ratio_ci": [math.exp(x) for x in r["ci"]] if r["ci"] else None,
            "ppl_ratio_detectable": exp_or_none(r["detectable"]),
        }
    return out


def paired_stats(name, ppu, ref, reference=REFERENCE):
    """One comparison as a family of its own (owners.py): no correction beyond it."""
    return paired_family({name: (reference, ppu, ref)})[name]


# ---------------------------------------------------------------------------------------------
# Tables


def write_table(out, order, rows):
    lines = [
        (
            "| run | seeds | final eval loss of θ (mean; per seed) | eval ppl (mean) | tokens (all ranks) | "
            "FLOPs executed / rank | FLOPs saved | state / rank (MiB) | peak RSS / rank (MiB) | "
            "sent / rank (MiB) | wall (s) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        r = rows[name]
        loss = f"{r.eval_loss_mean:.4f}"
        if len(r.seeds) > 1:
            loss += " (" + ", ".join(f"{x:.4f}" for x in r.eval_loss) + ")"
        lines.append(
            f"| {name} | {','.join(map(str, r.seeds))} | {loss} | {r.eval_perplexity_mean:.2f} | "
            f"{r.tokens / 1e6:.4g} M | {r.flops_executed_per_rank:.3g} | "
            f"{100 * r.flops_saved_fraction:.1f} % | {r.state_bytes[STATE.total] * MIB:.2f} | "
            f"{r.peak_rss * MIB:.0f} | {r.bytes_sent * MIB:.1f} | {r.wall_seconds_mean:.0f} |"
        )
    lines += [
        "",
        (
            "Final eval loss: of the global θ after the last step (nats/token); with several seeds the mean, "
            "then each seed's value in seed order. Eval ppl: the mean over seeds of exp(loss). Tokens: trained by "
            "all ranks together. FLOPs: matmul FLOPs executed by one rank over the run (mean over ranks); saved: "
            "relative to a full backward. State: the training state of one rank measured from its tensors "
            "(largest rank; memory.png splits it). Peak RSS: the largest resident set of any rank process, largest "
            "over seeds. Sent: payload bytes one rank put on the wire (largest rank). Wall: the run's wall time "
            "(start-up and evaluation included), mean over seeds."
        ),
        "",
        (
            "| run | seeds | parameters | CPU model(s) | kernel path | outer lr | outer momentum | inner lr | "
            "inner grad_clip |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        r = rows[name]
        o = r.optimizer_settings
        lines.append(
            f"| {name} | {','.join(map(str, r.seeds))} | {r.total_params:,} | {'; '.join(r.cpu_models)} | "
            f"{path_text(r.kernel_path)} | {o['outer']['lr']:g} | {o['outer']['momentum']:g} | "
            f"{o['inner']['lr']:g} | {o['inner']['grad_clip']:g} |"
        )
    lines += [
        "",
        (
            "Parameters: of the model (total_params). CPU model(s): /proc/cpuinfo's model name of the machines the "
            "row's runs ran on. Kernel path: the kernels that decide a CPU run's bits besides config and seed "
            "(OpenBLAS's core, ATen's CPU capability, oneDNN on or off); report.py compares runs of one path "
            "only, on which the CPU model does not change a result. Optimiser: as every run of the row resolved it "
            "(summary's optimizer_settings; grad_clip 0 = no clipping)."
        ),
    ]
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def fmt(x, spec="+.4f"):
    return "n/a" if x is None else format(x, spec)


def write_paired(out, paired, analysis):
    tested = [p for p in paired.values() if p["n"] >= 2]
    m = len(tested)
    a, margin = analysis["alpha"], analysis["equivalence_margin_nats"]
    each = f"{a / m:.4g}" if m else "n/a"
    level = f"{100 * (1 - a / m):.4g} %" if m else "n/a"
    lines = [
        "# Paired comparisons (final eval loss of θ, nats/token)",
        "",
        (
            "Each `paired` row is compared with its reference row (`vs`: streaming-diloco unless the grid names "
            "another) seed by seed. Seed s is the same initial θ and the same data streams for both rows, so "
            "d_s = loss(row, s) − loss(reference, s) removes what the seed does to both. Mean and sample sd "
            "over the seeds; p: the two-sided paired t-test (scipy.stats.ttest_rel)."
        ),
        "",
        (
            f"**The family is every comparison below with at least two paired seeds: m = {m}.** The statistical "
            f"plan (bench/study/analysis.yaml, declared on 2026-11-27: before the v2 runs, after v1's results): "
            f"alpha = {a:g}, power = "
            f"{analysis['power']:g}, equivalence margin ±{margin:g} nats (perplexity ratio "
            f"{math.exp(-margin):.3f} to {math.exp(margin):.3f}), correction {analysis['correction']}."
        ),
        "",
        (
            "- **Verdicts: Holm-Bonferroni.** The p-values of the m difference tests are Holm-adjusted (the i-th "
            "smallest times m − i + 1, made monotone); **worse** or **better** (by the sign of the mean) where the "
            f"adjusted p < {a:g}. Equivalence is tested by two one-sided t-tests (TOST) against ±{margin:g} nats, "
            f"their p (the larger one-sided p) Holm-adjusted over the same m comparisons: **equivalent within "
            f"±{margin:g} nats** where that adjusted p < {a:g} and no difference was found. Otherwise **not "
            "distinguishable**, with the detectable size. A difference the seeds resolve is called worse or better even "
            "when it lies inside the margin (the TOST column then says so too). Each kind of verdict keeps its family-wise error at "
            f"{a:g}: the chance of any false 'worse'/'better' is at most {a:g}, and of any false 'equivalent' "
            f"at most {a:g}."
        ),
        (
            f"- **Intervals: Bonferroni**, the simultaneous Student-t interval at confidence 1 − alpha/m = {level} "
            "(t quantile at 1 − alpha/(2m)), since Holm's procedure has no simple simultaneous interval. It is "
            "wider than what Holm's test needs for every comparison but the one with the smallest p, so a "
            "Holm verdict of worse or better can come with a Bonferroni interval that still touches 0."
        ),
        (
            f"- **Detectable size**: the true mean difference that the two-sided paired t-test at the Bonferroni "
            f"level alpha/m = {each} detects with probability {analysis['power']:g}, from its exact power "
            "(noncentral t with n − 1 degrees of freedom and noncentrality δ√n/σ; δ/σ solved with Brent's method), "
            "taking the observed sd as σ. A true difference smaller than it is often missed: 'not distinguishable' "
            "rules out only differences of about that size or more."
        ),
        (
            "- The ppl ratio columns are exp() of the loss columns: the row's perplexity over its reference's (a "
            "ratio of geometric means over seeds)."
        ),
        "",
        (
            f"| run | vs | seeds | d_s per seed | mean d | sd | p | p (Holm) | interval ({level}, Bonferroni) | "
            f"TOST p (Holm), ±{margin:g} | verdict | detectable size | ppl ratio | ppl ratio interval |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for name, p in paired.items():
        head = (
            f"| {name} | {p['reference']} | {','.join(map(str, p['seeds'])) or '-'} | "
            f"{', '.join(format(x, '+.4f') for x in p['differences']) or '-'} | {fmt(p['mean'])} | "
        )
        if p["n"] < 2:
            na = f"{p['verdict']} | n/a | n/a | n/a | n/a | {p['verdict']} | n/a"
            lines.append(head + f"{na} | {fmt(p['ppl_ratio_mean'], '.3f')} | n/a |")
            notes.append(f"- **{name}** vs {p['reference']}: {p['verdict']}: no test, interval or verdict.")
            continue
        ci = "[{:+.4f}, {:+.4f}]".format(*p["ci"])
        rci = "[{:.3f}, {:.3f}]".format(*p["ppl_ratio_ci"])
        lines.append(
            head + f"{p['sd']:.4f} | {p['p']:.3g} | {p['p_holm']:.3g} | {ci} | {p['tost_p_holm']:.3g} | "
            f"{p['verdict']} | {p['detectable']:.4f} | {p['ppl_ratio_mean']:.3f} | {rci} |"
        )
        notes.append(
            f"- **{name}** vs {p['reference']}: {p['verdict']}. Over {p['n']} seeds the final eval loss differs by "
            f"{p['mean']:+.4f} nats/token on average (perplexity ×{p['ppl_ratio_mean']:.3f}); paired t-test p = "
            f"{p['p']:.3g}, Holm-adjusted {p['p_holm']:.3g}; {level} Bonferroni interval {ci} (×{p['ppl_ratio_ci'][0]:.3f} "
            f"to ×{p['ppl_ratio_ci'][1]:.3f}); TOST against ±{margin:g} nats, Holm-adjusted p = "
            f"{p['tost_p_holm']:.3g}; the seeds detect a true difference of {p['detectable']:.4f} nats "
            f"(perplexity ×{p['ppl_ratio_detectable']:.3f}) with probability {analysis['power']:g}."
        )
    with open(os.path.join(out, "paired.md"), "w") as f:
        f.write("\n".join(lines + [""] + (notes or ["No paired row ran."])) + "\n")


# ---------------------------------------------------------------------------------------------
# Plots


def style(name, order):
    if name in STYLE:
        return STYLE[name]
    extra = [n for n in order if n not in STYLE]
    return EXTRA_COLOURS[extra.index(name) % len(EXTRA_COLOURS)], 14


def write_curves(out, runs):
    for name, seeds in runs.items():
        with open(os.path.join(out, f"curve-{name}.dat"), "w") as f:
            f.write(
                "# step tokens_all_ranks flops_per_rank mean min max "
                + " ".join(f"seed{s}" for s in sorted(seeds))
                + "  (eval loss of θ, nats/token)\n"
            )
            f.writelines(
                f"{row[0]:d} {row[1]:.6g} {row[2]:.6g} " + " ".join(f"{x:.6f}" for x in row[3:]) + "\n"
                for row in mean_curve(seeds)
            )


def curve_elements(names, runs, order, xcol, scale, reference=()):
    """Thin curve per seed, a min..max band and the thick mean, for every row with several seeds."""
    bands, thin, thick = [], [], []
    for n in names:
        colour, pt = style(n, order)
        k = len(runs[n])
        x = f"(${xcol}/{scale})"
        f = f"'curve-{n}.dat'"
        if k > 1:
            bands.append(
                f"{f} using {x}:5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '{colour}' notitle"
            )
            thin += [f"{f} using {x}:{7 + i} with lines lw 0.8 lc rgb '{colour}' notitle" for i in range(k)]
        title = n + (f" (mean of {k} seeds)" if k > 1 else "") + (" (reference)" if n in reference else "")
        dt = 2 if n in reference else 1
        thick.append(
            f"{f} using {x}:4 with linespoints lw {3 if k > 1 else 2} dt {dt} pt {pt} ps 0.9 pi 4 "
            f"lc rgb '{colour}' title '{title}'"
        )
    return bands, thin, thick


def loss_range(names, runs, unigram):
    """y range: every curve from its second evaluation on (the first ones are far above the rest),
    with room on top for the key (top right, where falling loss curves are not)."""
    ys = [p[3] for n in names for x in runs[n].values() for p in x.curve[1:]] or [unigram]
    lo, hi = min(ys + [unigram]), max(ys + [unigram])
    span = hi - lo or 1
    return lo - 0.04 * span, hi + (0.25 + 0.05 * len(names)) * span


def final_labels(names, runs, order, col, scale, x1, lo, hi):
    """The zoomed panels' labels, right of the plot: each row's final eval loss (mean over seeds)
    at the height its mean curve leaves the panel, pushed apart so that no two overlap.
    -> ([(y, text, colour)], hi widened to hold them)."""
    gap = 0.045 * (hi - lo)
    found = []
    for n in names:
        k = len(runs[n])
        rows = mean_curve(runs[n])
        inside = [r for r in rows if r[col] / scale <= x1 * 1.001] or rows[:1]
        end = rows[-1][col] / scale
        at = f" at {end:.3g}:" if end > x1 * 1.001 else ""  # a row given more: where it ends
        text = f"{rows[-1][3]:.4f}{at}  {n}" + (f" (mean of {k})" if k > 1 else " (1 seed)")
        found.append([inside[-1][3], text, style(n, order)[0]])
    found.sort(key=lambda f: f[0])
    for a, b in itertools.pairwise(found):
        b[0] = max(b[0], a[0] + gap)
    if found and found[-1][0] > hi - gap / 2:
        hi = found[-1][0] + gap / 2
    return found, hi


def loss_plots(runs, order, unigram, budget):
    """order: the rows to draw (those of the main model size). Top row: the whole runs. Bottom
    row: the last 40 % of the main budget, zoomed, each row labelled with its final eval loss, so
    that the final differences can be read."""
    left = [n for n in BASELINES + PPU_MLP + PPU_MLP_HEADS + LONGER if n in order]
    refs = [n for n in ABLATION_REFERENCES if n in order]
    right = refs + [n for n in order if n not in left and n not in refs]
    ulabel = f"unigram entropy ({unigram:.3f} nats)"
    panels = [
        ("methods", left, ()),
        ("ablations (App. A.1, A.2, D; heads only) and their references", right, refs),
    ]
    script = ["set terminal pngcairo size 1700,1450 font ',11' noenhanced"]
    for xcol, scale, xlabel, what, png in [
        (2, 1e6, "tokens, all ranks (millions)", "tokens", "loss_vs_tokens.png"),
        (3, 1e12, "FLOPs executed per rank (10^12)", "FLOPs executed per rank", "loss_vs_flops.png"),
    ]:
        col = xcol - 1  # the x column of a curve point (step, tokens, FLOPs, loss)
        script.append(
            f"set output '{png}'\n"
            f'set multiplot layout 2,2 title "Eval loss of the global θ vs {what}: {budget}\\n'
            'rows with several seeds: thick line = mean, band = min..max, thin lines = each seed" '
            "font ',12'"
        )
        for title, names, reference in panels:
            if not names:
                script.append("set multiplot next")
                continue
            lo, hi = loss_range(names, runs, unigram)
            bands, thin, thick = curve_elements(names, runs, order, xcol, f"{scale:g}", reference)
            uni = f"{unigram} with lines dt 3 lw 2 lc rgb '#555555' title '{ulabel}'"
            seedkey = (
                [
                    (
                        "NaN with filledcurves fs transparent solid 0.15 noborder lc rgb '#777777' "
                        "title 'seed range (min..max)'"
                    )
                ]
                if bands
                else []
            )
            script.append(
                "set key inside top right vertical box opaque samplen 3; set rmargin\n"
                f"set title '{title}'; set xlabel '{xlabel}'; set ylabel 'eval loss of θ (nats/token)'\n"
                f"set yrange [{lo:.4f}:{hi:.4f}]; set xrange [0:*]\n"
                f"set label 1 'unigram entropy of val under train counts' at graph 0.98, first {unigram} "
                "right offset 0, 0.7 textcolor rgb '#555555'\n"
                "plot " + ", \\\n  ".join(bands + thin + thick + seedkey + [uni]) + "\nunset label 1"
            )
        for title, names, reference in panels:
            if not names:
                script.append("set multiplot next")
                continue
            # The main budget's end (rows given more tokens run on past it) and its last 40 %.
            ends = [runs[n][s].curve[-1][col] / scale for n in names if n not in LONGER for s in runs[n]]
            x1 = max(ends or [runs[n][s].curve[-1][col] / scale for n in names for s in runs[n]])
            x0 = 0.6 * x1
            ys = [p[3] for n in names for x in runs[n].values() for p in x.curve if x0 <= p[col] / scale <= x1]
            span = max(ys) - min(ys) or 0.01
            lo, hi = min(ys) - 0.05 * span, max(ys) + 0.05 * span
            labels, hi = final_labels(names, runs, order, col, scale, x1, lo, hi)
            bands, thin, thick = curve_elements(names, runs, order, xcol, f"{scale:g}", reference)
            script.append(
                "unset key; set rmargin 33\n"
                f'set title "{title}\\nzoomed on the last 40 % of the budget; right: the final eval loss of each row"\n'
                f"set xlabel '{xlabel}'; set ylabel 'eval loss of θ (nats/token)'\n"
                f"set yrange [{lo:.4f}:{hi:.4f}]; set xrange [{x0:.4g}:{x1 * 1.01:.4g}]\n"
                + "".join(
                    f"set label {10 + i} '{t}' at graph 1.02, first {y:.4f} left font ',10' textcolor rgb '{c}'\n"
                    for i, (y, t, c) in enumerate(labels)
                )
                + "plot "
                + ", \\\n  ".join(bands + thin + thick)
                + "\n"
                + "".join(f"unset label {10 + i}\n" for i in range(len(labels)))
            )
        script.append("unset multiplot; set rmargin; set key inside top right vertical box opaque samplen 3")
    return "\n".join(script)


def nice_step(span, tics=6):
    raw = span / tics
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def ratio_tics(lo, hi):
    """gnuplot's y2tics for a perplexity-ratio axis linked (exp) to a loss difference in [lo, hi]
    nats: evenly spaced ratios over a narrow range; over a wide one (more than a factor of 10),
    1-2-5 steps of each decade, or whole decades when those would be too many (evenly spaced
    ratios would crowd the top of a wide range into one black block)."""
    a, b = math.exp(lo), math.exp(hi)
    if hi - lo <= math.log(10):
        return f"set y2tics {nice_step(b - a):g} format '%.4g'"
    decades = range(math.floor(math.log10(a)), math.ceil(math.log10(b)) + 1)
    tics = [m * 10.0**k for k in decades for m in (1, 2, 5) if a <= m * 10.0**k <= b]
    if len(tics) > 12:
        every = math.ceil(len(decades) / 10)
        tics = [10.0**k for k in decades if k % every == 0 and a <= 10.0**k <= b]
    return "set y2tics (" + ", ".join(f"'{t:.4g}' {t:.6g}" for t in tics) + ")"


def verdict_lines(p):
    """The verdict on at most two short lines for a plot's tic or label."""
    v = p["verdict"]
    if v.startswith("not distinguishable"):
        return f"not distinguishable\\ndetectable {p['detectable']:.3f} nats"
    return v.replace(" within", "\\nwithin")


def paired_plot(paired, analysis):
    """paired.png: two panels over the same rows. Top: every seed's difference and every interval,
    full range. Bottom: zoomed on the equivalence margin (shaded), so that the rows tested for
    equivalence can be read against it; rows off that scale are named with their mean."""
    names = list(paired)
    margin = analysis["equivalence_margin_nats"]
    ys = (
        [-margin, margin]
        + [d for p in paired.values() for d in p["differences"]]
        + [y for p in paired.values() if p["ci"] for y in p["ci"]]
    )
    lo, hi = min(ys), max(ys)
    pad = 0.1 * (hi - lo or 0.01)
    lo, hi = lo - pad, hi + pad
    # The zoom: twice the margin, widened to hold every row whose interval (or seeds) lies within
    # four margins of 0, so that those rows are seen whole against the margin.
    near = [2 * margin]
    for p in paired.values():
        span = (p["ci"] or []) + p["differences"]
        if span and max(abs(y) for y in span) <= 4 * margin:
            near += [abs(y) for y in span]
    z = 1.15 * max(near)
    m = next(iter(paired.values()))["family_size"]
    level = f"{100 * (1 - analysis['alpha'] / m):.4g} %" if m else ""

    def tic(n, verdict):
        p = paired[n]
        vs = "" if p["reference"] == REFERENCE else f"\\nvs {p['reference']}"
        return f'"{n}{vs}' + (f"\\n{verdict_lines(p)}" if verdict else "") + f'" {names.index(n)}'

    seed_set = sorted({s for p in paired.values() for s in p["seeds"]})
    points = [(7, "#1f77b4"), (5, "#ff7f0e"), (9, "#2ca02c"), (11, "#9467bd"), (13, "#8c564b")]

    def elements(titles):
        t = (lambda s: f"title '{s}'") if titles else (lambda s: "notitle")
        elems = [
            (
                f"'+' using 1:({-margin}):({margin}) with filledcurves fs transparent solid 0.15 noborder "
                f"lc rgb '#2ca02c' {t(f'equivalence margin ±{margin:g} nats (analysis.yaml)')}"
            ),
            f"0 with lines lw 1.5 lc rgb '#000000' {t('no difference')}",
        ]
        for j, s in enumerate(seed_set):
            pt, colour = points[j % len(points)]
            elems.append(
                f"'paired-seeds.dat' using ($3 == {s} ? $1 : 1/0):4 with points pt {pt} ps 1.6 "
                f"lc rgb '{colour}' {t(f'seed {s}')}"
            )
        if any(p["ci"] for p in paired.values()):
            elems.append(
                "'paired.dat' using 1:3:4:5 with yerrorbars pt 3 ps 2.5 lw 2.5 lc rgb '#d62728' "
                f"{t(f'mean with its {level} Bonferroni interval')}"
            )
        return "plot " + ", \\\n  ".join(elems)

    off_scale = []
    for i, n in enumerate(names):
        mu = paired[n]["mean"]
        if mu is not None and abs(mu) > z:
            edge, arrow = ("0.9", "above") if mu > 0 else ("0.1", "below")
            off_scale.append(
                f'set label "mean {mu:+.3f}\\n{arrow} this scale" at {i}, graph {edge} center '
                "textcolor rgb '#d62728' font ',10'"
            )
    xr = f"set xrange [-0.6:{len(names) - 0.4}]"
    return "\n".join(
        [
            f"set terminal pngcairo size {max(1100, 210 * len(names) + 150)},1080 font ',11' noenhanced",
            "set output 'paired.png'",
            (
                "set multiplot title \"Final eval loss of each paired row minus its reference's, seed by seed "
                f"(reference: {REFERENCE} unless named)\\n"
                + (
                    f"bar: mean and its {level} Bonferroni interval (m = {m}); "
                    if m
                    else "one seed each: no interval; "
                )
                + f'verdicts Holm-corrected; equivalent only by TOST within ±{margin:g} nats (shaded)" '
                "font ',12'"
            ),
            "set ylabel 'final eval loss − reference (nats)'; set xlabel ''",
            "set y2label 'perplexity ratio = exp(difference)'",
            "set link y2 via exp(y) inverse log(y)",
            xr,
            "set lmargin at screen 0.08; set rmargin at screen 0.9",
            # Top: the full range, every row whole.
            "set tmargin at screen 0.9; set bmargin at screen 0.64",
            "set title 'all comparisons, full range' font ',11'",
            f"set yrange [{lo:.5f}:{hi:.5f}]",
            ratio_tics(lo, hi),
            "set xtics (" + ", ".join(tic(n, False) for n in names) + ") font ',9'",
            "unset key",
            elements(False),
            # Bottom: the zoom on the margin, with the verdicts and the key.
            "set tmargin at screen 0.51; set bmargin at screen 0.21",
            (
                f'set title "zoom on the margin ±{margin:g} nats'
                + (
                    f": the test behind equivalent (TOST, Holm) is narrower than the {level} interval drawn,"
                    "\\nso the interval of a row called equivalent can cross the margin a little"
                    if m
                    else ""
                )
                + "\" font ',11'"
            ),
            f"set yrange [{-z:.5f}:{z:.5f}]",
            ratio_tics(-z, z),
            "set xtics (" + ", ".join(tic(n, True) for n in names) + ") font ',10'",
            *off_scale,
            "set key at screen 0.5, screen 0.02 center bottom horizontal maxrows 3 box",
            elements(True),
            # What the plots after this one expect: the title font and the key of before.
            (
                "unset multiplot; unset label; set title font ',12'; set xtics font ''; set lmargin; set rmargin; "
                "set tmargin; set key default; set key inside top right vertical box opaque samplen 3"
            ),
        ]
    )


def gap_points(paired, rows):
    """The 1/4-MLPs-minus-Streaming-DiLoCo comparisons, one per model size, that have an interval:
    [(total parameters, name, comparison, tokens per run)], smallest model first. A comparison qualifies when the row
    is PPU with 1/4 of the MLPs (full Jacobian), its reference is Streaming DiLoCo of the same size, and
    both resolved the same optimiser settings."""
    found = {}
    for name, p in paired.items():
        r, ref = rows.get(name), rows.get(p["reference"])
        if not r or not ref or p["ci"] is None:
            continue
        sl = r.slicing
        if not (
            r.method == "ppu"
            and sl.get("mode") == "mlp"
            and sl.get("slices") == 4
            and sl.get("jacobian", "full") == "full"
            and ref.method == "streaming-diloco"
            and ref.total_params == r.total_params
            and ref.optimizer_settings == r.optimizer_settings
        ):
            continue
        if r.total_params in found:
            die(f"two 1/4-MLPs comparisons at {r.total_params:,} parameters: {found[r.total_params][0]}, {name}")
        found[r.total_params] = (name, p, r.tokens)
    return [(k, *found[k]) for k in sorted(found)]


def gap_plot(points, analysis, out, rows=None, train_tokens=None):
    """gap_vs_params.png: the paired 1/4-MLPs − Streaming DiLoCo difference at each model size, each
    size on its own (mean, interval, seeds; no line between sizes: no trend is tested). Tokens grow
    with the model here (a fixed number per parameter), and so do the outer rounds and the epochs
    (given rows {name: row} and the train split's tokens): the plot names them at each size."""
    m = points[0][2]["family_size"]
    level = f"{100 * (1 - analysis['alpha'] / m):.4g} %"
    with open(os.path.join(out, "gap.dat"), "w") as f:
        f.write("# parameters mean ci_low ci_high (final eval loss, 1/4 MLPs − Streaming DiLoCo, nats) run\n")
        f.writelines(f"{k} {p['mean']} {p['ci'][0]} {p['ci'][1]} {n}\n" for k, n, p, _ in points)
    with open(os.path.join(out, "gap-seeds.dat"), "w") as f:
        f.write("# parameters seed difference\n")
        for k, _, p, _ in points:
            f.writelines(
                f"{k * 1.035 ** (j + 1):.1f} {s} {d}\n"  # beside the bar, to its right
                for j, (s, d) in enumerate(zip(p["seeds"], p["differences"], strict=True))
            )
    ys = [0.0] + [y for _, _, p, _ in points for y in p["ci"] + p["differences"]]
    lo, hi = min(ys), max(ys)
    pad = 0.12 * (hi - lo or 0.01)
    ks = [k for k, _, _, _ in points]

    def schedule(n, tokens):
        r = (rows or {}).get(n)
        if not r:
            return ""
        rounds = r.steps / r.optimizer_settings["outer"]["sync_every"]
        epochs = f", {tokens / train_tokens:.2f} epochs" if train_tokens else ""
        return f"\\n{rounds:.0f} outer rounds{epochs}"

    labels = [
        f'set label "{n}, {len(p["seeds"])} seeds{schedule(n, t)}\\n{verdict_lines(p)}" at {k}, {p["ci"][1]:.5f} '
        "center offset 0, 3.3 font ',9'"
        for k, n, p, t in points
    ]
    tics = ", ".join(f'"{k:,}\\n{t / 1e6:.2f} M tokens" {k}' for k, _, _, t in points)
    return "\n".join(
        [
            "set terminal pngcairo size 1000,720 font ',11' noenhanced",
            "set output 'gap_vs_params.png'",
            (
                'set title "PPU 1/4 MLPs minus Streaming DiLoCo of the same size, seed by seed, at each model size'
                f"\\nbar: mean and its {level} Bonferroni interval (family of m = {m}); small points: each seed"
                '\\nno trend across sizes is tested; the tokens, outer rounds and epochs change with the size too"'
            ),
            f"set logscale x; set xrange [{min(ks) / 1.6:.0f}:{max(ks) * 1.6:.0f}]",
            f"set xtics ({tics}); set mxtics default; set xlabel 'parameters of the model (log scale), and the tokens each run trained on' offset 0, -1",
            "set bmargin 5",
            "set ylabel 'final eval loss, 1/4 MLPs − Streaming DiLoCo (nats)'",
            f"set yrange [{lo - pad:.5f}:{hi + 4 * pad:.5f}]",
            "set y2label 'perplexity ratio = exp(difference)'; set link y2 via exp(y) inverse log(y)",
            ratio_tics(lo, hi),
            "set key inside top left vertical box opaque; set grid",
            *labels,
            "plot 0 with lines lw 1.5 lc rgb '#000000' title 'no difference', \\",
            "  'gap-seeds.dat' using 1:3 with points pt 7 ps 1.1 lc rgb '#1f77b4' title 'one seed', \\",
            f"  'gap.dat' using 1:2:3:4 with yerrorbars pt 5 ps 1.8 lw 2.5 lc rgb '#d62728' title 'mean, {level} interval'",
            "unset logscale x; unset label; unset y2tics; unset y2label; unset link y2; set xtics autofreq; set bmargin",
        ]
    )


def memory_plot(rows, order, out, refs, sizes):
    """refs: {row: the row its state is compared with}; sizes: (rows of the main model size, the others)."""
    main_rows, other = sizes
    groups = [
        ("baselines", [n for n in BASELINES if n in main_rows]),
        ("PPU 1/N MLPs", [n for n in PPU_MLP if n in main_rows]),
        ("PPU 1/N MLPs\\n+ 1/N heads", [n for n in PPU_MLP_HEADS if n in main_rows]),
        ("ablations", [n for n in main_rows if n not in BASELINES + PPU_MLP + PPU_MLP_HEADS + LONGER]),
        ("other model sizes\\n(vs their own reference)", other),
    ]
    groups = [(g, ns) for g, ns in groups if ns]
    ref = rows.get(REFERENCE)
    ref_total = ref.state_bytes[STATE.total] if ref else None
    x, tics, group_labels, separators, labels = 0.0, [], [], [], []
    top = max(r.state_bytes[STATE.total] for r in rows.values()) * MIB
    with open(os.path.join(out, "memory.dat"), "w") as f:
        f.write("# x run " + " ".join(f"cum_{c}" for c in ["0"] + COMPONENTS) + " (MiB per rank, cumulative)\n")
        for gi, (g, names) in enumerate(groups):
            if gi:
                separators.append(x - 0.75)
            group_labels.append((g, x + (len(names) - 1) / 2))
            for n in names:
                b = rows[n].state_bytes
                cum = [0.0]
                for c in COMPONENTS:
                    cum.append(cum[-1] + b[c] * MIB)
                f.write(f"{x:.2f} {n} " + " ".join(f"{v:.4f}" for v in cum) + "\n")
                tics.append(f"'{n}' {x:.2f}")
                rb = rows[refs[n]].state_bytes if refs.get(n) in rows else None
                if rb and rows[n].method == "ppu":
                    dev = sum(b[c] for c in COMPONENTS if c not in HOST)
                    ref_dev = sum(rb[c] for c in COMPONENTS if c not in HOST)
                    text = (
                        f"{100 * (b[STATE.total] / rb[STATE.total] - 1):+.1f} %\\ndev. {100 * (dev / ref_dev - 1):+.0f} %"
                    ).replace("-", "−")
                    labels.append(f"set label \"{text}\" at {x:.2f}, {cum[-1] + 0.07 * top:.4f} center font ',9'")
                x += 1
            x += 0.5
    elems = []
    for i, c in enumerate(COMPONENTS):
        fill = "fs pattern 4 border lc rgb '#333333'" if c in HOST else "fs solid 0.85 border lc rgb '#333333'"
        elems.append(
            f"'memory.dat' using 1:{3 + i}:($1-0.35):($1+0.35):{3 + i}:{4 + i} with boxxyerror "
            f"{fill} fc rgb '{COMPONENT_COLOUR[c]}' title '{COMPONENT_TITLE[c]}'"
        )
    if ref_total:
        elems.append(f"{ref_total * MIB} with lines dt 2 lw 1.5 lc rgb '#2ca02c' title '{REFERENCE} total'")
    k = next(iter(rows.values())).world_size
    note = (
        f"labels: state vs {REFERENCE}{' (other sizes: vs their own)' if other else ''}, in all and on the device "
        "(dev.: weights + gradients + AdamW)"
        if ref_total
        else ""
    ) + "".join(f"; {n}: as {LONGER_OF[n]}" for n in LONGER if n in rows)
    return "\n".join(
        [
            # About 90 px per bar, so that neighbouring bars' labels do not run together.
            f"set terminal pngcairo size {max(1500, round(90 * x))},760 font ',11' noenhanced",
            "set output 'memory.png'",
            f'set title "Training-state memory per rank by component (K = {k}), measured from the tensors\\n{note}"',
            "set ylabel 'MiB per rank'; set xlabel ''",
            f"set yrange [0:{top * 1.28:.3f}]",
            f"set xrange [-0.7:{x - 0.8:.2f}]",
            "set xtics (" + ", ".join(tics) + ") rotate by 30 right nomirror",
            "unset grid; set grid ytics",
            "set key outside bottom center horizontal box maxrows 2",
            *[f"set arrow from {s:.2f}, graph 0 to {s:.2f}, graph 1 nohead dt 3 lc rgb '#777777'" for s in separators],
            *[f"set label \"{g}\" at {c:.2f}, graph 0.95 center font ',11'" for g, c in group_labels],
            *labels,
            "plot " + ", \\\n  ".join(elems),
            "unset arrow; unset label",
        ]
    )


def ppl_plot(rows, runs, out, tokens):
    """ppl_vs_n.png: per series, each seed's perplexity (small points, spread a little around N),
    the mean of every row with several seeds (large filled marker) and the single run of every
    one-seed row (large open marker, labelled), with no line between rows: a line would join means
    of five seeds to single runs and suggest a tested trend. Streaming DiLoCo as a horizontal line
    with its seed range."""
    longer = [n for n in LONGER if n in rows]
    more = ", ".join(f"{n}: {rows[n].tokens / tokens:.2g}x tokens" for n in longer)
    series = [  # title, rows, colour, filled point, open point
        ("1/N MLPs", PPU_MLP, "#d62728", 7, 6),
        ("1/N MLPs + 1/N heads", PPU_MLP_HEADS, "#9467bd", 5, 4),
        ("1/N MLPs, more tokens", LONGER, "#e377c2", 13, 12),
    ]
    series = [(t, [n for n in names if n in rows], c, pt, op) for t, names, c, pt, op in series]
    series = [x for x in series if x[1]]
    with open(os.path.join(out, "ppl_vs_n.dat"), "w") as f:
        f.write(
            "# block 0: series N seed eval_perplexity seeds_of_the_row (one line per seed); "
            "block i + 1: series i's rows: series N seeds eval_perplexity (mean over the seeds)\n"
        )
        for i, (_, names, _, _, _) in enumerate(series):
            for n in names:
                k = len(runs[n])
                f.writelines(
                    f"{i} {rows[n].slicing.get('slices', 1) * 1.04 ** (j - (k - 1) / 2):.4f} {s} "
                    f"{x.eval_perplexity:.4f} {k}\n"
                    for j, (s, x) in enumerate(sorted(runs[n].items()))
                )
        for i, (_, names, _, _, _) in enumerate(series):
            f.write(f"\n\n# series {i}\n")
            for n in names:
                f.write(f"{i} {rows[n].slicing.get('slices', 1)} {len(runs[n])} {rows[n].eval_perplexity_mean:.4f}\n")
    elems = []
    ref = rows.get(REFERENCE)
    if ref:
        lo, hi = min(ref.eval_perplexity), max(ref.eval_perplexity)
        m, k = ref.eval_perplexity_mean, len(ref.seeds)
        if k > 1:
            elems.append(
                f"'+' using 1:({lo}):({hi}) with filledcurves fs transparent solid 0.18 noborder "
                f"lc rgb '#2ca02c' title '{REFERENCE}: seed range ({lo:.1f}..{hi:.1f})'"
            )
        seeds = f"mean of {k} seeds" if k > 1 else "one seed"
        elems.append(
            f"{m} with lines dt 2 lw 2.5 lc rgb '#2ca02c' title '{REFERENCE} (every parameter), {seeds}: {m:.2f}'"
        )
    labels = []
    for i, (title, names, colour, pt, op) in enumerate(series):
        several = [n for n in names if len(runs[n]) > 1]
        single = [n for n in names if len(runs[n]) == 1]
        if several:
            elems.append(
                f"'ppl_vs_n.dat' index 0 using ($1 == {i} && $5 > 1 ? $2 : 1/0):4 with points pt {pt} ps 1.1 "
                f"lc rgb '{colour}' notitle"
            )
            elems.append(
                f"'ppl_vs_n.dat' index {1 + i} using 2:($3 > 1 ? $4 : 1/0) with points pt {pt} ps 2.2 "
                f"lc rgb '{colour}' title '{title}: mean over seeds (large), each seed (small)'"
            )
        if single:
            elems.append(
                f"'ppl_vs_n.dat' index {1 + i} using 2:($3 == 1 ? $4 : 1/0) with points pt {op} ps 2.2 lw 2 "
                f"lc rgb '{colour}' title '{title}: one seed (no mean, no interval)'"
            )
            labels += [
                f'set label "{n}\\none seed" at {rows[n].slicing.get("slices", 1) * 1.07}, '
                f"{rows[n].eval_perplexity_mean} left textcolor rgb '{colour}' font ',10'"
                for n in single
            ]
    ns = sorted({rows[n].slicing.get("slices", 1) for _, names, _, _, _ in series for n in names}) or [2, 4]
    return "\n".join(
        [
            "set terminal pngcairo size 1000,760 font ',11' noenhanced",
            "set output 'ppl_vs_n.png'",
            (
                'set title "Final eval perplexity of θ vs N (each PPU rank trains 1/N of the sliced layers)\\n'
                f'equal tokens{" except " + more if more else ""}; no line between rows: no trend is tested"'
            ),
            "set key outside bottom center vertical maxrows 6 maxcols 1 box; set bmargin 10",
            f"set logscale x 2; set xrange [{min(ns) / 1.5}:{max(ns) * 1.5}]",
            "set xtics (" + ", ".join(f"'{n}' {n}" for n in ns) + ")",
            "set xlabel 'N (slices)'",
            "set ylabel 'eval perplexity'; set autoscale y; set offsets 0, 0, graph 0.08, graph 0.08; set grid",
            *labels,
            "plot " + ", \\\n  ".join(elems) if elems else "",
            "unset logscale x; unset label; set offsets 0, 0, 0, 0; set bmargin",
        ]
    )


def plots(out, runs, rows, order, paired, unigram, analysis, refs, sizes, train_tokens=None):
    """sizes: (rows of the main model size, rows of other sizes); the loss and perplexity plots show
    the main size only, gap_vs_params.png the 1/4 gap at every size. train_tokens: the train split's
    tokens (gap_vs_params.png names each size's epochs)."""
    main_rows, other = sizes
    write_curves(out, runs)
    k = rows[order[0]].world_size
    tokens = Counter(rows[n].tokens for n in main_rows).most_common(1)[0][0]
    budget = f"{tokens / 1e6:.1f} M tokens per run (K = {k})" + "".join(
        f", {n}: {rows[n].tokens / 1e6:.1f} M ({rows[n].tokens / tokens:.2g}x)"
        for n in main_rows
        if abs(rows[n].tokens / tokens - 1) > 0.01
    )
    if other:
        budget += f"; not shown: {len(other)} rows at other model sizes (gap_vs_params.png)"
    with open(os.path.join(out, "paired.dat"), "w") as f:
        f.write("# index run mean ci_low ci_high (final eval loss − reference, nats; Bonferroni interval)\n")
        for i, (n, p) in enumerate(paired.items()):
            lo, hi = p["ci"] or ("NaN", "NaN")
            f.write(f"{i} {n} {p['mean'] if p['mean'] is not None else 'NaN'} {lo} {hi}\n")
    with open(os.path.join(out, "paired-seeds.dat"), "w") as f:
        f.write("# x run seed difference\n")
        for i, (n, p) in enumerate(paired.items()):
            f.writelines(
                f"{i - 0.15 + 0.1 * j:.3f} {n} {s} {d}\n"
                for j, (s, d) in enumerate(zip(p["seeds"], p["differences"], strict=True))
            )
    script = [
        "# Written by report.py; `gnuplot plots.gp` in this directory redraws the plots.",
        "set terminal pngcairo size 1700,800 font ',11' noenhanced",
        "set grid",
        "set key inside top right vertical box opaque samplen 3",
        loss_plots(runs, main_rows, unigram, budget),
        "set autoscale",
        "set terminal pngcairo size 1100,680 font ',11' noenhanced",
    ]
    if paired:
        script += [paired_plot(paired, analysis), "unset y2tics; unset y2label; unset link y2; set bmargin"]
    script += [
        "set autoscale; set xtics autofreq norotate",
        memory_plot(rows, order, out, refs, sizes),
        "set autoscale; set xtics autofreq norotate",
        ppl_plot({n: rows[n] for n in main_rows}, runs, out, tokens),
    ]
    points = gap_points(paired, rows)
    if points:
        script += ["set autoscale; set xtics autofreq norotate", gap_plot(points, analysis, out, rows, train_tokens)]
    else:
        for f in ("gap_vs_params.png", "gap.dat", "gap-seeds.dat"):  # none from an earlier report either
            pathlib.Path(out, f).unlink(missing_ok=True)
    with open(os.path.join(out, "plots.gp"), "w") as f:
        f.write("\n".join(script) + "\n")
    try:
        subprocess.run(["gnuplot", "plots.gp"], cwd=out, check=True)
    except FileNotFoundError:
        die("gnuplot not found (scripts/install-deps.sh --test installs it); the tables are written, the plots not")
    except subprocess.CalledProcessError as e:
        die(f"gnuplot failed on {os.path.join(out, 'plots.gp')} (exit {e.returncode})")


# ---------------------------------------------------------------------------------------------


def main():
    args = sys.argv[1:]
    corpus = None
    if len(args) == 3 and args[1] == "--corpus":
        corpus = args[2]
    elif len(args) != 1 or args[0].startswith("-"):
        sys.exit("usage: report.py OUT_DIR [--corpus CORPUS_DIR]")
    out = args[0]
    corpus = corpus or os.path.join(out, "corpus")
    grid = read_grid()
    analysis = read_analysis()
    runs = load_runs(out)
    unigram = unigram_entropy(os.path.join(corpus, "data"))
    grid_names = [n for n, _ in grid]
    order = [n for n in grid_names if n in runs] + sorted(n for n in runs if n not in grid_names)
    rows = {n: row_summary(n, runs[n]) for n in order}
    ks = {r.world_size for r in rows.values()}
    if len(ks) > 1:
        die(f"runs under {out}/runs mix world sizes {sorted(ks)}; the study compares at one K")
    pairs = {n: (ref, runs[n], runs.get(ref, {})) for n, ref in comparisons(grid) if n in runs}
    paired = paired_family(pairs, analysis)
    # The main model size: the reference row's (else the commonest); rows of other sizes are
    # compared with their own references only.
    main_size = (
        rows[REFERENCE].total_params
        if REFERENCE in rows
        else Counter(r.total_params for r in rows.values()).most_common(1)[0][0]
    )
    main_rows = [n for n in order if rows[n].total_params == main_size]
    other = [n for n in order if rows[n].total_params != main_size]
    refs = {n: (paired[n]["reference"] if n in paired else REFERENCE if n in main_rows else n) for n in order}
    write_table(out, order, rows)
    write_paired(out, paired, analysis)
    tokens = Counter(rows[n].tokens for n in main_rows).most_common(1)[0][0]
    for n, r in rows.items():
        b = r.state_bytes
        r.device_state_bytes = sum(b[c] for c in COMPONENTS if c not in HOST)
        r.host_state_bytes = sum(b[c] for c in HOST)
        ref = rows.get(refs[n])
        if ref:
            r.state_reference = refs[n]
            r.state_vs_reference = b[STATE.total] / ref.state_bytes[STATE.total] - 1
            r.device_state_vs_reference = (
                r.device_state_bytes / (sum(ref.state_bytes[c] for c in COMPONENTS if c not in HOST)) - 1
            )
    tested = [p for p in paired.values() if p["n"] >= 2]
    document = {  # summary.json (not a rank summary)
        "study": Study(
            world_size=ks.pop(),
            tokens_per_run=tokens,
            reference=REFERENCE,
            host_components=sorted(HOST),
            rows=order,
            main_model_params=main_size,
            other_model_sizes=other,
            kernel_path=rows[order[0]].kernel_path,
            cpu_models=sorted({m for r in rows.values() for m in r.cpu_models}),
        ),
        "statistics": analysis
        | {
            "family_size": len(tested),
            "family": [n for n, p in paired.items() if p["n"] >= 2],
            "test": "paired two-sided t-test (scipy.stats.ttest_rel)",
            "verdicts": "Holm-adjusted p of the difference and of TOST, each over the family",
            "interval": "Bonferroni: Student t at confidence 1 - alpha/m",
            "detectable": "exact power of the two-sided paired t-test at alpha/m (noncentral t), observed sd",
        },
        "unigram": unigram,
        "runs": rows,
        "paired": paired,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(document, f, indent=1, default=as_json)
    plots(
        out,
        runs,
        rows,
        order,
        paired,
        unigram.nats_per_token,
        analysis,
        refs,
        (main_rows, other),
        unigram.train_tokens,
    )
    print(pathlib.Path(out, "table.md").read_text(), end="")
    print()
    print(pathlib.Path(out, "paired.md").read_text(), end="")
    print(
        f"\nunigram entropy of val under train counts: {unigram.nats_per_token:.4f} nats/token "
        f"(perplexity {unigram.perplexity:.1f})"
    )


if __name__ == "__main__":
    main()
