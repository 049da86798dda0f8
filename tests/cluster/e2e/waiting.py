"""Bounded polling: how the cluster end-to-end tests wait for the cluster.

Contract: wait_for(observe, timeout_s, what) calls observe() up to timeout_s / interval_s times
(rounded up), sleeping interval_s after each miss, and returns the first value that until()
accepts (default: any truthy value). When none does it raises WaitTimeout, whose message names
`what`, the bound and the last observed value. The bound counts polls, as the bash loops
`for ((i = 0; i < T; i += S)); do ...; sleep S; done` these replace did, so a wait lasts at least
timeout_s. An exception raised by observe() ends the wait at once: that is how a wait stops on a
state that can never turn into the awaited one (a job that Failed). wait_at_most() is the same
wait returning the last observed value instead of raising, for the waits after which the bash
went on regardless, or judged the outcome by a check of its own.
"""

import math
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """What was awaited did not happen within the bound: a failed check of the test."""


def _truthy(value: object) -> bool:
    return bool(value)


def _poll(
    observe: Callable[[], T], timeout_s: float, until: Callable[[T], bool], interval_s: float
) -> tuple[bool, T | None]:
    if interval_s <= 0:
        raise ValueError(f"interval_s must be positive, not {interval_s}")
    value = None
    for _ in range(max(1, math.ceil(timeout_s / interval_s))):
        value = observe()
        if until(value):
            return True, value
        time.sleep(interval_s)
    return False, value


def wait_for(
    observe: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    until: Callable[[T], bool] = _truthy,
    interval_s: float = 2.0,
) -> T:
    """The first observed value that until() accepts; raises WaitTimeout naming `what` if none."""
    done, value = _poll(observe, timeout_s, until, interval_s)
    if not done:
        raise WaitTimeout(f"timed out after {timeout_s:g} s waiting for {what} (last observed: {value!r})")
    return value


def wait_at_most(
    observe: Callable[[], T],
    timeout_s: float,
    *,
    until: Callable[[T], bool] = _truthy,
    interval_s: float = 2.0,
) -> T | None:
    """Like wait_for, but returns the last observed value when until() accepted none."""
    return _poll(observe, timeout_s, until, interval_s)[1]
