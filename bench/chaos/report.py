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
RecoveryWatch(rec, ranks) -> fed the job's new lines as they arrive (feed(lines)), says whether
  that full strength has been reached: done(settle_s, absorb_s) when every rank lost has rejoined
  (or the gang restarted) and no recovery line came for settle_s, or absorb_s passed with no
  recovery line at all (the bench waits for it before the next fault, so that each recovery is
  timed alone). Each line is read once: the watch must not take from the job the CPU it measures.
top_steps(lines), fault_windows(outcomes), step_rate(samples, windows) -> the job's step against
  arrival time, the faults' windows, and the steps/s over the stretches outside them: a run's
  healthy rate, which shared the machine's load at the time, and a fault-free run's rate measured
  the same way (from its first step line to its last: neither counts start-up nor the final eval).
rank_steps_lost(lines, sync_every, offsets, total_steps) -> the rank-steps whose updates never
  reached θ, fragment by fragment, from the survivors' own lines: a rank lost at step S ("lost
  rank(s) [..] in round R (step S)") last contributed to fragment f at f's last sync before S (at
  or before S when S is a round boundary whose syncs had committed: the line's R is then S / H + 1,
  the trainer's ++rounds having come after them; and when it left on a notice); its slot contributes again
  from the step J it rejoined at ("rejoined in round R (step J)"), or never (J = total_steps). It
  lost J - that sync's step for f; fragments weigh equally (each sync carries H steps of every
  member's tokens). `offsets`: each fragment's sync step within a round (ppu-plan --json's
  fragments[].sync_offset): fragment f syncs after s steps when s % H == offsets[f].
missing_rank_rounds(summaries) -> the (round, rank) pairs the summaries' recovery.degraded spans
  list as missing (the union over all final summaries: a replacement lists only the rounds it
  saw): the whole-round count, kept beside rank_steps_lost as a cross-check. Under streaming it
  can understate a loss: a lost rank takes with it each fragment's work since that fragment's
  last sync, which reaches into the round before for the fragments not yet due in this one.
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


LOSS_AT = re.compile(r"(?:lost rank\(s\)|rank\(s\)) \[([0-9, ]*)\] (in|left on notice in) round (\d+) \(step (\d+)\)")
REJOIN_AT = re.compile(r"rank(?:\(s\))? \[?([0-9, ]*)\]? rejoined in round \d+ \(step (\d+)\)")


class RecoveryWatch:
    """Whether a fault's recovery is over, from the job's lines fed once each (see the module doc)."""

    def __init__(self, rec, ranks):
        self.rec, self.ranks = rec, ranks
        self.gang = False
        self.lost, self.back = set(), set()
        self.last_event = None  # arrival time of the window's last recovery line
        self.stepped = set()  # ranks that logged a step after it

    def feed(self, lines):
        for t, line in lines:
            if t < self.rec["at"]:
                continue
            self.gang |= "restarting the gang" in line
            if m := REJOIN_AT.search(line):  # the members' line and the replacement's own
                self.back |= _ranks(m.group(1))
            if m := LOST.search(line):
                self.lost |= _ranks(m.group(1))
            if EVENT.search(line):
                self.last_event, self.stepped = t, set()
            elif self.last_event is not None and (m := STEP.match(line)):
                self.stepped.add(int(m.group(1)))

    def done(self, settle_s, absorb_s):
        now = time.time()
        if now - self.rec["until"] < settle_s:
            return False
        if not self.gang and not (self.lost <= self.back):
            return False
        if self.last_event is None:  # absorbed (nothing was lost), or not yet seen: a hang is found a window later
            return now - self.rec["until"] >= absorb_s
        return self.last_event <= now - settle_s and len(self.stepped) == self.ranks


def _last_sync(offset, sync_every, step, inclusive):
    """The step of a fragment's last scheduled sync before `step` (at or before when inclusive), 0 if none."""
    last = step - (step - offset) % sync_every
    if last == step and not inclusive:
        last -= sync_every
    return max(last, 0)


def rank_steps_lost(lines, sync_every, offsets, total_steps):
    out = {}  # rank -> (step it was lost at, whether that step's syncs had its contribution)
    lost = 0.0
    for _t, line in lines:
        if m := LOSS_AT.search(line):
            notice, in_round, at = m.group(2) != "in", int(m.group(3)), int(m.group(4))
            # A loss line names round rounds + 1 (a notice's, rounds): a loss found after a
            # boundary's ++rounds came after that boundary's syncs committed with the rank in them.
            synced = notice or (at % sync_every == 0 and in_round == at // sync_every + 1)
            for r in _ranks(m.group(1)):
                out.setdefault(r, (at, synced))
        elif (m := REJOIN_AT.search(line)) and not line.startswith("[launch]"):
            for r in _ranks(m.group(1)) & out.keys():
                lost += _slot_lost(*out.pop(r), int(m.group(2)), sync_every, offsets)
    for at, synced in out.values():
        lost += _slot_lost(at, synced, total_steps, sync_every, offsets)
    return lost


def _slot_lost(at, synced, back, sync_every, offsets):
    return sum(back - _last_sync(o, sync_every, at, synced) for o in offsets) / len(offsets)


def missing_rank_rounds(summaries):
    missing = {}
    for s in summaries:
        for span in s.recovery.degraded:
            for r in range(span.first_round, span.last_round + 1):
                missing.setdefault(r, set()).update(span.missing)
    return sum(len(m) for m in missing.values())


def top_steps(lines):
    """(arrival time, step) each time the job's step (the highest any rank logged) rose."""
    samples, top = [], 0
    for t, line in lines:
        m = STEP.match(line)
        if m and int(m.group(2)) > top:
            top = int(m.group(2))
            samples.append((t, top))
    return samples


def fault_windows(outcomes):
    """Each injected fault's (`at`, full strength), or to the next fault when it never got there."""
    return [(o["at"], o["at"] + o["recovered_s"] if o["recovered_s"] else o["end"]) for o in outcomes if "at" in o]


def step_rate(samples, windows=()):
    """Steps/s over the stretches between top_steps samples that overlap none of `windows` (the
    healthy rate of a run under faults; a fault-free run's rate with none), None without any."""
    steps = seconds = 0.0
    for (t1, s1), (t2, s2) in itertools.pairwise(samples):
        if all(t2 <= a or t1 >= b for a, b in windows):
            steps += s2 - s1
            seconds += t2 - t1
    return steps / seconds if seconds else None
