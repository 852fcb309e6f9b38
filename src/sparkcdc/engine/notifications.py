"""Debezium notifications (``notification.enabled.channels``): what the connector tells operators.

A notification has Debezium's shape: ``id``, ``aggregate_type`` (``Incremental Snapshot``, ...),
``type`` (STARTED, IN_PROGRESS, TABLE_SCAN_COMPLETED, COMPLETED, ABORTED, PAUSED, RESUMED, ...),
``additional_data`` (string values) and ``timestamp`` (epoch milliseconds). The ``log`` channel
writes each one to the log; every notification is also kept in :attr:`Notifier.pending` until the
caller takes it (the ``sink`` channel and ``sparkcdc status`` read them from there).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .signals import Signal

__all__ = ["INCREMENTAL_SNAPSHOT", "Notification", "Notifier"]

log = logging.getLogger("sparkcdc.notifications")

INCREMENTAL_SNAPSHOT = "Incremental Snapshot"


@dataclass(frozen=True)
class Notification:
    id: str
    aggregate_type: str
    type: str
    additional_data: dict[str, str] = field(default_factory=dict)
    timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "aggregate_type": self.aggregate_type, "type": self.type,
                "additional_data": dict(self.additional_data), "timestamp": self.timestamp}


class Notifier:
    def __init__(self, channels: str | None) -> None:
        self.channels = tuple(c.strip() for c in (channels or "").split(",") if c.strip())
        self.pending: list[Notification] = []

    def notify(self, aggregate_type: str, kind: str, additional_data: dict[str, Any], *, id: str | None = None) -> Notification:  # noqa: A002
        data = {k: str(v) for k, v in additional_data.items() if v is not None}
        notification = Notification(id or str(uuid.uuid4()), aggregate_type, kind, data, time.time_ns() // 1_000_000)
        if "log" in self.channels:
            log.info("[Notification Service] %s", json.dumps(notification.to_dict()))
        self.pending.append(notification)
        return notification

    def incremental(self, snapshot_id: str, kind: str, additional_data: dict[str, Any]) -> Notification:
        return self.notify(INCREMENTAL_SNAPSHOT, kind, additional_data, id=snapshot_id)

    def signal_error(self, signal: Signal, message: str) -> Notification:
        """A signal that could not be acted on (Debezium has no notification for it; sparkcdc sends one
        so that whoever sent the signal through a channel can see why nothing happened)."""
        return self.notify("Signal", "ERROR", {"signal_id": signal.id, "signal_type": signal.type, "channel": signal.channel, "error": message})

    def take(self) -> list[Notification]:
        taken, self.pending = self.pending, []
        return taken
