"""The SQL of incremental snapshots: watermark rows, exported snapshots, key bounds, chunk queries.

Key values travel as the text PostgreSQL prints for them and come back as literals cast to the
column's declared type (``'42'::integer``), so a key of any type survives the checkpoint exactly.
Chunk queries are run through COPY (``SnapshotTransaction.rows``), which takes no parameters, so
they are built with quoted literals here, never by string formatting of values elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from .publications import qualified_name

__all__ = [
    "chunk_query",
    "chunk_upper_bound",
    "current_snapshot",
    "delete_signal",
    "export_snapshot",
    "insert_signal",
    "maximum_key",
    "quote_literal",
]

Key = Sequence[str]


def quote_literal(conn: psycopg.Connection, value: str) -> str:
    return sql.Literal(value).as_string(conn)


def _columns(columns: Sequence[str]) -> str:
    return ", ".join(sql.Identifier(c).as_string(None) for c in columns)


def _row(conn: psycopg.Connection, key: Key, types: Sequence[str]) -> str:
    return "ROW(" + ", ".join(f"{quote_literal(conn, v)}::{t}" for v, t in zip(key, types, strict=True)) + ")"


def _key_row(columns: Sequence[str]) -> str:
    return "ROW(" + _columns(columns) + ")"


def _order(schema: str, table: str, keys: Sequence[str], direction: str = "") -> str:
    """ORDER BY the key columns, qualified by the table: a bare name in ORDER BY means the output
    column of that name first, and the key queries output each key as ``<key>::text`` under the
    key's own name, which would order text-wise (``'99' > '120'``)."""
    table_name = qualified_name(schema, table)
    return " ORDER BY " + ", ".join(f"{table_name}.{sql.Identifier(k).as_string(None)}{direction}" for k in keys)


def _where(parts: Sequence[str]) -> str:
    return (" WHERE " + " AND ".join(f"({p})" for p in parts)) if parts else ""


def maximum_key(conn: psycopg.Connection, schema: str, table: str, keys: Sequence[str], condition: str | None) -> tuple[str, ...] | None:
    """The largest key (as text values) of the rows the condition selects; None for no rows."""
    text = ", ".join(f"{sql.Identifier(k).as_string(None)}::text" for k in keys)
    query = (f"SELECT {text} FROM {qualified_name(schema, table)}{_where([condition] if condition else [])}"
             f"{_order(schema, table, keys, ' DESC')} LIMIT 1")
    row = conn.execute(query.encode()).fetchone()
    return None if row is None else tuple(row)


def chunk_upper_bound(
    conn: psycopg.Connection, schema: str, table: str, keys: Sequence[str], types: Sequence[str], after: Key | None, upto: Key,
    condition: str | None, size: int,
) -> tuple[str, ...] | None:
    """The key of the ``size``-th row after ``after`` (not beyond ``upto``); None when fewer remain."""
    text = ", ".join(f"{sql.Identifier(k).as_string(None)}::text" for k in keys)
    query = (f"SELECT {text} FROM {qualified_name(schema, table)}{_where(_bounds(conn, keys, types, after, upto, condition))}"
             f"{_order(schema, table, keys)} LIMIT 1 OFFSET {int(size) - 1}")
    row = conn.execute(query.encode()).fetchone()
    return None if row is None else tuple(row)


def chunk_query(
    conn: psycopg.Connection, schema: str, table: str, columns: Sequence[str], keys: Sequence[str], types: Sequence[str],
    after: Key | None, upto: Key, condition: str | None,
) -> str:
    """The SELECT of one chunk's rows, in key order."""
    return (f"SELECT {_columns(columns)} FROM {qualified_name(schema, table)}"
            f"{_where(_bounds(conn, keys, types, after, upto, condition))} ORDER BY {_columns(keys)}")


def _bounds(conn: psycopg.Connection, keys: Sequence[str], types: Sequence[str], after: Key | None, upto: Key, condition: str | None) -> list[str]:
    parts = []
    if after is not None:
        parts.append(f"{_key_row(keys)} > {_row(conn, after, types)}")
    parts.append(f"{_key_row(keys)} <= {_row(conn, upto, types)}")
    if condition:
        parts.append(condition)
    return parts


def insert_signal(conn: psycopg.Connection, signal_table: tuple[str, str], signal_id: str, kind: str, data: str | None) -> None:
    """A row in the signal table (a watermark, or a signal sent through the ``source`` channel), committed."""
    conn.execute(
        f"INSERT INTO {qualified_name(*signal_table)} (id, type, data) VALUES (%s, %s, %s)".encode(), (signal_id, kind, data)
    )


def delete_signal(conn: psycopg.Connection, signal_table: tuple[str, str], signal_id: str) -> None:
    conn.execute(f"DELETE FROM {qualified_name(*signal_table)} WHERE id = %s".encode(), (signal_id,))


def export_snapshot(conn: psycopg.Connection) -> str:
    """``pg_export_snapshot()`` in ``conn``'s open REPEATABLE READ transaction: other sessions can
    import the snapshot while that transaction stays open."""
    row = conn.execute("SELECT pg_export_snapshot()").fetchone()
    assert row is not None
    return str(row[0])


def current_snapshot(conn: psycopg.Connection) -> tuple[int, int, tuple[int, ...]]:
    """``pg_current_snapshot()`` of ``conn``'s transaction: (xmin, xmax, in-progress xids)."""
    row = conn.execute("SELECT pg_current_snapshot()::text").fetchone()
    assert row is not None
    xmin, xmax, xip = str(row[0]).split(":")
    return int(xmin), int(xmax), tuple(int(x) for x in xip.split(",") if x)
