"""Source offsets: what a streaming checkpoint records about the connector's position.

Plain JSON-able dicts on the way in and out (Spark stores them in its offset log and compares them
for equality to see whether there is new data). See docs/spark-source.md for the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ...errors import PipelineError
from ...lsn import format_lsn
from .incremental import IncrementalState
from .notifications import Notification

__all__ = ["OFFSET_VERSION", "OffsetError", "SnapshotSpec", "SourceOffset"]

OFFSET_VERSION = 1


class OffsetError(PipelineError, ValueError):
    """A checkpointed offset cannot be used (wrong version, another slot or database, malformed)."""


@dataclass(frozen=True)
class SnapshotSpec:
    """The initial snapshot a ``snapshot``-phase offset asks for."""

    id: str
    lsn: int  # the slot's consistent point: snapshot rows' source.lsn, and where streaming starts
    xid: int | None  # the snapshot transaction's id: snapshot rows' source.txId
    ts_us: int  # snapshot start time: snapshot rows' source.ts_*
    tables: tuple[tuple[str, str], ...]
    #: "initial", or "blocking" (a snapshot a signal asked for while streaming: the slot stays, and
    #: the batch before it streams up to its consistent point).
    kind: str = "initial"
    #: A blocking snapshot's per-table SELECT statements (``additional-conditions`` filters): (schema.table, statement).
    filters: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "lsn": self.lsn, "xid": self.xid, "ts_us": self.ts_us, "tables": [list(t) for t in self.tables]}
        if self.kind != "initial":
            out["kind"] = self.kind
        if self.filters:
            out["filters"] = [list(f) for f in self.filters]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SnapshotSpec:
        return cls(str(raw["id"]), int(raw["lsn"]), None if raw.get("xid") is None else int(raw["xid"]), int(raw["ts_us"]),
                   tuple((str(s), str(t)) for s, t in raw["tables"]), str(raw.get("kind", "initial")),
                   tuple((str(n), str(q)) for n, q in raw.get("filters") or ()))


@dataclass(frozen=True)
class SourceOffset:
    slot: str
    database: str
    lsn: int
    phase: str = "stream"  # "snapshot": the next batch is the snapshot described by ``snapshot``
    snapshot: SnapshotSpec | None = None
    heartbeat: int = 0
    #: A running incremental snapshot (and the chunk the batch ending here reads).
    incremental: IncrementalState | None = None
    #: Positions in the signal channels the driver reads (``file``: lines consumed; ``kafka``: offsets).
    signal_cursor: dict[str, Any] | None = None
    #: The notifications the batch ending here emits (the ``sink`` channel; see engine/core/notifications.py),
    #: and how many the connector has emitted up to here, these included: it numbers them, so that
    #: their records' positions increase from batch to batch even where batches start at one LSN.
    #: Neither is part of the position: offsets that differ only in these name the same place.
    notifications: tuple[Notification, ...] = field(default=(), compare=False)
    notified: int = field(default=0, compare=False)
    #: How many slots the connector streams through (``sparkcdc.stream.slots``): a checkpoint is read
    #: with the same number only (another one would stream some tables from slots not at its position).
    streams: int = 1
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.phase not in ("snapshot", "stream"):
            raise OffsetError(f"unknown offset phase {self.phase!r}")
        if self.phase == "snapshot" and self.snapshot is None:
            raise OffsetError("a snapshot-phase offset needs its snapshot")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"v": OFFSET_VERSION, "slot": self.slot, "db": self.database, "phase": self.phase,
                               "lsn": self.lsn, "lsn_text": format_lsn(self.lsn), "hb": self.heartbeat}
        if self.snapshot is not None:
            out["snapshot"] = self.snapshot.to_dict()
        if self.incremental is not None:
            out["incremental"] = self.incremental.to_dict()
        if self.signal_cursor:
            out["signal_cursor"] = self.signal_cursor
        if self.notifications:
            out["notifications"] = [n.to_dict() for n in self.notifications]
        if self.notified:
            out["notified"] = self.notified
        if self.streams != 1:
            out["streams"] = self.streams
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any], *, slot: str | None = None, database: str | None = None,
                  streams: int | None = None) -> SourceOffset:
        """Parse a checkpointed offset; ``slot``/``database``/``streams`` are checked when given."""
        try:
            version = int(raw["v"])
            if version != OFFSET_VERSION:
                raise OffsetError(f"offset format version {version} is not supported (expected {OFFSET_VERSION})")
            offset = cls(
                slot=str(raw["slot"]),
                database=str(raw["db"]),
                lsn=int(raw["lsn"]),
                phase=str(raw.get("phase", "stream")),
                snapshot=SnapshotSpec.from_dict(raw["snapshot"]) if raw.get("snapshot") else None,
                heartbeat=int(raw.get("hb", 0)),
                incremental=IncrementalState.from_dict(raw["incremental"]) if raw.get("incremental") else None,
                signal_cursor=raw.get("signal_cursor") or None,
                notifications=tuple(Notification.from_dict(n) for n in raw.get("notifications") or ()),
                notified=int(raw.get("notified", 0)),
                streams=int(raw.get("streams", 1)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, OffsetError):
                raise
            raise OffsetError(f"malformed offset {raw!r}: {exc}") from None
        if slot is not None and offset.slot != slot:
            raise OffsetError(
                f"the checkpoint's offset belongs to slot {offset.slot!r}, but slot.name is {slot!r}; "
                "use a new checkpoint location for another slot"
            )
        if database is not None and offset.database != database:
            raise OffsetError(f"the checkpoint's offset belongs to database {offset.database!r}, not {database!r}")
        if streams is not None and offset.streams != streams:
            raise OffsetError(
                f"sparkcdc.stream.slots: the checkpoint streams through {offset.streams} slot(s), the configuration through "
                f"{streams}; the tables would move between slots that are not at the checkpoint's position: use a new "
                "checkpoint location (and slot.name) for another number of slots"
            )
        return offset

    def streaming_from(self, lsn: int) -> SourceOffset:
        return replace(self, phase="stream", snapshot=None, lsn=lsn)

    def at(self, lsn: int) -> SourceOffset:
        return replace(self, lsn=lsn)

    def with_heartbeat(self) -> SourceOffset:
        return replace(self, heartbeat=self.heartbeat + 1)

    def emitting(self, notifications: tuple[Notification, ...], start: SourceOffset) -> SourceOffset:
        """This offset as the end of the batch from ``start`` that emits ``notifications`` (and none
        inherited from the offset it was derived from)."""
        return replace(self, notifications=notifications, notified=start.notified + len(notifications))

    @property
    def first_notification(self) -> int:
        """The number of the first notification of :attr:`notifications` (from 0, over the connector's life)."""
        return self.notified - len(self.notifications)
