"""The state of a running incremental snapshot, as the checkpoint carries it.

Debezium keeps an incremental snapshot's progress in its offsets (``incremental_snapshot_*``,
debezium-facts.md §4.3). sparkcdc keeps the same facts in the source offset that Spark writes to
its offset log before a micro-batch runs: the tables left (the first is being read), the last key
read, the table's maximum key, whether the snapshot is paused, and the chunk that the batch ending
at this offset reads. So a batch replayed after a crash reads the same chunk (the same key range)
again, and the next batch starts after it: no chunk is lost, none is committed twice.

Keys are kept as the text PostgreSQL prints for each key column (``::text``), which casts back to
the column's type exactly; the chunk queries compare with ``ROW(...) > ROW(...)``.

Pure: :mod:`sparkcdc.engine.incremental_planner` does the I/O that moves the state on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["ChunkWindow", "IncrementalState", "SnapshotCollection", "Visibility"]

Key = tuple[str, ...]


def _key(raw: Any) -> Key | None:
    return None if raw is None else tuple(str(v) for v in raw)


@dataclass(frozen=True)
class SnapshotCollection:
    """One table to snapshot, with the signal's ``additional-conditions`` filter and ``surrogate-key``."""

    schema: str
    table: str
    condition: str | None = None
    surrogate_key: str | None = None

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "table": self.table, "condition": self.condition, "surrogate_key": self.surrogate_key}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SnapshotCollection:
        return cls(str(raw["schema"]), str(raw["table"]), raw.get("condition"), raw.get("surrogate_key"))


@dataclass(frozen=True)
class Visibility:
    """A read-only window's snapshot (``pg_current_snapshot()``): a transaction's changes are in the
    chunk's read iff ``xid < xmin`` or (``xid < xmax`` and ``xid`` not in ``xip``). ``high`` is the WAL
    insert position read after the snapshot: every transaction the snapshot sees commits before it."""

    xmin: int
    xmax: int
    xip: tuple[int, ...]
    high: int

    def sees(self, xid: int) -> bool:
        """Whether the snapshot sees transaction ``xid`` (pgoutput's 32-bit xid; the snapshot's are 64-bit
        ``xid8``: the xid is placed in the epoch nearest ``xmax``)."""
        full = (self.xmax & ~0xFFFFFFFF) | (xid & 0xFFFFFFFF)
        if full > self.xmax + (1 << 31):
            full -= 1 << 32
        return full < self.xmin or (full < self.xmax and full not in self.xip)

    def to_dict(self) -> dict[str, Any]:
        return {"xmin": self.xmin, "xmax": self.xmax, "xip": list(self.xip), "high": self.high}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Visibility:
        return cls(int(raw["xmin"]), int(raw["xmax"]), tuple(int(x) for x in raw["xip"]), int(raw["high"]))


@dataclass(frozen=True)
class ChunkWindow:
    """One chunk: the rows of ``schema.table`` with ``after < key <= upto`` (and the condition),
    read in ``snapshot_name`` (exported between the window's watermarks), deduplicated against the
    stream's changes inside the window.

    ``visibility`` is set for a read-only window (no watermark rows: the snapshot's transaction
    lists tell which streamed changes the read already contains)."""

    window: str
    schema: str
    table: str
    key_columns: tuple[str, ...]
    key_types: tuple[str, ...]
    after: Key | None
    upto: Key
    condition: str | None
    snapshot_name: str
    index: int  # the chunk's number within the snapshot (for notifications and logs)
    visibility: Visibility | None = None

    @property
    def open_id(self) -> str:
        return f"{self.window}-open"

    @property
    def close_id(self) -> str:
        return f"{self.window}-close"

    def describe(self) -> str:
        lower = "the start" if self.after is None else repr(self.after)
        return f"chunk {self.index} of {self.schema}.{self.table} (keys after {lower} up to {self.upto!r})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self.window, "schema": self.schema, "table": self.table, "key_columns": list(self.key_columns),
            "key_types": list(self.key_types), "after": None if self.after is None else list(self.after),
            "upto": list(self.upto), "condition": self.condition, "snapshot": self.snapshot_name, "index": self.index,
            "visibility": None if self.visibility is None else self.visibility.to_dict(),
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ChunkWindow:
        upto = _key(raw["upto"])
        assert upto is not None
        return cls(
            str(raw["window"]), str(raw["schema"]), str(raw["table"]), tuple(raw["key_columns"]), tuple(raw["key_types"]),
            _key(raw.get("after")), upto, raw.get("condition"), str(raw["snapshot"]), int(raw.get("index", 0)),
            Visibility.from_dict(raw["visibility"]) if raw.get("visibility") else None,
        )


@dataclass(frozen=True)
class IncrementalState:
    """A running incremental snapshot. ``collections[0]`` is the table being read; ``last_key`` is
    the last key of its chunks already read (None: none yet); ``max_key`` its largest key when the
    table's first chunk was planned (None: not yet known); ``rows`` the rows of its chunks planned so
    far (Debezium's ``total_rows_scanned``: rows queried, the chunk in flight included)."""

    id: str  # the execute-snapshot signal's id (Debezium's correlation id)
    collections: tuple[SnapshotCollection, ...]
    last_key: Key | None = None
    max_key: Key | None = None
    paused: bool = False
    chunk: ChunkWindow | None = None
    chunks: int = 0  # chunks planned so far
    rows: int = 0

    @property
    def current(self) -> SnapshotCollection | None:
        return self.collections[0] if self.collections else None

    @property
    def done(self) -> bool:
        return not self.collections and self.chunk is None

    def chunk_read(self) -> tuple[IncrementalState, bool]:
        """The state once the chunk planned in this offset was read (its batch committed), and
        whether that chunk finished its table."""
        chunk = self.chunk
        if chunk is None:
            return self, False
        finished = chunk.upto == self.max_key
        if finished:
            return self.table_done(), True
        return replace(self, last_key=chunk.upto, chunk=None), False

    def table_done(self) -> IncrementalState:
        """The current table needs no (more) chunks: it is empty or its last chunk was read."""
        return replace(self, collections=self.collections[1:], last_key=None, max_key=None, chunk=None, rows=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "collections": [c.to_dict() for c in self.collections],
            "last_key": None if self.last_key is None else list(self.last_key),
            "max_key": None if self.max_key is None else list(self.max_key), "paused": self.paused,
            "chunk": None if self.chunk is None else self.chunk.to_dict(), "chunks": self.chunks, "rows": self.rows,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> IncrementalState:
        return cls(
            str(raw["id"]), tuple(SnapshotCollection.from_dict(c) for c in raw["collections"]), _key(raw.get("last_key")),
            _key(raw.get("max_key")), bool(raw.get("paused", False)),
            ChunkWindow.from_dict(raw["chunk"]) if raw.get("chunk") else None, int(raw.get("chunks", 0)), int(raw.get("rows", 0)),
        )
