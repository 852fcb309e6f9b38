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

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.records import ChangeRecord
from ..debezium.table import TableSchemaFactory
from ..postgres.catalog import Catalog
from ..postgres.errors import ExportedSnapshotGoneError
from ..postgres.incremental import chunk_query
from ..postgres.publications import qualified_name
from ..postgres.snapshot import SnapshotTransaction
from .connection import conninfo_from_config
from .core.filters import TableFilter
from .core.incremental import ChunkWindow
from .core.snapshot import incremental_record
from .core.snapshot_window import ChunkReader
from .core.tables import TableResolver

__all__ = ["chunk_reader"]

log = logging.getLogger(__name__)


def chunk_reader(config: ConnectorConfig, events: EventFactory, factory: TableSchemaFactory) -> ChunkReader:
    """A :data:`~sparkcdc.engine.core.snapshot_window.ChunkReader` over the configured database."""

    def read(chunk: ChunkWindow, lsn: int, commit_lsn: int, ordinal: int, sequence: str | None) -> Iterator[ChangeRecord]:
        tx = _chunk_transaction(config, chunk)
        try:
            table = TableResolver(Catalog(tx.conn), factory, TableFilter(config)).for_table(chunk.schema, chunk.table)
            changed = _changed_since(tx, chunk, tuple(c.name for c in table.description.columns))
            if changed is not None:
                log.warning("%s: the table %s since the window's snapshot %s; reading the chunk as the table is now",
                            chunk.describe(), changed, chunk.snapshot_name)
                tx.close()
                tx = SnapshotTransaction(conninfo_from_config(config))
                table = TableResolver(Catalog(tx.conn), factory, TableFilter(config)).for_table(chunk.schema, chunk.table)
            columns = [c.name for c in table.description.columns]
            query = chunk_query(tx.conn, chunk.schema, chunk.table, columns, chunk.key_columns, chunk.key_types,
                                chunk.after, chunk.upto, chunk.condition)
            for index, values in enumerate(tx.rows(query, len(columns))):
                yield incremental_record(events, table, values, lsn=lsn, commit_lsn=commit_lsn, ordinal=ordinal + index,
                                         sequence=sequence)
        finally:
            tx.close()

    return read


def _changed_since(tx: SnapshotTransaction, chunk: ChunkWindow, columns: tuple[str, ...]) -> str | None:
    """How the table changed since the snapshot ``tx`` sees, where that keeps the chunk from being
    read in it (None: it does not). A rewrite (a type change, VACUUM FULL, CLUSTER) leaves the
    snapshot seeing an empty table (rewrites are not MVCC-safe); a column dropped or renamed since
    cannot be selected. Neither can be prevented by holding a lock on the table from the window's
    planning to its read: a DDL statement would then wait for the lock, the read for the DDL
    statement, and the window's end for the read."""
    row = tx.conn.execute(
        "SELECT c.relfilenode = pg_relation_filenode(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = %s", (chunk.schema, chunk.table)).fetchone()
    if row is None or not row[0]:
        return "was rewritten"
    # The current shape (the table's own, not the snapshot's catalog): a query's columns.
    with tx.conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {qualified_name(chunk.schema, chunk.table)} LIMIT 0".encode())
        now = {column.name for column in cur.description or ()}
    gone = [name for name in columns if name not in now]
    return f"lost column(s) {', '.join(gone)}" if gone else None


def _chunk_transaction(config: ConnectorConfig, chunk: ChunkWindow) -> SnapshotTransaction:
    conninfo = conninfo_from_config(config)
    try:
        return SnapshotTransaction(conninfo, snapshot_name=chunk.snapshot_name)
    except ExportedSnapshotGoneError as exc:
        log.warning("%s: the window's exported snapshot %s is gone (%s); reading the chunk as the table is now",
                    chunk.describe(), chunk.snapshot_name, str(exc).strip())
        return SnapshotTransaction(conninfo)
