"""The driver side of signals and incremental snapshots: acting on signals, planning chunk windows.

Called by :class:`~sparkcdc.engine.planner.ConnectorPlanner` when it plans a streaming batch. The
state it moves on lives in the batch's end offset (:class:`~sparkcdc.engine.core.incremental.
IncrementalState`), so what a batch does is fixed before it runs and a replayed batch does it again.

A chunk window, planned here (debezium-facts.md §4.2, with the read moved where Spark wants it):

1. the open watermark row goes into the signal table (committed);
2. a REPEATABLE READ transaction exports its snapshot; in it the chunk's upper key is found (the
   ``incremental.snapshot.chunk.size``-th key after the last one read), so the offset can name the
   chunk's key range before any row is read;
3. the close watermark row goes in (``insert_insert``), or the open row is deleted (``insert_delete``);
4. the batch ends after the close watermark. The stream task reads the chunk in the exported
   snapshot when it reaches the close watermark (:mod:`sparkcdc.engine.core.snapshot_window`); the
   transaction stays open here until Spark commits the batch.

``read.only=true`` writes nothing: step 2 also records ``pg_current_snapshot()`` and the WAL insert
position after it, which tell the task exactly which streamed transactions the read contains.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import psycopg

from ..debezium.config import ConnectorConfig
from ..postgres.catalog import Catalog
from ..postgres.incremental import (
    chunk_upper_bound,
    current_snapshot,
    delete_signal,
    export_snapshot,
    insert_signal,
    maximum_key,
)
from ..postgres.privileges import describe_missing, table_access
from ..postgres.slots import current_wal_insert_lsn
from ..postgres.snapshot import SnapshotTransaction
from .core.incremental import ChunkWindow, IncrementalState, SnapshotCollection, Visibility
from .core.notifications import Notifier
from .core.signals import (
    WINDOW_CLOSE,
    WINDOW_OPEN,
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalError,
    StopSnapshot,
    match_collections,
    parse_action,
    signal_table_of,
)

__all__ = ["BlockingRequest", "IncrementalSnapshots", "NoKeyError"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BlockingRequest:
    """An ``execute-snapshot`` of type ``blocking``: the tables, and their SELECT statements."""

    id: str
    tables: tuple[tuple[str, str], ...]
    filters: tuple[tuple[str, str], ...]


class NoKeyError(SignalError):
    """The table has no primary key and the signal names no surrogate key (Debezium's NO_PRIMARY_KEY)."""


class IncrementalSnapshots:
    def __init__(self, config: ConnectorConfig, admin: psycopg.Connection, conninfo: str, notifier: Notifier) -> None:
        self.config = config
        self.admin = admin
        self.conninfo = conninfo
        self.notifier = notifier
        self.signal_table = signal_table_of(config)
        self.read_only = config.settings.read_only
        self.chunk_size = config.settings.incremental_snapshot_chunk_size
        self.strategy = config.settings.incremental_snapshot_watermarking_strategy
        self._windows: dict[str, SnapshotTransaction] = {}
        #: A blocking snapshot the last :meth:`advance` was asked for (the planner starts it at once).
        self.blocking: BlockingRequest | None = None

    # -- state transitions (no side effects on the database) -------------------------------------
    def advance(self, state: IncrementalState | None, signals: Sequence[Signal], tables: Sequence[tuple[str, str]]) -> IncrementalState | None:
        """The state after the batch that ended at ``state``'s offset, and after ``signals``.

        An ``execute-snapshot`` of type ``blocking`` is left in :attr:`blocking` for the planner
        (one per batch: a second one in the same batch is refused, to be sent again)."""
        self.blocking = None
        if state is not None and state.chunk is not None:
            before = state
            state, finished = state.chunk_read()
            if finished:
                self._table_scan_completed(before, "SUCCEEDED")
        for signal in signals:
            try:
                state = self._act(state, signal, tables)
            except SignalError as exc:
                log.error("%s", exc)
                self.notifier.signal_error(signal, str(exc))
        if state is not None and state.done:
            self.notifier.incremental(state.id, "COMPLETED", {})
            log.info("incremental snapshot %s completed", state.id)
            return None
        return state

    def _act(self, state: IncrementalState | None, signal: Signal, tables: Sequence[tuple[str, str]]) -> IncrementalState | None:
        action = parse_action(signal)
        if isinstance(action, LogMessage):
            log.info("signal %s (log): %s", signal.id, action.message)
            return state
        if isinstance(action, PauseSnapshot):
            if state is None:
                raise SignalError(f"{signal.describe()}: no incremental snapshot is running to pause")
            self.notifier.incremental(state.id, "PAUSED", {"data_collections": _names(state)})
            return replace(state, paused=True)
        if isinstance(action, ResumeSnapshot):
            if state is None:
                raise SignalError(f"{signal.describe()}: no incremental snapshot is running to resume")
            self.notifier.incremental(state.id, "RESUMED", {"data_collections": _names(state)})
            return replace(state, paused=False)
        if isinstance(action, StopSnapshot):
            return self._stop(state, signal, action)
        assert isinstance(action, ExecuteSnapshot)
        return self._execute(state, signal, action, tables)

    def _execute(self, state: IncrementalState | None, signal: Signal, action: ExecuteSnapshot,
                 tables: Sequence[tuple[str, str]]) -> IncrementalState | None:
        if action.kind == "blocking":
            return self._blocking(state, signal, action, tables)
        if not self.read_only and self.signal_table is None:
            raise SignalError(f"{signal.describe()}: an incremental snapshot writes its watermarks to the signal table; "
                              "set signal.data.collection (or read.only=true)")
        self._check_watermark_rights(signal)
        matched = _captured(signal, action, tables)
        collections = [SnapshotCollection(s, t, action.condition_for(f"{s}.{t}"), action.surrogate_key) for s, t in matched]
        if state is None:
            state = IncrementalState(signal.id, ())
            self.notifier.incremental(signal.id, "STARTED", {"data_collections": ",".join(c.name for c in collections)})
        # A table already in the snapshot is not added again, unless the signal asks for it to be read
        # again (after its current pass: the chunks that pass read before the signal may be stale).
        present = set() if action.again else {(c.schema, c.table) for c in state.collections}
        added = tuple(c for c in collections if (c.schema, c.table) not in present)
        log.info("%s: incremental snapshot of %s", signal.describe(), ", ".join(c.name for c in added) or "nothing new")
        return replace(state, collections=state.collections + added)

    def _check_watermark_rights(self, signal: Signal) -> None:
        """Refuses the snapshot before it starts when the role may not write its watermark rows:
        INSERT on the signal table (insert_insert), INSERT and DELETE (insert_delete). A read-only
        snapshot writes nothing, so a role with SELECT alone can take it."""
        if self.read_only or self.signal_table is None:
            return
        needed = ("INSERT", "DELETE") if self.strategy == "insert_delete" else ("INSERT",)
        access = table_access(self.admin, *self.signal_table, needed)
        if access is None or not access.missing:
            return  # a signal table that does not exist is named by the first INSERT's error
        lacks = describe_missing(access.missing)
        fix = " ".join(m.fix for m in access.missing)
        raise SignalError(
            f"{signal.describe()}: an incremental snapshot writes its watermark rows into the signal table {access.sql_name} "
            f"(incremental.snapshot.watermarking.strategy={self.strategy}, needs {' and '.join(needed)}), and {lacks}: "
            f"{fix} (or set read.only=true: a read-only incremental snapshot writes nothing)")

    def _blocking(self, state: IncrementalState | None, signal: Signal, action: ExecuteSnapshot,
                  tables: Sequence[tuple[str, str]]) -> IncrementalState | None:
        if self.blocking is not None:
            raise SignalError(f"{signal.describe()}: blocking snapshot {self.blocking.id!r} was asked for in the same batch; "
                              "send this one again when it has completed")
        matched = _captured(signal, action, tables)
        unreadable = [access for s, t in matched if (access := table_access(self.admin, s, t, ("SELECT",))) and access.missing]
        if unreadable:
            # Refused before the stream stops for it: its chunks would fail in the executors.
            raise SignalError(f"{signal.describe()}: a blocking snapshot reads {', '.join(a.sql_name for a in unreadable)}, and "
                              f"{'; '.join(describe_missing(a.missing) for a in unreadable)}: "
                              + " ".join(dict.fromkeys(m.fix for a in unreadable for m in a.missing)))
        # A blocking snapshot's additional condition is a whole SELECT statement, as in Debezium.
        filters = tuple((f"{s}.{t}", c) for s, t in matched if (c := action.condition_for(f"{s}.{t}")))
        self.blocking = BlockingRequest(signal.id, tuple(matched), filters)
        log.info("%s: blocking snapshot of %s", signal.describe(), ", ".join(f"{s}.{t}" for s, t in matched))
        return state

    def _stop(self, state: IncrementalState | None, signal: Signal, action: StopSnapshot) -> IncrementalState | None:
        if state is None:
            raise SignalError(f"{signal.describe()}: no incremental snapshot is running to stop")
        if not action.collections:
            stopped = state.collections
        else:
            names = [(c.schema, c.table) for c in state.collections]
            matched, _ = match_collections(action.collections, names)
            stopped = tuple(c for c in state.collections if (c.schema, c.table) in matched)
        if stopped:
            self.notifier.incremental(state.id, "ABORTED", {"data_collections": ",".join(c.name for c in stopped)})
        kept = tuple(c for c in state.collections if c not in stopped)
        log.info("%s: stopped the incremental snapshot of %s", signal.describe(), ", ".join(c.name for c in stopped) or "nothing")
        current_kept = bool(kept) and bool(state.collections) and kept[0] == state.collections[0]
        if current_kept:
            return replace(state, collections=kept)
        return replace(state, collections=kept, last_key=None, max_key=None, rows=0)

    # -- planning a chunk (writes watermarks, exports a snapshot) --------------------------------
    def plan_chunk(self, state: IncrementalState) -> tuple[IncrementalState | None, int]:
        """The state with the next chunk planned (or fewer tables, for tables with nothing left),
        and the WAL position the batch must reach (0 when no chunk was planned)."""
        while state.collections and not state.paused:
            collection = state.collections[0]
            try:
                keys, types = self._key(collection)
                if state.max_key is None:
                    largest = maximum_key(self.admin, collection.schema, collection.table, keys, collection.condition)
                    if largest is None:
                        self._table_scan_completed(state, "EMPTY")
                        state = state.table_done()
                        continue
                    state = replace(state, max_key=largest)
                assert state.max_key is not None
                chunk, rows, high = self._open_window(state, collection, keys, types)
            except (SignalError, psycopg.errors.ProgrammingError, psycopg.errors.DataError) as exc:
                # What the table or the signal's condition is at fault for (no key, a filter that is not
                # valid SQL, a value that does not cast) ends this table's snapshot. A server that went
                # away is not the table's fault: that error fails the batch, and the restarted query plans
                # the same chunk again (sparkcdc run's restarts, errors.max.retries).
                message = str(exc).strip() + _grant_hint(self.admin, collection, exc)
                log.error("incremental snapshot %s: table %s cannot be snapshotted: %s", state.id, collection.name, message)
                status = "SQL_EXCEPTION" if isinstance(exc, psycopg.Error) else "NO_PRIMARY_KEY" if isinstance(exc, NoKeyError) else "SKIPPED"
                self._table_scan_completed(state, status)
                state = state.table_done()
                continue
            # Debezium reports a chunk when it is queried, before its rows are emitted: here, where
            # its key range is fixed, so the batch that reads it carries the report.
            self.notifier.incremental(state.id, "IN_PROGRESS", {
                "data_collections": _names(state), "current_collection_in_progress": collection.name,
                "maximum_key": _key_text(state.max_key), "last_processed_key": _key_text(chunk.upto)})
            return replace(state, chunk=chunk, chunks=state.chunks + 1, rows=state.rows + rows), high
        if state.done:
            self.notifier.incremental(state.id, "COMPLETED", {})
            return None, 0
        return state, 0

    def _table_scan_completed(self, state: IncrementalState, status: str) -> None:
        """TABLE_SCAN_COMPLETED of ``state``'s current table (Debezium sends it before moving on, so
        ``data_collections`` still lists that table)."""
        assert state.current is not None
        self.notifier.incremental(state.id, "TABLE_SCAN_COMPLETED", {
            "data_collections": _names(state), "scanned_collection": state.current.name,
            "total_rows_scanned": state.rows, "status": status})

    def _key(self, collection: SnapshotCollection) -> tuple[tuple[str, ...], tuple[str, ...]]:
        info = Catalog(self.admin).table_by_name(collection.schema, collection.table)
        keys = (collection.surrogate_key,) if collection.surrogate_key else info.key_columns
        if not keys:
            raise NoKeyError(f"table {collection.name} has no primary key; name a column to order its chunks by with "
                              "\"surrogate-key\" in the execute-snapshot signal")
        declared = Catalog(self.admin).declared_types(info.oid)
        for key in keys:
            column = info.column(key)
            if column is None:
                raise SignalError(f"table {collection.name} has no column {key!r} (surrogate-key)")
            if not column.not_null and not collection.surrogate_key:
                raise SignalError(f"key column {key!r} of {collection.name} allows NULL; chunks need a NOT NULL key")
        return tuple(keys), tuple(declared[k] for k in keys)

    def _open_window(self, state: IncrementalState, collection: SnapshotCollection, keys: tuple[str, ...],
                     types: tuple[str, ...]) -> tuple[ChunkWindow, int, int]:
        """The chunk planned, the rows it holds, and the WAL position its batch must reach."""
        window = str(uuid.uuid4())
        opened_at = _instant()
        if not self.read_only:
            assert self.signal_table is not None
            insert_signal(self.admin, self.signal_table, f"{window}-open", WINDOW_OPEN, json.dumps({"openWindowTimestamp": opened_at}))
        tx = SnapshotTransaction(self.conninfo)
        try:
            name = export_snapshot(tx.conn)
            visibility = None
            if self.read_only:
                xmin, xmax, xip = current_snapshot(tx.conn)
                visibility = Visibility(xmin, xmax, xip, current_wal_insert_lsn(tx.conn))
            assert state.max_key is not None
            # The chunk's bounds are found in the snapshot, but in a transaction of their own: the window's
            # transaction must hold no lock on the table, or an ALTER TABLE would wait for it, the chunk's
            # read for the ALTER, and the window's end (after the read) for nothing that can come.
            with SnapshotTransaction(self.conninfo, snapshot_name=name) as bounds:
                upper, rows = chunk_upper_bound(bounds.conn, collection.schema, collection.table, keys, types, state.last_key,
                                                state.max_key, collection.condition, self.chunk_size)
        except BaseException:
            tx.close()
            raise
        if not self.read_only:
            assert self.signal_table is not None
            if self.strategy == "insert_delete":
                delete_signal(self.admin, self.signal_table, f"{window}-open")
            else:
                insert_signal(self.admin, self.signal_table, f"{window}-close", WINDOW_CLOSE,
                              json.dumps({"openWindowTimestamp": opened_at, "closeWindowTimestamp": _instant()}))
        self._windows[window] = tx
        chunk = ChunkWindow(window, collection.schema, collection.table, keys, types, state.last_key, tuple(upper or state.max_key),
                            collection.condition, name, state.chunks, visibility)
        high = visibility.high if visibility is not None else current_wal_insert_lsn(self.admin)
        log.info("incremental snapshot %s: %s planned", state.id, chunk.describe())
        return chunk, rows, high

    # -- after the batch ----------------------------------------------------------------------------
    def release(self, state: IncrementalState | None) -> None:
        """The batch that read ``state``'s chunk is committed: its exported snapshot has served."""
        if state is not None and state.chunk is not None:
            tx = self._windows.pop(state.chunk.window, None)
            if tx is not None:
                tx.close()

    def close(self) -> None:
        for tx in self._windows.values():
            tx.close()
        self._windows.clear()


def _captured(signal: Signal, action: ExecuteSnapshot, tables: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The captured tables an execute-snapshot names; patterns naming none are logged, none at all is an error."""
    matched, unmatched = match_collections(action.collections, tables)
    for pattern in unmatched:
        log.warning("%s: data collection %r matches no captured table; it is not snapshotted", signal.describe(), pattern)
    if not matched:
        raise SignalError(f"{signal.describe()}: none of the data collections {list(action.collections)} is a captured table")
    return matched


def _grant_hint(conn: psycopg.Connection, collection: SnapshotCollection, exc: BaseException) -> str:
    """For a table the role may not read: what it lacks and the GRANT (the table scan's status stays
    SQL_EXCEPTION, as in Debezium)."""
    if not isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return ""
    access = table_access(conn, collection.schema, collection.table, ("SELECT",))
    if access is None or not access.missing:
        return ""
    return f" ({describe_missing(access.missing)}: {' '.join(m.fix for m in access.missing)})"


def _names(state: IncrementalState) -> str:
    return ",".join(c.name for c in state.collections)


def _key_text(key: Sequence[str] | None) -> str:
    """A key as Debezium's notifications write it: its values joined by commas."""
    return '"<null>"' if key is None else ",".join(key)


def _instant() -> str:
    now = time.time_ns()
    return datetime.fromtimestamp(now // 1_000_000_000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{now % 1_000_000_000:09d}".rstrip("0").ljust(1, "0") + "Z"
