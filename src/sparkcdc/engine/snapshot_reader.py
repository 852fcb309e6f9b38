"""Reading one planned snapshot chunk as Debezium ``r`` records (what a Spark snapshot task runs).

A chunk is read in its own transaction that imports the slot's exported snapshot, so every chunk,
on whichever executor, sees the database as of the slot's consistent point. Rows are COPYed as text
and become records through :func:`sparkcdc.engine.core.snapshot.snapshot_record`, the code the
sequential snapshot uses, with the table schema built as the in-process connector builds it.

Markers: the records of all chunks, ordered by ordinal, carry exactly the markers of one
sequential snapshot of the same tables in the same order (precedence in
:mod:`sparkcdc.engine.core.snapshot`). A chunk sees only its own rows, so it asks the snapshot:

* its first row is its table's first row unless the table has a row in an earlier block; the probe
  looks backwards in windows of doubling width (about one chunk first), each an ``EXISTS`` over a
  TID range that stops at the first row it finds, so a chunk after a long run of empty or dead
  pages pays for that run once, and every other chunk finds a row in the first pages it looks at;
* its last row is its table's last row unless the table has a row at or after ``end_block``
  (a forward TID range scan, which likewise stops at the first row);
* its table's last row is the snapshot's final row (``last``) unless one of ``later_tables`` has a
  row (read through its override query when it has one, as the snapshot reads it).

Probes run only for a chunk that has rows (a chunk after the first checks that with one
``EXISTS`` before anything else), which keeps the cost of empty stretches linear in their size.
The last row is held back until the COPY ends, when the connection is free for the probes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.records import ChangeRecord
from ..debezium.table import TableSchema, TableSchemaFactory
from ..errors import ServerError
from ..postgres.catalog import Catalog
from ..postgres.errors import ExportedSnapshotGoneError
from ..postgres.snapshot import SnapshotTransaction
from ..postgres.snapshot_probes import (
    relation_filenode,
    rows_after_block_exist,
    rows_before_block_exist,
    rows_in_blocks_exist,
)
from .connection import conninfo_from_config
from .core.filters import TableFilter
from .core.snapshot import (
    ORDINAL_CHUNK_SHIFT,
    ORDINAL_TABLE_SHIFT,
    ROWS_PER_CHUNK_LIMIT,
    SnapshotContext,
    snapshot_marker,
    snapshot_ordinal,
    snapshot_record,
    snapshot_schema_change,
)
from .core.tables import TableResolver
from .snapshot_plan import SnapshotChunk, table_has_rows

__all__ = [
    "SnapshotChunkError",
    "SnapshotUnavailableError",
    "TableRewrittenError",
    "ChunkColumns",
    "ChunkRows",
    "chunk_records",
    "chunk_schema_changes",
    "open_chunk_transaction",
    "read_chunk_columns",
    "read_chunk_rows",
    "read_snapshot_chunk",
]


class SnapshotChunkError(ServerError):
    """A planned chunk cannot be read as planned."""


class SnapshotUnavailableError(SnapshotChunkError):
    """The chunk's exported snapshot cannot be imported any more (its exporting connection is gone)."""


class TableRewrittenError(SnapshotChunkError):
    """The table was rewritten (VACUUM FULL, CLUSTER, ALTER TABLE) after planning: its block ranges mean nothing now."""


def read_snapshot_chunk(
    config: ConnectorConfig, chunk: SnapshotChunk, *, run_id: str, clock_ns: Callable[[], int] = time.time_ns
) -> Iterator[ChangeRecord]:
    """The chunk's ``r`` records, in row order; connects, imports the snapshot, closes when done.

    ``run_id`` is the ``__debezium.context.runId`` header: the same for every chunk of one run.
    """
    with chunk_session(config, chunk, run_id=run_id, clock_ns=clock_ns) as (tx, events, resolver):
        yield from chunk_records(tx, config, resolver, events, chunk)


@contextmanager
def chunk_session(
    config: ConnectorConfig, chunk: SnapshotChunk, *, run_id: str, clock_ns: Callable[[], int] = time.time_ns
) -> Iterator[tuple[SnapshotTransaction, EventFactory, TableResolver]]:
    """A transaction in the chunk's snapshot, and the event factory and table resolver to read it with."""
    with open_chunk_transaction(config, chunk) as tx:
        factory = TableSchemaFactory(config)
        events = EventFactory(config, tx.conn.info.dbname, factory.topics, clock_ns=clock_ns)
        events.set_run_id(run_id)
        # The catalog read inside the snapshot describes the tables as the planner saw them.
        yield tx, events, TableResolver(Catalog(tx.conn), factory, TableFilter(config))


def chunk_schema_changes(
    config: ConnectorConfig, chunk: SnapshotChunk, *, run_id: str, clock_ns: Callable[[], int] = time.time_ns
) -> Iterator[ChangeRecord]:
    """The ``CREATE`` schema change record of the chunk's table, as the chunk's snapshot describes it
    (``include.schema.changes``: the table's first chunk emits it, before the table's rows)."""
    with chunk_session(config, chunk, run_id=run_id, clock_ns=clock_ns) as (_tx, events, resolver):
        table = resolver.for_table(chunk.schema, chunk.table)
        record = snapshot_schema_change(events, chunk.context, table.description, chunk.table_index,
                                        selected=resolver.factory.rules.selected)
    yield record


def open_chunk_transaction(config: ConnectorConfig, chunk: SnapshotChunk) -> SnapshotTransaction:
    """A transaction that sees the chunk's snapshot; a snapshot that cannot be imported is named in the error."""
    try:
        return SnapshotTransaction(conninfo_from_config(config), snapshot_name=chunk.snapshot_name)
    except ExportedSnapshotGoneError as exc:
        raise SnapshotUnavailableError(
            f"cannot import exported snapshot {chunk.snapshot_name!r} (snapshot {chunk.snapshot_id}) to read {chunk.describe()}: "
            f"{str(exc).strip()}. An exported snapshot lives only while the connection that created the slot is open; "
            "the snapshot has to be taken again"
        ) from exc


def chunk_records(
    tx: SnapshotTransaction, config: ConnectorConfig, resolver: TableResolver, events: EventFactory, chunk: SnapshotChunk
) -> Iterator[ChangeRecord]:
    """The chunk's records, read through ``tx`` (which must see the chunk's snapshot)."""
    opened = open_chunk(tx, config, resolver, chunk)
    if opened is not None:
        yield from opened_chunk_records(tx, config, events, chunk, *opened)


@dataclass(frozen=True)
class ChunkRows:
    """A run of a chunk's rows as the server sent them (text values), with what places them: the
    first row's ordinal (the others follow) and each row's ``snapshot`` marker."""

    table: TableSchema
    context: SnapshotContext
    rows: list[tuple[str | None, ...]]
    first_ordinal: int
    markers: list[str]


def opened_chunk_rows(
    tx: SnapshotTransaction, config: ConnectorConfig, chunk: SnapshotChunk, table: TableSchema, first_of_table: bool,
    batch_rows: int = 4096,
) -> Iterator[ChunkRows]:
    """The rows of a chunk that :func:`open_chunk` opened, ``batch_rows`` at a time: for readers
    that type whole columns (the ``changes`` layout) rather than make a record per row."""
    context = chunk.context
    row_limit = _row_limit(chunk)
    rows = _chunk_rows(tx, chunk)
    current = next(rows, None)
    if current is None:
        return
    # Every row but the chunk's last: its marker depends only on whether it is its table's first.
    marker = snapshot_marker(table_index=chunk.table_index, first_of_table=first_of_table, last_of_table=False, final=False)
    row = 0
    taken: list[tuple[str | None, ...]] = []
    markers: list[str] = []
    for following in rows:
        taken.append(current)
        markers.append(marker)
        marker = "true"
        current = following
        row += 1
        if row >= row_limit:
            raise SnapshotChunkError(f"{chunk.describe()} holds more rows than its ordinals can number; plan smaller chunks")
        if len(taken) >= batch_rows:
            yield ChunkRows(table, context, taken, _ordinal(chunk, row - len(taken)), markers)
            taken, markers = [], []
    taken.append(current)
    markers.append(last_row_marker(tx, config, chunk, first_of_table=row == 0 and first_of_table))
    yield ChunkRows(table, context, taken, _ordinal(chunk, row + 1 - len(taken)), markers)


@dataclass(frozen=True)
class ChunkColumns:
    """A run of a chunk's rows as text columns (the table's columns in order, Arrow strings, NULL
    as null), with the first row's ordinal and each row's ``snapshot`` marker: :class:`ChunkRows`
    without a Python object per row or value."""

    table: TableSchema
    context: SnapshotContext
    columns: list[pa.Array]
    size: int
    first_ordinal: int
    markers: list[str]


def opened_chunk_columns(
    tx: SnapshotTransaction, config: ConnectorConfig, chunk: SnapshotChunk, table: TableSchema, first_of_table: bool,
    batch_rows: int = 4096,
) -> Iterator[ChunkColumns]:
    """The rows of a chunk that :func:`open_chunk` opened as runs of ``batch_rows`` rows of text
    columns (the last run shorter), with the markers and ordinals :func:`opened_chunk_rows` gives."""
    row_limit = _row_limit(chunk)
    first_marker = snapshot_marker(table_index=chunk.table_index, first_of_table=first_of_table, last_of_table=False, final=False)
    held: list[pa.Table] = []  # parsed rows not yet in a run (the chunk's last row is held until the COPY ends)
    held_rows = 0
    row = 0  # rows already in runs

    def run(rows: pa.Table, last_marker: str | None) -> ChunkColumns:
        size = rows.num_rows
        markers = ["true"] * size
        if row == 0:
            markers[0] = first_marker
        if last_marker is not None:
            markers[-1] = last_marker
        columns = [column.combine_chunks() for column in rows.columns[:len(chunk.columns)]]  # (no column: only counted)
        return ChunkColumns(table, chunk.context, columns, size, _ordinal(chunk, row), markers)

    for parsed in _chunk_text_columns(tx, chunk):
        if not parsed.num_rows:
            continue
        held.append(parsed)
        held_rows += parsed.num_rows
        if row + held_rows > row_limit:
            raise SnapshotChunkError(f"{chunk.describe()} holds more rows than its ordinals can number; plan smaller chunks")
        if held_rows > batch_rows:
            rows = pa.concat_tables(held)
            while held_rows > batch_rows:  # a row stays held: the last one's marker needs the COPY ended
                yield run(rows.slice(0, batch_rows), None)
                rows = rows.slice(batch_rows)
                row += batch_rows
                held_rows -= batch_rows
            held = [rows]
    if not held_rows:
        return
    last = last_row_marker(tx, config, chunk, first_of_table=row + held_rows == 1 and first_of_table)
    yield run(pa.concat_tables(held), last)


def opened_chunk_records(
    tx: SnapshotTransaction, config: ConnectorConfig, events: EventFactory, chunk: SnapshotChunk, table: TableSchema,
    first_of_table: bool,
) -> Iterator[ChangeRecord]:
    """The records of a chunk that :func:`open_chunk` opened."""
    for run in opened_chunk_rows(tx, config, chunk, table, first_of_table):
        for offset, (values, marker) in enumerate(zip(run.rows, run.markers, strict=True)):
            yield snapshot_record(events, run.context, table, values, marker, run.first_ordinal + offset)


def read_chunk_rows(config: ConnectorConfig, chunk: SnapshotChunk, *, run_id: str) -> Iterator[ChunkRows]:
    """A chunk's rows in runs (see :func:`opened_chunk_rows`); connects, imports the snapshot,
    closes when done."""
    from .core.metric_reports import counted_chunk, metrics_location

    with chunk_session(config, chunk, run_id=run_id) as (tx, _events, resolver):
        opened = open_chunk(tx, config, resolver, chunk)
        runs = opened_chunk_rows(tx, config, chunk, *opened) if opened is not None else iter(())
        yield from counted_chunk(metrics_location(config), chunk, runs, _run_rows)


def _run_rows(run: ChunkRows) -> int:
    return len(run.rows)


def read_chunk_columns(config: ConnectorConfig, chunk: SnapshotChunk, *, run_id: str) -> Iterator[ChunkColumns]:
    """A chunk's rows as runs of text columns (see :func:`opened_chunk_columns`); connects,
    imports the snapshot, closes when done."""
    from .core.metric_reports import counted_chunk, metrics_location

    with chunk_session(config, chunk, run_id=run_id) as (tx, _events, resolver):
        opened = open_chunk(tx, config, resolver, chunk)
        runs = opened_chunk_columns(tx, config, chunk, *opened) if opened is not None else iter(())
        yield from counted_chunk(metrics_location(config), chunk, runs, _run_size)


def _run_size(run: ChunkColumns) -> int:
    return run.size


def open_chunk(
    tx: SnapshotTransaction, config: ConnectorConfig, resolver: TableResolver, chunk: SnapshotChunk
) -> tuple[TableSchema, bool] | None:
    """Lock and check the chunk's table; its schema and whether the chunk starts the table.

    None: the chunk has no rows (then nothing else was asked of the server).
    """
    lock_timeout = config.settings.snapshot_lock_timeout_ms if config.settings.snapshot_locking_mode == "shared" else 0
    tx.lock_tables([(chunk.schema, chunk.table)], lock_timeout)
    if chunk.filenode is not None:
        _check_not_rewritten(tx, chunk)
    table = resolver.for_table(chunk.schema, chunk.table)
    columns = tuple(c.name for c in table.description.columns)
    if columns != chunk.columns:
        raise SnapshotChunkError(f"{chunk.describe()}: the table's columns are {columns}, but {chunk.columns} were planned")
    rows_before = False
    if chunk.first_block > 0:
        if not rows_in_blocks_exist(tx.conn, chunk.schema, chunk.table, chunk.first_block, chunk.end_block):
            return None
        # Probe windows start at about one chunk's width (see the module docstring).
        width = max(1, chunk.first_block // max(chunk.chunk_index, 1))
        rows_before = rows_before_block_exist(tx.conn, chunk.schema, chunk.table, chunk.first_block, width)
    return table, not rows_before


def last_row_marker(tx: SnapshotTransaction, config: ConnectorConfig, chunk: SnapshotChunk, *, first_of_table: bool) -> str:
    """The marker of the chunk's last row, asked of the snapshot once the chunk's rows are read."""
    rows_after = chunk.end_block is not None and rows_after_block_exist(tx.conn, chunk.schema, chunk.table, chunk.end_block)
    final = not rows_after and not any(table_has_rows(tx.conn, config, s, t) for s, t in chunk.later_tables)
    return snapshot_marker(table_index=chunk.table_index, first_of_table=first_of_table, last_of_table=not rows_after, final=final)


def chunk_ordinal(chunk: SnapshotChunk, row: int) -> int:
    """The ordinal of the chunk's row ``row``; too many rows for the layout is a :class:`SnapshotChunkError`."""
    return _ordinal(chunk, row)


def chunk_row_limit(chunk: SnapshotChunk) -> int:
    return _row_limit(chunk)


def _chunk_rows(tx: SnapshotTransaction, chunk: SnapshotChunk) -> Iterator[tuple[str | None, ...]]:
    if chunk.query is not None:
        return tx.rows(chunk.query, len(chunk.columns))
    return tx.table_rows(chunk.schema, chunk.table, chunk.columns, where=chunk.ctid_condition())


def _chunk_text_columns(tx: SnapshotTransaction, chunk: SnapshotChunk) -> Iterator[pa.Table]:
    if chunk.query is not None:
        return tx.text_columns(chunk.query, len(chunk.columns))
    return tx.table_text_columns(chunk.schema, chunk.table, chunk.columns, where=chunk.ctid_condition())


def _ordinal(chunk: SnapshotChunk, row: int) -> int:
    try:
        return snapshot_ordinal(chunk.table_index, chunk.chunk_index, row, last_chunk=chunk.is_last_chunk)
    except OverflowError as exc:
        raise SnapshotChunkError(f"{chunk.describe()}: {exc}") from None


def _row_limit(chunk: SnapshotChunk) -> int:
    """How many rows the chunk's ordinals can number (checked per row without a call)."""
    if not chunk.is_last_chunk:
        return ROWS_PER_CHUNK_LIMIT
    return (1 << ORDINAL_TABLE_SHIFT) - 1 - (chunk.chunk_index << ORDINAL_CHUNK_SHIFT)  # (the last: the next table's)


def _check_not_rewritten(tx: SnapshotTransaction, chunk: SnapshotChunk) -> None:
    """Row versions keep their block only as long as the table keeps its file (we hold a lock now)."""
    current = relation_filenode(tx.conn, chunk.schema, chunk.table)
    if current != chunk.filenode:
        raise TableRewrittenError(
            f"{chunk.describe()}: table {chunk.schema}.{chunk.table} was rewritten after the snapshot was planned "
            f"(file {chunk.filenode} is now {current}; VACUUM FULL, CLUSTER or a rewriting ALTER TABLE), so its block "
            "ranges no longer partition its rows; plan the snapshot again, and keep the planning transaction open "
            "while the chunks are read to prevent this"
        )
