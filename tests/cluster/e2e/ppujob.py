"""A PPUJob's status, typed: the fields the cluster end-to-end tests judge, read once per look.

Contract: status(job, ns) reads `kubectl get ppj JOB -o json` and returns a Status whose
attributes are the status fields in Python's spelling (outer_round for status.outerRound, ...):
integers as int, the decimal-string fields (perplexity) as the operator wrote them, and None for
a field the status does not have, never a default, so that a missing field fails a comparison
as the bash's empty jsonpath output did. Conditions are read with condition(type) and
condition_status(type). wait_phase() waits for a phase and stops at once on Failed. The field
names of the CRD (manifests/crd/ppu.dev_ppujobs.yaml) appear in this file only.
"""

import json
from dataclasses import dataclass
from typing import Any

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
    def phase(self) -> str | None:
        return _str(self.raw.get("phase"))

    @property
    def reason(self) -> str | None:
        return _str(self.raw.get("reason"))

    @property
    def message(self) -> str | None:
        return _str(self.raw.get("message"))

    @property
    def outer_round(self) -> int | None:
        return _int(self.raw.get("outerRound"))

    @property
    def last_checkpoint_round(self) -> int | None:
        return _int(self.raw.get("lastCheckpointRound"))

    @property
    def restart_count(self) -> int | None:
        return _int(self.raw.get("restartCount"))

    @property
    def recoveries(self) -> int | None:
        return _int(self.raw.get("recoveries"))

    @property
    def live_ranks(self) -> int | None:
        return _int(self.raw.get("liveRanks"))

    @property
    def stops(self) -> int | None:
        """status.stops: stops of the whole job its ranks recorded (notices, gang restarts, every rank lost)."""
        return _int(self.raw.get("stops"))

    @property
    def rounds_lost(self) -> int | None:
        """status.roundsLost: outer rounds trained again after those stops, over the job's life."""
        return _int(self.raw.get("roundsLost"))

    @property
    def last_stop_rounds_lost(self) -> int | None:
        """status.lastStop.roundsLost: what the job's last stop cost (reached round - resumed round)."""
        return _int(self.raw.get("lastStop", {}).get("roundsLost"))

    @property
    def perplexity(self) -> str | None:
        """The decimal string the operator wrote (int-or-string in the CRD)."""
        return _str(self.raw.get("perplexity"))

    @property
    def parameter_checksum(self) -> str | None:
        """status.result.parameterChecksum: the ranks' own final result."""
        return _str(self.raw.get("result", {}).get("parameterChecksum"))

    @property
    def export_path(self) -> str | None:
        return _str(self.raw.get("export", {}).get("path"))

    @property
    def export_round(self) -> int | None:
        return _int(self.raw.get("export", {}).get("round"))

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return tuple(
            Condition(
                type=str(c.get("type", "")),
                status=_str(c.get("status")),
                reason=_str(c.get("reason")),
                message=_str(c.get("message")),
                last_transition_time=_str(c.get("lastTransitionTime")),
            )
            for c in self.raw.get("conditions", [])
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
        return json.dumps(self.raw.get("conditions", []), sort_keys=True)


def status(job: str, ns: str) -> Status:
    """PPUJob ns/job's status now (an empty one before the operator wrote any)."""
    return Status(kube.kubectl("-n", ns, "get", "ppj", job).get("status") or {})


def wait_phase(job: str, phase: str, timeout_s: float, ns: str) -> None:
    """Waits until PPUJob ns/job is in phase (polls 2 s apart); fails at once when it Failed instead."""

    def observe() -> str | None:
        now = status(job, ns)
        if now.phase != phase and now.phase == "Failed":
            raise AssertionError(f"PPUJob {job} Failed: {now.dump()}")
        return now.phase

    wait_for(observe, timeout_s, f"PPUJob {job} to be {phase}", until=lambda p: p == phase)
