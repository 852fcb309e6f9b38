"""Waiting on conditions with a timeout: the only kind of waiting tests do."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    pass


def wait_until(predicate: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.02,
               what: str | Callable[[], str] = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` after ``timeout``
    (a callable: asked then, to say how things stand at the end)."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise ConditionTimeout(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
        time.sleep(interval)
