"""Planning the parallel initial snapshot: every captured table cut into chunks of heap blocks.

The Spark source snapshots in one micro-batch whose partitions are chunks (see
docs/spark-source.md, "The initial snapshot"): the driver plans them here, inside a transaction that
imported the slot's exported snapshot (so that sizes, row probes and column lists are the
snapshot's), and each executor task reads one with :func:`sparkcdc.engine.snapshot_reader.
read_snapshot_chunk`, importing the same snapshot.

How a table is cut:

* A plain table (``relkind = 'r'``, a leaf partition included, no inheritance children, no
  ``snapshot.select.statement.overrides.<schema>.<table>``) is cut into ranges of heap blocks, ``ctid >= '(a,0)' AND ctid <
  '(b,0)'``, which PostgreSQL 14+ reads with a TID range scan (only the range's pages). The ranges
  partition the block space, so every row version is in exactly one chunk, and a range scan returns
  rows in the order a sequential scan would: the chunks, in order, read what the sequential
  snapshot reads, in the same order. The first chunk has no lower bound and the last no upper bound:
  the table's size is read after the snapshot was taken, and a row version the snapshot sees cannot
  lie beyond it, but an open end costs nothing and makes that argument unnecessary.
* A chunk is meant to hold about ``chunk_rows`` rows (``sparkcdc.snapshot.chunk.rows``): the
  table's rows are estimated from its current size (``pg_relation_size``) and the row density its
  statistics give (``reltuples / relpages``; without statistics, the density of its first pages).
  A table estimated above ``chunk_rows`` rows gets at least ``snapshot.max.threads`` chunks, so
  that this many workers can share even a table of a few chunks' size. Chunks never hold less
  than one page, and never so many pages that their row numbers overflow the ordinal layout of
  :func:`sparkcdc.engine.core.snapshot.snapshot_ordinal`.
* Any other table (empty, one page, partitioned, with inheritance children, or read through an
  override query) is one chunk that reads it whole. A partitioned table or one with children has one
  ctid space per partition/child, so block ranges of the parent do not partition its rows; an
  override query's rows have no blocks.

A chunk also carries what it needs to place Debezium's snapshot markers exactly (see
:mod:`sparkcdc.engine.snapshot_reader`): its table's position and ``later_tables``, the tables after
its own up to the first that has rows in the snapshot (all a "is any later row?" probe can need;
listing every later table would make the plan quadratic in the number of tables).

Chunk boundaries rely on row versions not moving between planning and reading. The planner plans
right after the slot exported its snapshot; nothing holds a lock on the tables from then until a
chunk is read (``pg_relation_size`` releases its lock at once, and a lock held by the planner would
make every chunk reader queue behind a waiting ``TRUNCATE``: a deadlock through the client). So a
reader checks that its table's file is still the one planned, and fails clearly if ``VACUUM FULL``,
``CLUSTER`` or a rewriting ``ALTER TABLE`` moved the rows. A ``TRUNCATE`` committed in that window
is not MVCC-safe in PostgreSQL: the snapshot then reads the table empty, and the stream carries the
truncate, so a consumer still ends with the table's true contents.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from ..debezium.config import ConnectorConfig
from ..debezium.table import TableSchemaFactory
from ..errors import PipelineError
from ..postgres.catalog import Catalog
from ..postgres.publications import qualified_name
from ..postgres.snapshot_probes import block_size as server_block_size
from ..postgres.snapshot_probes import count_rows_in_blocks, ctid_range, rows_exist, table_layout
from .core.filters import TableFilter
from .core.offsets import SnapshotSpec
from .core.snapshot import MAX_SNAPSHOT_CHUNKS, MAX_SNAPSHOT_TABLES, ROWS_PER_CHUNK_LIMIT, SnapshotContext
from .core.tables import TableResolver

__all__ = [
    "CHUNK_ROWS_PROPERTY",
    "SnapshotChunk",
    "SnapshotPlanError",
    "override_query",
    "plan_snapshot_chunks",
    "table_has_rows",
]

CHUNK_ROWS_PROPERTY = "sparkcdc.snapshot.chunk.rows"

#: Pages counted to estimate the row density of a table without statistics.
_SAMPLE_PAGES = 128
#: Page header, and per row: a MAXALIGNed heap tuple header plus a line pointer (PostgreSQL's
#: MaxHeapTuplesPerPage): no page holds more rows than (block size - header) / per row.
_PAGE_HEADER_BYTES = 24
_MIN_BYTES_PER_ROW = 28
#: What ``pg_export_snapshot`` / CREATE_REPLICATION_SLOT names look like; the name is spliced into
#: ``SET TRANSACTION SNAPSHOT '...'``, which takes no parameters.
_SNAPSHOT_NAME = re.compile(r"[0-9A-Fa-f]+(?:-[0-9A-Fa-f]+)+")


class SnapshotPlanError(PipelineError):
    """The snapshot cannot be planned: a table is missing from it, or there are too many tables."""


@dataclass(frozen=True)
class SnapshotChunk:
    """One unit of snapshot work: some heap blocks of one table (or the whole table), in one snapshot.

    Plain data, picklable: the driver plans it, a Spark task on any executor reads it.
    """

    snapshot_id: str  # SnapshotSpec.id
    snapshot_name: str  # the exported snapshot every reader imports
    lsn: int  # the slot's consistent point: every row's source.lsn
    xid: int | None  # the snapshot transaction: source.txId
    ts_us: int  # the snapshot's start: source.ts_*
    schema: str
    table: str
    table_index: int  # position of the table in the snapshot's table order
    table_count: int
    chunk_index: int  # position of the chunk within its table
    chunk_count: int
    first_block: int  # first heap block of the range (0 for a table's first chunk)
    end_block: int | None  # block after the range; None: to the end of the table
    later_tables: tuple[tuple[str, str], ...]  # see the module docstring
    query: str | None  # the table's snapshot.select.statement.overrides statement (then one chunk)
    columns: tuple[str, ...]  # the columns read, in the order the table's schema expects them
    filenode: int | None = None  # the table's relfilenode at planning (split tables): a rewrite moves rows
    kind: str = "initial"  # SnapshotSpec.kind

    def __post_init__(self) -> None:
        if not _SNAPSHOT_NAME.fullmatch(self.snapshot_name):
            raise ValueError(f"{self.snapshot_name!r} is not an exported snapshot name")
        if not 0 <= self.table_index < self.table_count or not 0 <= self.chunk_index < self.chunk_count:
            raise ValueError(f"chunk {self.chunk_index}/{self.chunk_count} of table {self.table_index}/{self.table_count} is out of range")
        if self.first_block < 0 or (self.end_block is not None and self.end_block <= self.first_block):
            raise ValueError(f"block range [{self.first_block}, {self.end_block}) is empty or negative")
        if self.query is not None and self.chunk_count != 1:
            raise ValueError("a table read through an override query cannot be split")

    @property
    def context(self) -> SnapshotContext:
        return SnapshotContext(lsn=self.lsn, tx_id=self.xid, ts_us=self.ts_us)

    @property
    def is_last_chunk(self) -> bool:
        return self.chunk_index == self.chunk_count - 1

    @property
    def qualified_table(self) -> str:
        """The table's name quoted for SQL."""
        return qualified_name(self.schema, self.table)

    def ctid_condition(self) -> str | None:
        """The WHERE condition selecting the chunk's blocks; None when the chunk is the whole table."""
        return ctid_range(self.first_block, self.end_block)

    def describe(self) -> str:
        blocks = f"blocks {self.first_block}..{'end' if self.end_block is None else self.end_block - 1}"
        return f"chunk {self.chunk_index + 1}/{self.chunk_count} ({blocks}) of {self.schema}.{self.table} in snapshot {self.snapshot_id}"


def override_query(config: ConnectorConfig, schema: str, table: str) -> str | None:
    """The table's ``snapshot.select.statement.overrides.<schema>.<table>`` statement, if any."""
    return config.snapshot_select_override(schema, table)


def table_has_rows(conn: psycopg.Connection, config: ConnectorConfig, schema: str, table: str) -> bool:
    """Whether the snapshot reads any row of the table (through its override query when it has one)."""
    return rows_exist(conn, schema, table, override_query(config, schema, table))


@dataclass(frozen=True)
class _TableLayout:
    schema: str
    table: str
    splittable: bool
    pages: int
    relpages: int
    reltuples: float
    filenode: int | None
    query: str | None
    columns: tuple[str, ...]


def plan_snapshot_chunks(
    conn: psycopg.Connection,
    config: ConnectorConfig,
    spec: SnapshotSpec,
    snapshot_name: str,
    *,
    chunk_rows: int | None = None,
) -> list[SnapshotChunk]:
    """The chunks of ``spec``'s tables, in snapshot order (table by table, blocks ascending).

    ``conn`` must be in a transaction that imported ``snapshot_name`` (see the module docstring
    for why, and why to keep it open while the chunks are read). ``spec.tables`` is taken as it
    is: filtered (``snapshot.include.collection.list``) and ordered by the caller. ``chunk_rows``
    defaults to ``sparkcdc.snapshot.chunk.rows``.
    """
    rows_per_chunk = config.settings.sparkcdc_snapshot_chunk_rows if chunk_rows is None else chunk_rows
    if rows_per_chunk <= 0:
        raise ValueError(f"chunk_rows must be positive, not {rows_per_chunk}")
    min_chunks = config.settings.snapshot_max_threads
    tables = spec.tables
    if len(tables) > MAX_SNAPSHOT_TABLES:
        raise SnapshotPlanError(f"the snapshot has {len(tables)} tables; at most {MAX_SNAPSHOT_TABLES} can be numbered")
    block_size = server_block_size(conn)
    max_rows_per_page = (block_size - _PAGE_HEADER_BYTES) // _MIN_BYTES_PER_ROW
    resolver = TableResolver(Catalog(conn), TableSchemaFactory(config), TableFilter(config))
    layouts = [_layout(conn, config, resolver, schema, table, block_size) for schema, table in tables]
    later = _later_tables(conn, config, layouts)

    chunks: list[SnapshotChunk] = []
    for table_index, layout in enumerate(layouts):
        bounds = _block_bounds(conn, layout, rows_per_chunk, min_chunks, max_rows_per_page)
        for chunk_index, (first_block, end_block) in enumerate(bounds):
            chunks.append(SnapshotChunk(
                snapshot_id=spec.id, snapshot_name=snapshot_name, lsn=spec.lsn, xid=spec.xid, ts_us=spec.ts_us,
                schema=layout.schema, table=layout.table, table_index=table_index, table_count=len(tables),
                chunk_index=chunk_index, chunk_count=len(bounds), first_block=first_block, end_block=end_block,
                later_tables=later[table_index], query=layout.query, columns=layout.columns,
                filenode=layout.filenode if len(bounds) > 1 else None, kind=spec.kind,
            ))
    return chunks


def _layout(
    conn: psycopg.Connection, config: ConnectorConfig, resolver: TableResolver, schema: str, table: str, block_size: int
) -> _TableLayout:
    layout = table_layout(conn, schema, table)
    if layout is None:
        raise SnapshotPlanError(f"table {schema}.{table} does not exist in the snapshot")
    query = override_query(config, schema, table)
    columns = tuple(c.name for c in resolver.for_table(schema, table).description.columns)
    return _TableLayout(
        schema=schema, table=table, splittable=layout.kind == "r" and not layout.has_children and query is None,
        pages=layout.size_bytes // block_size, relpages=layout.relpages, reltuples=layout.reltuples,
        filenode=layout.filenode, query=query, columns=columns,
    )


def _later_tables(conn: psycopg.Connection, config: ConnectorConfig, layouts: Sequence[_TableLayout]) -> list[tuple[tuple[str, str], ...]]:
    """For each table, the later tables up to the first one with rows (none when no later table has any)."""
    out: list[tuple[tuple[str, str], ...]] = [()] * len(layouts)
    next_with_rows: int | None = None
    for index in range(len(layouts) - 1, -1, -1):
        if next_with_rows is not None:
            out[index] = tuple((t.schema, t.table) for t in layouts[index + 1 : next_with_rows + 1])
        if index > 0 and _has_rows(conn, config, layouts[index]):
            next_with_rows = index
    return out


def _has_rows(conn: psycopg.Connection, config: ConnectorConfig, layout: _TableLayout) -> bool:
    if layout.splittable and layout.pages == 0:
        return False  # a plain table without pages: nothing to ask
    return table_has_rows(conn, config, layout.schema, layout.table)


def _block_bounds(
    conn: psycopg.Connection, layout: _TableLayout, chunk_rows: int, min_chunks: int, max_rows_per_page: int
) -> list[tuple[int, int | None]]:
    """The (first block, end block) of each chunk; see the module docstring for the sizing rules."""
    pages = layout.pages
    if not layout.splittable or pages <= 1:
        return [(0, None)]
    estimate = pages * _row_density(conn, layout, max_rows_per_page)
    count = math.ceil(estimate / chunk_rows)
    if count > 1:
        count = max(count, min_chunks)
    max_pages_per_chunk = max(1, (ROWS_PER_CHUNK_LIMIT - 1) // max_rows_per_page)
    count = max(count, math.ceil(pages / max_pages_per_chunk))
    count = min(count, pages, MAX_SNAPSHOT_CHUNKS)
    bounds = [index * pages // count for index in range(count + 1)]
    return [(bounds[i], bounds[i + 1] if i + 1 < count else None) for i in range(count)]


def _row_density(conn: psycopg.Connection, layout: _TableLayout, max_rows_per_page: int) -> float:
    """Rows per page: from the statistics, else counted in the first pages, else the most a page holds.

    Without a count the guess errs towards small chunks, which cost a little more per row but never
    leave one task with a huge share.
    """
    if layout.relpages > 0 and layout.reltuples > 0:
        return layout.reltuples / layout.relpages
    sample = min(layout.pages, _SAMPLE_PAGES)
    counted = count_rows_in_blocks(conn, layout.schema, layout.table, 0, sample)
    return counted / sample if counted else float(max_rows_per_page)
