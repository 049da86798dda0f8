"""What the chaos bench reports, read from the job's timed lines and the ranks' run summaries.

fault_outcome(lines, rec, end, ranks) -> for one injected fault (faults.inject's record), from
  the lines that arrived between its `at` and `end` (the next fault, or the job's end):
    fenced_s     `at` -> the first survivor's "lost rank(s) [..victim..]" line
    reform_s     the first "(X s to re-form)" the survivors logged (their own measure)
    recovered_s  `at` -> the moment every rank has logged an inner step after the last
                 recovery line of the window (a loss, a rejoin, a restart, a re-formation, a
                 launcher or store line): back to full strength; None when the fault left no
                 recovery line (absorbed)
    gang_restarts, restarts_in_place   ppu-launch's lines in the window
recovered(lines, rec, ranks, settle_s, absorb_s) -> whether that full strength has been reached,
  every rank lost has rejoined (or the gang restarted) and no recovery line came for settle_s,
  or absorb_s passed with no recovery line at all (the bench waits for it before the next
  fault, so that each recovery is timed alone).
healthy_goodput(lines, outcomes, effective_steps) -> the job's healthy steps/s and the goodput
  against them (load-matched: the same minutes of a shared machine; see its docstring).
tokens_in_theta(summaries, steps, sync_every, ranks, tokens_per_rank_step) -> the tokens whose
  updates reached θ: every rank's steps, less H steps for each (round, rank) the summaries'
  recovery.degraded spans list as missing (the union over all final summaries: a replacement
  lists only the rounds it saw). summaries: python/ppu's Summary of each rank.
"""

import itertools
import re
import time

STEP = re.compile(r"^\[rank (\d+)\] .* step (\d+)/")
EVENT = re.compile(
    r"lost rank\(s\)|left on notice|rejoined in round|restarting it in place|restarting the gang"
    r"|out of the live group|to re-form|^\[launch\]|^\[store\]"
)
# A rank fenced after a fault, or let go on its notice: out of the group either way.
LOST = re.compile(r"(?:lost rank\(s\)|rank\(s\)) \[([0-9, ]*)\](?: in round| left on notice)")
REJOINED = re.compile(r"rank\(s\) \[([0-9, ]*)\] rejoined")
REFORM = re.compile(r"\(([0-9.]+) s to re-form\)")


def _ranks(text):
    return {int(x) for x in text.replace(" ", "").split(",") if x}


def _window(lines, start, end):
    return [(t, line) for t, line in lines if start <= t < end]


def _full_strength_after(window, since, ranks):
    """First time after `since` by which every rank has logged an inner step, or None."""
    stepped = set()
    for t, line in window:
        if t < since:
            continue
        m = STEP.match(line)
        if m:
            stepped.add(int(m.group(1)))
            if len(stepped) == ranks:
                return t
    return None


def fault_outcome(lines, rec, end, ranks):
    out = {k: rec.get(k) for k in ("round", "step", "kind", "victims")}
    if "skipped" in rec:
        return {**out, "skipped": rec["skipped"]}
    at = rec["at"]
    window = _window(lines, at, end)
    victims = {v for v in rec["victims"] if v >= 0}
    fenced = next((t for t, line in window if (m := LOST.search(line)) and victims & _ranks(m.group(1))), None)
    reform = next((float(m.group(1)) for _t, line in window if (m := REFORM.search(line))), None)
    events = [t for t, line in window if EVENT.search(line)]
    last_event = max(events) if events else None
    full = _full_strength_after(window, last_event, ranks) if last_event is not None else None
    return {
        **out,
        "at": at,
        "end": end,
        "fault_seconds": round(rec["until"] - at, 2),
        "second_during_recovery": rec.get("second_during_recovery"),
        "fenced_s": round(fenced - at, 2) if fenced else None,
        "reform_s": reform,
        "recovered_s": round(full - at, 2) if full else None,
        "gang_restarts": sum("restarting the gang" in line for _t, line in window),
        "restarts_in_place": sum("restarting it in place" in line for _t, line in window),
    }


def recovered(lines, rec, ranks, settle_s, absorb_s):
    """Full strength after the fault's last recovery line, every victim rejoined (or the gang
    restarted), and `settle_s` without a new recovery line; with no recovery line at all, once
    `absorb_s` have passed since the fault ended."""
    if time.time() - rec["until"] < settle_s:
        return False
    window = [(t, line) for t, line in lines if t >= rec["at"]]
    gang = any("restarting the gang" in line for _t, line in window)
    back = set()
    lost = set()
    for _t, line in window:
        if m := REJOINED.search(line):
            back |= _ranks(m.group(1))
        if m := LOST.search(line):
            lost |= _ranks(m.group(1))
        if m := re.search(r"\[rank (\d+)\] .*rank \d+ rejoined in round", line):
            back.add(int(m.group(1)))
    if not gang and not (lost <= back):
        return False
    events = [t for t, line in window if EVENT.search(line)]
    if not events:  # absorbed (nothing was lost), or not yet seen: a hang is found a window later
        return time.time() - rec["until"] >= absorb_s
    if max(events) > time.time() - settle_s:
        return False
    return _full_strength_after(window, max(events), ranks) is not None


def tokens_in_theta(summaries, steps, sync_every, ranks, tokens_per_rank_step):
    missing = {}
    for s in summaries:
        for span in s.recovery.degraded:
            for r in range(span.first_round, span.last_round + 1):
                missing.setdefault(r, set()).update(span.missing)
    rank_rounds = sum(len(m) for m in missing.values())
    full = ranks * steps * tokens_per_rank_step
    return full - rank_rounds * sync_every * tokens_per_rank_step, rank_rounds


def healthy_goodput(lines, outcomes, effective_steps):
    """Goodput against the job's own healthy stretches, which shared the machine's load at the
    time: the job's step (the highest any rank logged) against arrival time, from its first
    step line to its last; steps/s over the stretches that overlap no fault window (from a
    fault's `at` to full strength, or to the next fault when it never got there) are the healthy
    rate, and the goodput is effective_steps / (training span x healthy rate)."""
    windows = [(o["at"], o["at"] + o["recovered_s"] if o["recovered_s"] else o["end"]) for o in outcomes if "at" in o]
    samples, top = [], 0
    for t, line in lines:
        m = STEP.match(line)
        if m and int(m.group(2)) > top:
            top = int(m.group(2))
            samples.append((t, top))
    if len(samples) < 2:
        return None, None
    steps = seconds = 0.0
    for (t1, s1), (t2, s2) in itertools.pairwise(samples):
        if all(t2 <= a or t1 >= b for a, b in windows):
            steps += s2 - s1
            seconds += t2 - t1
    rate = steps / seconds if seconds else None
    span = samples[-1][0] - samples[0][0]
    return rate, (effective_steps / (span * rate) if rate else None)
