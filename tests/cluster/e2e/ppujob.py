"""A PPUJob's status, typed: the fields the cluster end-to-end tests judge, read once per look.

Contract: status(job, ns) reads `kubectl get ppj JOB -o json` and returns a Status whose
attributes are the status fields in Python's spelling (outer_round for status.outerRound, ...),
read through ppu.status (python/ppu: the status shape of the contract, generated from the
operator's field lists): integers as int, the decimal-string fields (perplexity) as the operator
wrote them, and None for a field the status does not have, never a default, so that a missing
field fails a comparison as the bash's empty jsonpath output did. Conditions are read with
condition(type) and condition_status(type). Job(name, ns) is one PPUJob as a test drives it:
start(manifest) applies it and waits (240 s unless told) for phase Running; status() reads it;
wait_phase(phase, s) waits for a phase and wait_round(r, s) for status.outerRound >= r (2 s polls;
wait_round's interval_s may say otherwise), both failing at once when the job Failed: wait_round
through check_running(), which a subclass may make stricter (live_chaos.LiveJob also stops on a
Succeeded job). Jobs(ns) is the
conftest's `jobs` fixture: jobs(name) is Job(name, ns), jobs(name, other_ns) one elsewhere.
"""

import json
from dataclasses import dataclass
from typing import Any, Self

from ppu import status as contract_status
from ppu.record import Record

from . import kube
from .waiting import wait_for


@dataclass(frozen=True)
class Condition:
    """One entry of status.conditions."""

    type: str
    status: str | None
    reason: str | None
    message: str | None
    last_transition_time: str | None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class Status:
    """status of one PPUJob at one read."""

    raw: dict

    @property
    def _read(self) -> Record:
        """The status read by attribute (ppu.status): an unset field reads None."""
        return contract_status.of(self.raw)

    @property
    def phase(self) -> str | None:
        return _str(self._read.phase)

    @property
    def reason(self) -> str | None:
        return _str(self._read.reason)

    @property
    def message(self) -> str | None:
        return _str(self._read.message)

    @property
    def outer_round(self) -> int | None:
        return _int(self._read.outer_round)

    @property
    def last_checkpoint_round(self) -> int | None:
        return _int(self._read.last_checkpoint_round)

    @property
    def restart_count(self) -> int | None:
        return _int(self._read.restart_count)

    @property
    def recoveries(self) -> int | None:
        return _int(self._read.recoveries)

    @property
    def live_ranks(self) -> int | None:
        return _int(self._read.live_ranks)

    @property
    def desired_replicas(self) -> int | None:
        """status.desiredReplicas: an elastic job's size the operator last acted on."""
        return _int(self._read.desired_replicas)

    @property
    def last_resize_to(self) -> int | None:
        """status.lastResize.to: an elastic job's size after its last resize."""
        last = self._read.last_resize
        return None if last is None else _int(last.to)

    @property
    def stops(self) -> int | None:
        """status.stops: stops of the whole job its ranks recorded (notices, gang restarts, every rank lost)."""
        return _int(self._read.stops)

    @property
    def rounds_lost(self) -> int | None:
        """status.roundsLost: outer rounds trained again after those stops, over the job's life."""
        return _int(self._read.rounds_lost)

    @property
    def last_stop_rounds_lost(self) -> int | None:
        """status.lastStop.roundsLost: what the job's last stop cost (reached round - resumed round)."""
        stop = self._read.last_stop
        return _int(stop.rounds_lost if stop is not None else None)

    @property
    def perplexity(self) -> str | None:
        """The decimal string the operator wrote (int-or-string in the CRD)."""
        return _str(self._read.perplexity)

    @property
    def parameter_checksum(self) -> str | None:
        """status.result.parameterChecksum: the ranks' own final result."""
        result = self._read.result
        return _str(result.parameter_checksum if result is not None else None)

    @property
    def export_path(self) -> str | None:
        export = self._read.export
        return _str(export.path if export is not None else None)

    @property
    def export_round(self) -> int | None:
        export = self._read.export
        return _int(export.round if export is not None else None)

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return tuple(
            Condition(
                type=str(c.type if c.type is not None else ""),
                status=_str(c.status),
                reason=_str(c.reason),
                message=_str(c.message),
                last_transition_time=_str(c.last_transition_time),
            )
            for c in self._read.conditions or ()
        )

    def condition(self, type_: str) -> Condition | None:
        """The condition of this type, None when the status has none."""
        return next((c for c in self.conditions if c.type == type_), None)

    def condition_status(self, type_: str) -> str | None:
        """The status ('True', 'False') of the condition of this type, None when there is none."""
        found = self.condition(type_)
        return found.status if found else None

    def dump(self) -> str:
        """The whole status as JSON, for a failure's message."""
        return json.dumps(self.raw, sort_keys=True)

    def dump_conditions(self) -> str:
        """status.conditions as JSON, for a failure's message."""
        return json.dumps([c.as_dict() for c in self._read.conditions or ()], sort_keys=True)


def status(job: str, ns: str) -> Status:
    """PPUJob ns/job's status now (an empty one before the operator wrote any)."""
    return Status(kube.kubectl("-n", ns, "get", "ppj", job).get("status") or {})


class Job:
    """PPUJob ns/name: started, read and waited for."""

    def __init__(self, name: str, ns: str):
        self.name = name
        self.ns = ns

    def start(self, manifest: str, running_within_s: float = 240) -> Self:
        """kubectl apply of the manifest (this PPUJob's), then waits until the job is Running."""
        kube.apply(manifest)
        self.wait_phase("Running", running_within_s)
        return self

    def status(self) -> Status:
        return status(self.name, self.ns)

    def _stop_if_failed(self, now: Status) -> None:
        if now.phase == "Failed":
            raise AssertionError(f"PPUJob {self.name} Failed: {now.dump()}")

    def check_running(self, now: Status) -> None:
        """What wait_round calls on each status short of its round: fails when the job Failed."""
        self._stop_if_failed(now)

    def wait_phase(self, phase: str, timeout_s: float) -> None:
        """Waits until the job is in phase (polls 2 s apart); fails at once when it Failed instead."""

        def observe() -> str | None:
            now = self.status()
            if now.phase != phase:
                self._stop_if_failed(now)
            return now.phase

        wait_for(observe, timeout_s, f"PPUJob {self.name} to be {phase}", until=lambda p: p == phase)

    def wait_round(self, round_: int, timeout_s: float, *, interval_s: float = 2.0) -> None:
        """Waits until status.outerRound >= round_, calling check_running() on each status short of it."""

        def reached(r: int | None) -> bool:
            return r is not None and r >= round_

        def observe() -> int | None:
            now = self.status()
            if not reached(now.outer_round):
                self.check_running(now)
            return now.outer_round

        wait_for(
            observe, timeout_s, f"PPUJob {self.name} to reach round {round_}", until=reached, interval_s=interval_s
        )


class Jobs:
    """What the `jobs` fixture gives: jobs(name) is Job(name, ns) in its namespace, jobs(name, other) in another."""

    def __init__(self, ns: str):
        self.ns = ns

    def __call__(self, name: str, ns: str | None = None) -> Job:
        return Job(name, ns or self.ns)
