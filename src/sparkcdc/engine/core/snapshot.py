"""Snapshot rows as Debezium ``r`` records, with Debezium's snapshot markers.

Markers, in order of precedence: the final row of the snapshot is ``last`` (Debezium buffers one
record and marks the final one when the snapshot completes), the first row of the first table
``first`` (even when it is also its table's last row), the last row of any table
``last_in_data_collection``, the first row of any other table ``first_in_data_collection``, every
other row ``true``. All rows of one snapshot share its
LSN (the slot's consistent point), its transaction id and its start time.

Two readers build these records with the functions here: :func:`snapshot_records`, the sequential
snapshot of the in-process connector (one transaction, tables one after the other), and the chunk
reader of the parallel snapshot (:mod:`sparkcdc.engine.snapshot_reader`), which learns the same
facts about its rows with probes instead of reading the whole snapshot. Both number the rows with
:func:`snapshot_ordinal`, so records of either sort into the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ...debezium.events import EventFactory
from ...debezium.records import ChangeRecord
from ...debezium.schema_changes import schema_change_record
from ...debezium.table import TableDescription, TableSchema

__all__ = [
    "MAX_SNAPSHOT_CHUNKS",
    "MAX_SNAPSHOT_TABLES",
    "ORDINAL_CHUNK_SHIFT",
    "ORDINAL_TABLE_SHIFT",
    "ROWS_PER_CHUNK_LIMIT",
    "SnapshotContext",
    "incremental_record",
    "schema_change_ordinal",
    "snapshot_change",
    "snapshot_marker",
    "snapshot_ordinal",
    "snapshot_record",
    "snapshot_records",
    "snapshot_schema_change",
]

# A snapshot row's ordinal packs (table index, chunk index, row number in the chunk) into a
# non-negative 63-bit integer (a Spark LONG), so that ordinals order rows as the sequential snapshot
# reads them: 18 bits of table, 18 bits of chunk, 27 bits of row. Only a table's last chunk may hold
# more rows than the row field (its row number then runs into chunk numbers no chunk of that
# table uses); the planner keeps every other chunk small enough. The last position of each table's
# range is no row's: it is the next table's schema change record's (see schema_change_ordinal).
ORDINAL_TABLE_SHIFT = 45
ORDINAL_CHUNK_SHIFT = 27
MAX_SNAPSHOT_TABLES = 1 << (63 - ORDINAL_TABLE_SHIFT)
MAX_SNAPSHOT_CHUNKS = 1 << (ORDINAL_TABLE_SHIFT - ORDINAL_CHUNK_SHIFT)
ROWS_PER_CHUNK_LIMIT = 1 << ORDINAL_CHUNK_SHIFT


@dataclass(frozen=True)
class SnapshotContext:
    lsn: int
    tx_id: int | None
    ts_us: int


def snapshot_ordinal(table_index: int, chunk_index: int, row: int, *, last_chunk: bool) -> int:
    """The ordinal of row ``row`` (0-based) of a chunk; raises ``OverflowError`` outside the layout."""
    if not 0 <= table_index < MAX_SNAPSHOT_TABLES or not 0 <= chunk_index < MAX_SNAPSHOT_CHUNKS:
        raise OverflowError(f"snapshot table {table_index} / chunk {chunk_index} is outside the ordinal layout")
    position = (chunk_index << ORDINAL_CHUNK_SHIFT) + row
    if (row >= ROWS_PER_CHUNK_LIMIT and not last_chunk) or position >= (1 << ORDINAL_TABLE_SHIFT) - 1:
        raise OverflowError(
            f"snapshot chunk {chunk_index} of table {table_index} holds more rows than its ordinals can number "
            f"({row + 1}); plan smaller chunks"
        )
    return (table_index << ORDINAL_TABLE_SHIFT) | position


def schema_change_ordinal(table_index: int) -> int:
    """The ordinal of the table's ``CREATE`` schema change record (``include.schema.changes``): just
    before its first row, the last position of the previous table's range (-1 for the first table),
    which no row takes (see :func:`snapshot_ordinal`)."""
    if not 0 <= table_index < MAX_SNAPSHOT_TABLES:
        raise OverflowError(f"snapshot table {table_index} is outside the ordinal layout")
    return (table_index << ORDINAL_TABLE_SHIFT) - 1


def snapshot_schema_change(
    events: EventFactory, context: SnapshotContext, description: TableDescription, table_index: int, *,
    selected: Callable[[str], bool] | None = None,
) -> ChangeRecord:
    """The ``CREATE`` schema change record of a snapshotted table, placed just before its rows.

    Its source block is the rows': the snapshot's LSN, transaction and time, marked ``first`` for
    the snapshot's first table (it is the snapshot's first record) and ``true`` for the others."""
    marker = "first" if table_index == 0 else "true"
    source = events.source(
        schema=description.schema, table=description.name, ts_us=context.ts_us, snapshot=marker, tx_id=context.tx_id,
        lsn=context.lsn, last_commit_lsn=None,
    )
    record = schema_change_record(events, "CREATE", description, source, snapshot=True, selected=selected)
    record.lsn = record.commit_lsn = context.lsn
    record.tx_id = context.tx_id
    record.source_ts_us = context.ts_us
    record.ordinal = schema_change_ordinal(table_index)
    record.snapshot = marker
    return record


def snapshot_marker(*, table_index: int, first_of_table: bool, last_of_table: bool, final: bool) -> str:
    """Debezium's ``source.snapshot`` for a row, from what is known about its place (see the module doc)."""
    if final:
        return "last"
    if first_of_table and table_index == 0:
        return "first"
    if last_of_table:
        return "last_in_data_collection"
    if first_of_table:
        return "first_in_data_collection"
    return "true"


def snapshot_records(
    events: EventFactory,
    context: SnapshotContext,
    tables: Sequence[tuple[TableSchema, Iterable[Sequence[str | None]]]],
) -> Iterator[ChangeRecord]:
    """The sequential snapshot: ``r`` records for each table's rows, in order.

    Whether a row is the snapshot's final one is known only once every later table turned out
    empty, so one record is held back, and the final one re-marked ``last`` at the end (as Debezium
    does).
    """
    pending: ChangeRecord | None = None
    for table_index, (table, rows) in enumerate(tables):
        # One chunk per table; no table has rows enough to reach the next table's ordinals.
        first_ordinal = snapshot_ordinal(table_index, 0, 0, last_chunk=True)
        iterator = iter(rows)
        current = next(iterator, None)
        row_index = 0
        while current is not None:
            following = next(iterator, None)
            marker = snapshot_marker(table_index=table_index, first_of_table=row_index == 0, last_of_table=following is None, final=False)
            record = snapshot_record(events, context, table, current, marker, first_ordinal + row_index)
            if pending is not None:
                yield pending
            pending = record
            current = following
            row_index += 1
    if pending is not None:
        _mark_last(pending)
        yield pending


def snapshot_record(
    events: EventFactory, context: SnapshotContext, table: TableSchema, values: Sequence[str | None], marker: str, ordinal: int
) -> ChangeRecord:
    """One ``r`` record from a row's text values, positioned at the snapshot's LSN."""
    return snapshot_change(events, context, table, table.key(values), table.row(values), marker, ordinal)


def snapshot_change(
    events: EventFactory, context: SnapshotContext, table: TableSchema, key: Any, after: Any, marker: str, ordinal: int
) -> ChangeRecord:
    """The ``r`` record of a row whose key and row payloads are given."""
    source = events.source(
        schema=table.schema_name,
        table=table.table_name,
        ts_us=context.ts_us,
        snapshot=marker,
        tx_id=context.tx_id,
        lsn=context.lsn,
        last_commit_lsn=None,
    )
    record = events.change(table, "r", key, None, after, source)
    record.lsn = record.commit_lsn = context.lsn
    record.tx_id = context.tx_id
    record.source_ts_us = context.ts_us
    record.ordinal = ordinal
    record.snapshot = marker
    return record


def incremental_record(
    events: EventFactory, table: TableSchema, values: Sequence[str | None], *, lsn: int, commit_lsn: int, ordinal: int,
    sequence: str | None,
) -> ChangeRecord:
    """One ``r`` record of an incremental snapshot chunk (``source.snapshot = "incremental"``).

    Debezium emits a chunk's rows when the stream reaches the chunk's close watermark, stamped with
    the time they are emitted (``ts_ns`` to the nanosecond), the close watermark's ``sequence`` and no
    transaction or LSN of their own; ``lsn``/``commit_lsn``/``ordinal`` place the record there in
    sparkcdc's order of records (not in its ``source`` block)."""
    now_ns = events.clock_ns()
    ts_us = now_ns // 1000
    source = events.source(schema=table.schema_name, table=table.table_name, ts_us=ts_us, snapshot="incremental", with_sequence=False)
    source["sequence"] = sequence
    source["ts_ns"] = now_ns
    record = events.change(table, "r", table.key(values), None, table.row(values), source)
    record.lsn = lsn
    record.commit_lsn = commit_lsn
    record.ordinal = ordinal
    record.source_ts_us = ts_us
    record.snapshot = "incremental"
    return record


def _mark_last(record: ChangeRecord) -> None:
    record.snapshot = "last"
    record.value["source"]["snapshot"] = "last"
