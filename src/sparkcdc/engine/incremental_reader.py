"""Reading an incremental snapshot chunk, where the stream task reaches the chunk's close watermark.

The chunk is read in the snapshot the driver exported inside the window (the driver keeps that
transaction open until the batch is committed). A batch run again after the driver died finds the
snapshot gone; its chunk is then read as the table is now, which is still correct for the stream
that follows (every change after the window comes later in the output, so it overwrites whatever
newer state the read shows), and says so in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import psycopg

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.records import ChangeRecord
from ..debezium.table import TableSchemaFactory
from ..postgres.catalog import Catalog
from ..postgres.incremental import chunk_query
from ..postgres.snapshot import SnapshotTransaction
from .connection import conninfo_from_config
from .filters import TableFilter
from .incremental import ChunkWindow
from .snapshot import incremental_record
from .snapshot_window import ChunkReader
from .tables import TableResolver

__all__ = ["chunk_reader"]

log = logging.getLogger(__name__)


def chunk_reader(config: ConnectorConfig, events: EventFactory, factory: TableSchemaFactory) -> ChunkReader:
    """A :data:`~sparkcdc.engine.snapshot_window.ChunkReader` over the configured database."""

    def read(chunk: ChunkWindow, lsn: int, commit_lsn: int, ordinal: int, sequence: str | None) -> Iterator[ChangeRecord]:
        with _chunk_transaction(config, chunk) as tx:
            resolver = TableResolver(Catalog(tx.conn), factory, TableFilter(config))
            table = resolver.for_table(chunk.schema, chunk.table)
            columns = [c.name for c in table.description.columns]
            query = chunk_query(tx.conn, chunk.schema, chunk.table, columns, chunk.key_columns, chunk.key_types,
                                chunk.after, chunk.upto, chunk.condition)
            for index, values in enumerate(tx.rows(query, len(columns))):
                yield incremental_record(events, table, values, lsn=lsn, commit_lsn=commit_lsn, ordinal=ordinal + index,
                                         sequence=sequence)

    return read


def _chunk_transaction(config: ConnectorConfig, chunk: ChunkWindow) -> SnapshotTransaction:
    conninfo = conninfo_from_config(config)
    try:
        return SnapshotTransaction(conninfo, snapshot_name=chunk.snapshot_name)
    except (psycopg.errors.InvalidParameterValue, psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        log.warning("%s: the window's exported snapshot %s is gone (%s); reading the chunk as the table is now",
                    chunk.describe(), chunk.snapshot_name, str(exc).strip())
        return SnapshotTransaction(conninfo)
