#!/usr/bin/env python3
"""chaos_accounting: bench/chaos/report.py's pure accounting, on lines written as the runtime writes them.

- rank_steps_lost: a rank lost at a mid-round sync loses each fragment's work since that
  fragment's last sync, up to the step its replacement rejoined at; a loss found after a round
  boundary's syncs committed (the line's round is step / H + 1) keeps that boundary's sync, one
  found before (round step / H) does not; a notice keeps it; several survivors' lines and the
  replacement's own line count one loss once; a rank never back loses up to the last step; one
  fragment (DiLoCo) loses whole rounds, a lost rank's own round included.
- RecoveryWatch: not done while a victim has not rejoined or a rank has not stepped since the
  last recovery line, done once both hold; an absorbed fault (no recovery line) only after
  absorb_s; lines fed in pieces give the answer all of them at once give.
- step_rate: steps/s outside the fault windows only.
Prints "PASS chaos-accounting" or fails with the assertion.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "chaos"))

import report

H, OFFSETS = 300, [100, 200, 0]  # the chaos bench's tiny config: 3 fragments, H = 300


def line(rank, text):
    return f"[rank {rank}] 2026-12-06T13:52:47.841 warning {text}"


def lost(ranks, rnd, step, survivors=(0, 1, 2)):
    names = ",".join(map(str, ranks))
    text = f"lost rank(s) [{names}] in round {rnd} (step {step}): generation 2 has ranks [..] (0.4 s to re-form)"
    return [line(s, text) for s in survivors]


def rejoined(rank, rnd, step, survivors=(0, 1, 2)):
    own = line(
        rank, f"rank {rank} rejoined in round {rnd} (step {step}): generation 3 has ranks [..]; state from rank 0"
    )
    text = f"rank(s) [{rank}] rejoined in round {rnd} (step {step}): generation 3 has ranks [..]"
    return [own] + [line(s, text) for s in survivors]


def steps_lost(lines, offsets=OFFSETS, total=18000):
    return report.rank_steps_lost([(float(i), x) for i, x in enumerate(lines)], H, offsets, total)


def test_rank_steps_lost():
    # Lost at fragment 0's sync at 4900 (round 17): last syncs 4600, 4700, 4800; back at 5100.
    assert steps_lost(lost([4], 17, 4900) + rejoined(4, 17, 5100)) == (500 + 400 + 300) / 3
    # At a boundary, found after its syncs (round 16 = 4500 / 300 + 1): the boundary's sync kept.
    assert steps_lost(lost([4], 16, 4500) + rejoined(4, 16, 4800)) == (500 + 400 + 300) / 3
    # At a boundary, found during its syncs (round 15): fragment 2's sync at 4500 lost too.
    assert steps_lost(lost([4], 15, 4500) + rejoined(4, 16, 4800)) == (500 + 400 + 600) / 3
    notice = [
        line(s, "rank(s) [3] left on notice in round 58 (step 17400): generation 19 has ranks [..]") for s in (0, 1)
    ]
    assert steps_lost(notice + rejoined(3, 58, 17700)) == (500 + 400 + 300) / 3
    # Never back: up to the last step.
    assert steps_lost(lost([6], 17, 4900)) == (18000 - 4600 + 18000 - 4700 + 18000 - 4800) / 3
    # Two ranks at once, and the same rank lost again after it was back: each loss once.
    twice = lost([2, 3], 30, 8800) + rejoined(2, 30, 9000) + rejoined(3, 30, 9000)
    twice += lost([2], 33, 9700) + rejoined(2, 33, 9900)
    one = (9000 - 8500 + 9000 - 8600 + 9000 - 8700) / 3
    assert steps_lost(twice) == 2 * one + (9900 - 9400 + 9900 - 9500 + 9900 - 9600) / 3
    # DiLoCo's one fragment synced at the boundary: a rank lost during it loses two rounds.
    assert steps_lost(lost([1], 15, 4500) + rejoined(1, 16, 4800), offsets=[0]) == 2 * H
    # Lines that are not losses (the launcher's, a re-formation with everyone) count nothing.
    other = [line(0, "re-formed in round 9 (step 2600) with every member: generation 5 has ranks [..] (0.3 s)")]
    assert steps_lost(other + ["[launch] rank 4 exited 137: restarting it in place"]) == 0


def test_recovery_watch():
    now = time.time()
    rec = {"at": now - 100, "until": now - 100, "victims": [4]}
    before = [(now - 99.5, f"[rank {r}] 2026-12-06T13:52:47.000 info step 4500/18000 loss 2.1") for r in range(5)]
    lines = before + [(now - 99, x) for x in lost([4], 16, 4500, survivors=(0, 1, 2, 3))]
    steps = [(now - 98, f"[rank {r}] 2026-12-06T13:52:49.000 info step 4510/18000 loss 2.1") for r in range(4)]
    back = [(now - 97, x) for x in rejoined(4, 16, 4800, survivors=(0, 1, 2, 3))]
    after = [(now - 96, f"[rank {r}] 2026-12-06T13:52:52.000 info step 4810/18000 loss 2.0") for r in range(5)]

    watch = report.RecoveryWatch(rec, 5)
    watch.feed(lines + steps)
    assert not watch.done(settle_s=1, absorb_s=30), "the victim has not rejoined"
    watch.feed(back + after[:4])
    assert not watch.done(settle_s=1, absorb_s=30), "rank 4 has not stepped since its rejoin"
    watch.feed(after[4:])
    assert watch.done(settle_s=1, absorb_s=30)
    assert not watch.done(settle_s=200, absorb_s=30), "the last recovery line is within settle_s"
    whole = report.RecoveryWatch(rec, 5)
    whole.feed(lines + steps + back + after)
    assert whole.done(settle_s=1, absorb_s=30)

    # A step counts only after the last recovery line: a store restart's two lines.
    store = report.RecoveryWatch(rec, 5)
    store.feed([(now - 99, "[launch] the store does not answer: restarting it"), *after])
    store.feed([(now - 95, "[store] serving on port 29500")])
    store.feed([(now - 94, text) for _t, text in after[:4]])
    assert not store.done(settle_s=1, absorb_s=30), "rank 4 has not stepped since the last recovery line"
    store.feed([(now - 93, after[4][1])])
    assert store.done(settle_s=1, absorb_s=30)

    quiet = report.RecoveryWatch(rec, 5)
    quiet.feed(after)
    assert quiet.done(settle_s=1, absorb_s=30), "absorbed: no recovery line and absorb_s passed"
    assert not quiet.done(settle_s=1, absorb_s=200)


def test_step_rate():
    samples = [(0.0, 0), (10.0, 600), (20.0, 700), (30.0, 1300)]  # 60 steps/s, but 10/s in 10-20 s
    assert report.step_rate(samples) == 1300 / 30
    assert report.step_rate(samples, [(12.0, 18.0)]) == 60.0
    assert report.top_steps(
        [(1.0, "[rank 0] x step 5/10 l"), (2.0, "[rank 1] x step 5/10 l"), (3.0, "[rank 1] x step 10/10 l")]
    ) == [
        (1.0, 5),
        (3.0, 10),
    ]


if __name__ == "__main__":
    test_rank_steps_lost()
    test_recovery_watch()
    test_step_rate()
    print("PASS chaos-accounting")
