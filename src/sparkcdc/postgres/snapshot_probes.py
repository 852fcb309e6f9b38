"""What the parallel snapshot asks the server about a table inside a snapshot: layout and probes.

The snapshot's planner cuts tables into ranges of heap blocks and its chunk readers place
Debezium's snapshot markers by asking whether rows exist before or after their range (see
:mod:`sparkcdc.engine.snapshot_plan` and :mod:`sparkcdc.engine.snapshot_reader` for the why).
These are the questions, as SQL; each runs on a connection whose transaction sees the snapshot.
A TID range (``ctid >= '(a,0)' AND ctid < '(b,0)'``) is read by PostgreSQL 14+ with a TID range
scan, and every ``EXISTS`` stops at the first row it finds.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from .publications import qualified_name

__all__ = [
    "TableLayout",
    "block_size",
    "count_rows_in_blocks",
    "ctid_range",
    "relation_filenode",
    "rows_after_block_exist",
    "rows_before_block_exist",
    "rows_exist",
    "rows_in_blocks_exist",
    "table_layout",
]


def ctid_range(first_block: int, end_block: int | None) -> str | None:
    """``ctid >= '(first,0)' AND ctid < '(end,0)'``, leaving out a bound that selects nothing away."""
    conditions = []
    if first_block > 0:
        conditions.append(f"ctid >= '({int(first_block)},0)'::tid")
    if end_block is not None:
        conditions.append(f"ctid < '({int(end_block)},0)'::tid")
    return " AND ".join(conditions) or None


@dataclass(frozen=True)
class TableLayout:
    """A table's storage as ``pg_class`` describes it, for cutting it into block ranges."""

    kind: str  # relkind
    has_children: bool  # relhassubclass: partitions or inheritance children
    relpages: int  # statistics: pages at the last ANALYZE/VACUUM
    reltuples: float  # statistics: rows then (-1: never analysed)
    size_bytes: int  # pg_relation_size now
    filenode: int | None


_LAYOUT_QUERY = """
SELECT c.relkind::text, c.relhassubclass, c.relpages, c.reltuples, pg_relation_size(c.oid), pg_relation_filenode(c.oid)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %s AND c.relname = %s
"""


def block_size(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT current_setting('block_size')::int").fetchone()
    assert row is not None
    return int(row[0])


def table_layout(conn: psycopg.Connection, schema: str, table: str) -> TableLayout | None:
    """The table's layout; None when the snapshot has no such table."""
    row = conn.execute(_LAYOUT_QUERY, (schema, table)).fetchone()
    if row is None:
        return None
    kind, has_children, relpages, reltuples, size, filenode = row
    return TableLayout(kind, bool(has_children), int(relpages), float(reltuples), int(size or 0),
                       None if filenode is None else int(filenode))


def relation_filenode(conn: psycopg.Connection, schema: str, table: str) -> int | None:
    """The table's file now (a rewrite — VACUUM FULL, CLUSTER, ALTER TABLE — gives it a new one)."""
    row = conn.execute(
        """SELECT pg_relation_filenode(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = %s AND c.relname = %s""",
        (schema, table),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def count_rows_in_blocks(conn: psycopg.Connection, schema: str, table: str, first_block: int, end_block: int) -> int:
    """Rows (visible in the snapshot) in blocks [first_block, end_block)."""
    row = conn.execute(
        f"SELECT count(*) FROM {qualified_name(schema, table)} WHERE {ctid_range(first_block, end_block)}".encode()
    ).fetchone()
    return int(row[0]) if row else 0


def rows_exist(conn: psycopg.Connection, schema: str, table: str, override: str | None = None) -> bool:
    """Whether the snapshot reads any row of the table (through ``override``, its snapshot query, when given)."""
    source = override or f"SELECT 1 FROM {qualified_name(schema, table)}"
    return _exists(conn, f"SELECT EXISTS ({source})")


def rows_in_blocks_exist(conn: psycopg.Connection, schema: str, table: str, first_block: int, end_block: int | None) -> bool:
    condition = ctid_range(first_block, end_block)
    where = f" WHERE {condition}" if condition else ""
    return _exists(conn, f"SELECT EXISTS (SELECT 1 FROM {qualified_name(schema, table)}{where})")


def rows_after_block_exist(conn: psycopg.Connection, schema: str, table: str, block: int) -> bool:
    """Whether the table has a row at or after ``block`` (a forward TID range scan)."""
    return rows_in_blocks_exist(conn, schema, table, block, None)


def rows_before_block_exist(conn: psycopg.Connection, schema: str, table: str, block: int, first_width: int) -> bool:
    """Whether the table has a row before ``block``: ORed ``EXISTS`` over TID ranges, nearest first,
    each twice as wide as the one before (``first_width`` blocks first). PostgreSQL evaluates the
    subplans left to right and stops at the first true one, so a row near the block is found fast
    and a long empty stretch is paid for once."""
    name = qualified_name(schema, table)
    probes: list[str] = []
    width, end = max(1, first_width), block
    while end > 0:
        start = max(0, end - width)
        probes.append(f"EXISTS (SELECT 1 FROM {name} WHERE {ctid_range(start, end)})")
        end = start
        width *= 2
    return bool(probes) and _exists(conn, "SELECT " + " OR ".join(probes))


def _exists(conn: psycopg.Connection, query: str) -> bool:
    row = conn.execute(query.encode()).fetchone()
    return bool(row and row[0])

