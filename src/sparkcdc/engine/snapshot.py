"""Snapshot rows as Debezium ``r`` records, with Debezium's snapshot markers.

Markers, in order of precedence: the final row of the snapshot is ``last`` (Debezium buffers one
record and marks the final one when the snapshot completes), the first row of the first table
``first`` (even when it is also its table's last row), the last row of any table
``last_in_data_collection``, the first row of any other table ``first_in_data_collection``, every
other row ``true``. All rows of one snapshot share its
LSN (the slot's consistent point), its transaction id and its start time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..debezium.events import EventFactory
from ..debezium.records import ChangeRecord
from ..debezium.table import TableSchema

__all__ = ["SnapshotContext", "snapshot_records"]


@dataclass(frozen=True)
class SnapshotContext:
    lsn: int
    tx_id: int | None
    ts_us: int


def _marker(row_index: int, is_last_row: bool, table_index: int, table_count: int) -> str:
    if row_index == 0 and table_index == 0 and not (is_last_row and table_count == 1):
        return "first"
    if is_last_row:
        return "last" if table_index == table_count - 1 else "last_in_data_collection"
    if row_index == 0:
        return "first_in_data_collection"
    return "true"


def snapshot_records(
    events: EventFactory,
    context: SnapshotContext,
    tables: Sequence[tuple[TableSchema, Iterable[Sequence[str | None]]]],
) -> Iterator[ChangeRecord]:
    """``r`` records for each table's rows, in order; reads one row ahead to know the last one."""
    pending: ChangeRecord | None = None
    ordinal = 0
    for table_index, (table, rows) in enumerate(tables):
        iterator = iter(rows)
        current = next(iterator, None)
        row_index = 0
        while current is not None:
            following = next(iterator, None)
            marker = _marker(row_index, following is None, table_index, len(tables))
            record = _read_record(events, context, table, current, marker, ordinal)
            ordinal += 1
            if pending is not None:
                yield pending
            pending = record
            current = following
            row_index += 1
    if pending is not None:
        if pending.snapshot != "last":
            _mark_last(pending)
        yield pending


def _read_record(
    events: EventFactory, context: SnapshotContext, table: TableSchema, values: Sequence[str | None], marker: str, ordinal: int
) -> ChangeRecord:
    source = events.source(
        schema=table.schema_name,
        table=table.table_name,
        ts_us=context.ts_us,
        snapshot=marker,
        tx_id=context.tx_id,
        lsn=context.lsn,
        last_commit_lsn=None,
    )
    record = events.change(table, "r", table.key(values), None, table.row(values), source)
    record.lsn = record.commit_lsn = context.lsn
    record.tx_id = context.tx_id
    record.source_ts_us = context.ts_us
    record.ordinal = ordinal
    record.snapshot = marker
    return record


def _mark_last(record: ChangeRecord) -> None:
    record.snapshot = "last"
    record.value["source"]["snapshot"] = "last"
