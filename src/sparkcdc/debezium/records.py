"""A change record: what Debezium hands Kafka Connect, plus the position metadata we need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .connect import ConnectSchema

__all__ = ["ChangeRecord", "Header"]


@dataclass(frozen=True, slots=True)
class Header:
    name: str
    value: Any  # JSON-ready
    schema: ConnectSchema | None
    constant: bool = False  # the same object on every record, so its serialized form can be cached


@dataclass(slots=True)
class ChangeRecord:
    """One record for one topic. ``value is None`` is a tombstone.

    Position fields make ordering and exactly-once possible downstream: ``commit_lsn`` (of the
    record's transaction; the snapshot's LSN for snapshot rows), ``lsn`` (of the change) and
    ``ordinal`` (of the record within its transaction) order records globally.
    """

    topic: str
    key: Any
    key_schema: ConnectSchema | None
    value: Any
    value_schema: ConnectSchema | None
    headers: tuple[Header, ...] = ()
    op: str | None = None  # c u d r t m; None for tombstones, heartbeats and transaction records
    schema: str | None = None
    table: str | None = None
    lsn: int = 0
    commit_lsn: int = 0
    ordinal: int = 0
    tx_id: int | None = None
    source_ts_us: int | None = None
    snapshot: str | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None and self.key is not None
