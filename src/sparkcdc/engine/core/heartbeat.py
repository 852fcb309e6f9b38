"""Heartbeats: a record on the heartbeat topic every ``heartbeat.interval.ms`` while the connector runs.

As in Debezium, the check happens after every message and when the stream is idle; the record is
``{serverName}`` / ``{ts_ms}``. ``heartbeat.action.query`` runs with each heartbeat, which lets a
connector whose captured tables are idle still see WAL (and so let its slot advance).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["HeartbeatTimer"]


class HeartbeatTimer:
    def __init__(self, interval_ms: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval_ms / 1000
        self.clock = clock
        self._next = clock() + self.interval if interval_ms > 0 else float("inf")

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    def due(self) -> bool:
        """True (and re-armed) when an interval has passed since the last heartbeat."""
        now = self.clock()
        if now < self._next:
            return False
        self._next = now + self.interval
        return True
