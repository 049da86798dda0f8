"""Carrying out one scheduled fault on a running Job (bench/chaos/schedule.py's kinds).

inject(fault, job, net, trigger_dir, heartbeat_s) does it and returns a record: the kind, the
victims, `at` (time.time() of the first harm) and `until` (when the fault itself ended: SIGCONT
sent, the link back up; `at` for instant ones), or `skipped` with the reason when the victim
had no process to harm (it was still being replaced). Every fault is real: signals to the
rank's process (SIGKILL, SIGSTOP, SIGTERM: a notice), every rank of a node at once, its
namespace's link set down or two ranks partitioned from each other (tests/engine/rank_netns.py), the store's process killed or stopped,
and a hung training thread or a stalled checkpoint write through the test-only
PPU_TEST_FAULT_TRIGGER files.
"""

import os
import signal
import time


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def inject(fault, job, net, trigger_dir, heartbeat_s, node_size=4):
    rec = {"round": fault.round, "kind": fault.kind, "victims": [fault.victim]}
    pids = job.children("ppu-train")
    if fault.victim >= 0 and fault.victim not in pids:
        return {**rec, "skipped": f"rank {fault.victim} has no process"}
    if fault.kind == "kill":
        rec["at"] = time.time()
        _signal(pids[fault.victim], signal.SIGKILL)
    elif fault.kind == "stop":
        rec["at"] = time.time()
        _signal(pids[fault.victim], signal.SIGSTOP)
        time.sleep(2 * heartbeat_s + 1)
        _signal(pids[fault.victim], signal.SIGCONT)
    elif fault.kind == "hang":
        rec["at"] = time.time()
        with open(os.path.join(trigger_dir, f"hang-{fault.victim}"), "w"):
            pass
    elif fault.kind == "net":
        rec["at"] = time.time()
        net.cut(fault.victim)
        try:
            time.sleep(2 * heartbeat_s)
        finally:
            net.restore(fault.victim)
    elif fault.kind in ("store", "store-stop"):
        store = job.store()
        if store is None:
            return {**rec, "skipped": "no ppu-rendezvous process"}
        rec["at"] = time.time()
        # SIGSTOP: it is never continued; ppu-launch's probe finds it frozen and replaces it.
        _signal(store, signal.SIGKILL if fault.kind == "store" else signal.SIGSTOP)
    elif fault.kind == "partition":
        rec["victims"].append(fault.second_victim)
        rec["at"] = time.time()
        net.partition(fault.victim, fault.second_victim)
        try:
            time.sleep(4 * heartbeat_s)
        finally:
            net.heal(fault.victim, fault.second_victim)
    elif fault.kind == "notice":
        rec["at"] = time.time()
        _signal(pids[fault.victim], signal.SIGTERM)
    elif fault.kind == "node":
        first = fault.victim // node_size * node_size
        rec["victims"] = [r for r in range(first, first + node_size) if r in pids]
        rec["at"] = time.time()
        for r in rec["victims"]:
            _signal(pids[r], signal.SIGKILL)
    elif fault.kind == "ckpt-stall":
        rec["at"] = time.time()
        with open(os.path.join(trigger_dir, f"stall-checkpoint-{fault.victim}"), "w"):
            pass
    elif fault.kind == "second":
        since = len(job.snapshot())
        rec["at"] = time.time()
        rec["victims"].append(fault.second_victim)
        _signal(pids[fault.victim], signal.SIGKILL)
        # The moment a survivor starts re-forming without the first victim.
        seen = job.wait_for(r"the group lost a member|lost rank\(s\)", since=since, timeout=60)
        second = pids.get(fault.second_victim)
        rec["second_at"] = time.time()
        rec["second_during_recovery"] = seen is not None
        if second is not None:
            _signal(second, signal.SIGKILL)
    rec["until"] = time.time()
    return rec
