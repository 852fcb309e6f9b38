"""Debezium notifications (``notification.enabled.channels``): what the connector tells operators.

A notification has Debezium's shape: ``id``, ``aggregate_type`` (``Incremental Snapshot``,
``Initial Snapshot``), ``type`` (STARTED, IN_PROGRESS, TABLE_SCAN_COMPLETED, COMPLETED, ABORTED,
PAUSED, RESUMED, SKIPPED), ``additional_data`` (string values, always with ``connector_name`` =
``topic.prefix``, as Debezium's ``getLogicalName()``) and ``timestamp`` (epoch milliseconds).

The ``log`` channel writes each one to the log when the driver makes it.

The ``sink`` channel makes each one a record on ``notification.sink.topic.name``, in the pipeline's
output like any change, and exactly once. The driver makes notifications while it plans a batch,
so :class:`Notifier` keeps them in :attr:`Notifier.pending` until the planner returns a new end
offset; it then :meth:`takes <Notifier.take>` them into that offset (``SourceOffset.notifications``).
Spark writes the offset to its log before the batch runs, and the batch's notification pieces
(:func:`notification_pieces`, read by :func:`notification_records`) emit them from it: a replayed
batch emits the same notifications (same ids and timestamps) from the logged offset, and the sinks,
exactly once per batch, commit each once. A planner that returns ``start`` unchanged keeps them for
the next end.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...debezium.events import notification_record
from ...debezium.records import ChangeRecord
from .signals import Signal

__all__ = ["INCREMENTAL_SNAPSHOT", "INITIAL_SNAPSHOT", "Notification", "NotificationPiece", "Notifier", "notification_pieces",
           "notification_records"]

log = logging.getLogger("sparkcdc.notifications")

INCREMENTAL_SNAPSHOT = "Incremental Snapshot"
INITIAL_SNAPSHOT = "Initial Snapshot"


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

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Notification:
        return cls(str(raw["id"]), str(raw["aggregate_type"]), str(raw["type"]),
                   {str(k): str(v) for k, v in (raw.get("additional_data") or {}).items()}, int(raw["timestamp"]))

    @property
    def ends_its_batch(self) -> bool:
        """Whether it reports the end of the work of the batch that carries it (the initial
        snapshot's COMPLETED): such a notification is emitted after that work, the others before."""
        return self.aggregate_type == INITIAL_SNAPSHOT and self.type == "COMPLETED"


class Notifier:
    def __init__(self, channels: str | None, connector_name: str) -> None:
        self.channels = tuple(c.strip() for c in (channels or "").split(",") if c.strip())
        self.connector_name = connector_name
        #: Notifications for the ``sink`` channel not yet in an offset (only kept when it is enabled).
        self.pending: list[Notification] = []
        #: The last notifications made, whatever the channels (for ``status``-like callers and tests).
        self.recent: deque[Notification] = deque(maxlen=256)

    @property
    def sinks(self) -> bool:
        return "sink" in self.channels

    def notify(self, aggregate_type: str, kind: str, additional_data: dict[str, Any], *, id: str | None = None) -> Notification:  # noqa: A002
        data = {k: str(v) for k, v in additional_data.items() if v is not None}
        data["connector_name"] = self.connector_name
        notification = Notification(id or str(uuid.uuid4()), aggregate_type, kind, data, time.time_ns() // 1_000_000)
        if "log" in self.channels:
            log.info("[Notification Service] %s", json.dumps(notification.to_dict()))
        if self.sinks:
            self.pending.append(notification)
        self.recent.append(notification)
        return notification

    def incremental(self, snapshot_id: str, kind: str, additional_data: dict[str, Any]) -> Notification:
        """An ``Incremental Snapshot`` notification: its id is the execute-snapshot signal's."""
        return self.notify(INCREMENTAL_SNAPSHOT, kind, additional_data, id=snapshot_id)

    def initial(self, kind: str) -> Notification:
        """An ``Initial Snapshot`` notification (STARTED, COMPLETED, SKIPPED): a fresh id each, as Debezium."""
        return self.notify(INITIAL_SNAPSHOT, kind, {})

    def signal_error(self, signal: Signal, message: str) -> Notification:
        """A signal that could not be acted on (Debezium has no notification for it; sparkcdc sends one
        so that whoever sent the signal through a channel can see why nothing happened)."""
        return self.notify("Signal", "ERROR", {"signal_id": signal.id, "signal_type": signal.type, "channel": signal.channel, "error": message})

    def take(self) -> tuple[Notification, ...]:
        taken, self.pending = tuple(self.pending), []
        return taken


@dataclass(frozen=True)
class NotificationPiece:
    """Planned work that emits notifications as records (picklable, like the other pieces).

    Their records' position: ``commit_lsn`` the start LSN of their batch (they sort before its
    changes), ``lsn`` 0 (they are no change), and ``ordinal`` each one's number over the connector's
    life (``SourceOffset.notified``), so that they sort in the order they were made even where
    batches start at one LSN (the initial snapshot's batch and the next, heartbeat-only batches)."""

    topic: str
    commit_lsn: int
    first_number: int
    notifications: tuple[dict[str, Any], ...]


def notification_pieces(topic: str | None, start_lsn: int, notifications: Sequence[Notification], first_number: int,
                        work: list[Any]) -> list[Any]:
    """A batch's pieces: its notifications before its ``work``, and those that report the end of
    that work (:attr:`Notification.ends_its_batch`) after it. ``first_number`` numbers the first."""
    if not notifications or topic is None:
        return work
    before = [n for n in notifications if not n.ends_its_batch]
    after = [n for n in notifications if n.ends_its_batch]
    pieces: list[Any] = []
    if before:
        pieces.append(NotificationPiece(topic, start_lsn, first_number, tuple(n.to_dict() for n in before)))
    pieces += work
    if after:
        pieces.append(NotificationPiece(topic, start_lsn, first_number + len(before), tuple(n.to_dict() for n in after)))
    return pieces


def notification_records(piece: NotificationPiece) -> Iterator[ChangeRecord]:
    for index, raw in enumerate(piece.notifications):
        n = Notification.from_dict(raw)
        yield notification_record(piece.topic, n.id, n.type, n.aggregate_type, n.additional_data, n.timestamp,
                                  commit_lsn=piece.commit_lsn, ordinal=piece.first_number + index)
