"""The chaos bench's fault schedule: which fault, on which rank, at which inner step.

draw(seed, rounds, every, kinds, ranks, slices, sync_every) returns a list of Fault, one per
`every` rounds on average (each at a round drawn uniformly in its window of `every` rounds, never
in the first window nor in the last two rounds, so that a replacement can still rejoin, and at a
step of that round drawn uniformly from its H = sync_every steps: a fault strikes between any two
syncs, not at a round's start, where what a lost rank takes with it differs), its kind drawn
from a shuffled bag of `kinds` (every kind once in each len(kinds) faults, so a short schedule
still has each), its victim uniformly from the ranks. The same arguments give the same
schedule; the steps within rounds come from a stream of their own, so the rounds, kinds and
victims are those the seed gave before steps were drawn. A `partition` cuts `victim` and `second_victim` off from each other alone. A `second` fault kills `victim` and then, the moment the survivors start re-forming,
`second_victim`: a rank of another slice (rank mod slices differs), so that both slices keep a
live owner and the coverage rules do not end the job (losing both owners of a slice is the
documented fallback, tested in live_recovery_tests.py, not a fault this bench asks to survive).
"""

import dataclasses
import random

KINDS = ("kill", "stop", "hang", "net", "store", "second", "notice", "node", "store-stop", "ckpt-stall", "partition")
NODE_SIZE = 4  # ranks per "node" of the node kind: ranks 0-3, 4-7, ...
DESCRIPTION = {
    "kill": "SIGKILL",
    "stop": "SIGSTOP for 2 x heartbeat + 1 s, then SIGCONT",
    "hang": "training thread hung (PPU_TEST_FAULT_TRIGGER)",
    "net": "link cut for 2 x heartbeat, then restored",
    "store": "ppu-rendezvous SIGKILLed",
    "second": "SIGKILL, then a rank of another slice SIGKILLed as the survivors re-form",
    "notice": "SIGTERM (a preemption notice): the rank leaves at the round boundary",
    "node": f"every rank of the victim's node of {NODE_SIZE} SIGKILLed at once",
    "store-stop": "ppu-rendezvous SIGSTOPped (a frozen store: ppu-launch's probe restarts it)",
    "ckpt-stall": "the rank's next checkpoint write stalls for good (PPU_TEST_FAULT_TRIGGER)",
    "partition": "the rank and another cannot reach each other for 4 x heartbeat, both reaching the store",
}


@dataclasses.dataclass
class Fault:
    round: int
    kind: str
    victim: int  # -1 for the store
    second_victim: int = -1
    into_round: int = 0  # inner steps into the round: the fault comes at step round * H + into_round

    def step(self, sync_every):
        return self.round * sync_every + self.into_round

    def text(self):
        who = "the store" if self.victim < 0 else f"rank {self.victim}"
        if self.kind == "node":
            first = self.victim // NODE_SIZE * NODE_SIZE
            who = f"ranks {first}-{first + NODE_SIZE - 1}"
        if self.kind == "second":
            who += f", then rank {self.second_victim}"
        if self.kind == "partition":
            who += f" and rank {self.second_victim}"
        return f"round {self.round:3d} +{self.into_round:3d} steps: {self.kind:6s} {who}"


def draw(seed, rounds, every, kinds, ranks, slices, sync_every):
    rng = random.Random(seed)
    within = random.Random(f"steps-within-rounds-{seed}")
    faults, bag = [], []
    last = rounds - 2
    for start in range(every, last, every):
        if not bag:
            bag = rng.sample(list(kinds), len(kinds))
        kind = bag.pop()
        at = rng.randrange(start, min(start + every, last))
        victim = -1 if kind in ("store", "store-stop") else rng.randrange(ranks)
        second = -1
        if kind == "second":
            second = rng.choice([r for r in range(ranks) if r % slices != victim % slices])
        if kind == "partition":  # the other side: any other rank (the group leaves one of the two out)
            second = rng.choice([r for r in range(ranks) if r != victim])
        faults.append(Fault(at, kind, victim, second, within.randrange(sync_every)))
    return faults
