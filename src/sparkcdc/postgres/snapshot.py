"""Reading table contents inside one consistent snapshot, as text.

A snapshot transaction imports the snapshot a slot exported at creation (``SET TRANSACTION
SNAPSHOT``), so that every reader, in whichever process or Spark task, sees the database exactly as
of the slot's consistent point. Rows are read with ``COPY ... TO STDOUT`` in text format, which runs
each value through its type's output function exactly as pgoutput does, so snapshot rows and
streamed rows share one converter path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from types import TracebackType

import psycopg
import pyarrow as pa
from psycopg.abc import Buffer
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pyarrow import csv as pa_csv

from ..errors import ConfigurationError
from ..text_format import TEXT_OUTPUT_SETTINGS, libpq_options
from .connections import connect
from .errors import ExportedSnapshotGoneError
from .replication import quote_ident

__all__ = ["ISOLATION_LEVELS", "SnapshotTransaction", "connect_with_text_settings"]

#: snapshot.isolation.mode -> the SQL isolation clause Debezium uses.
ISOLATION_LEVELS = {
    "serializable": "SERIALIZABLE, READ ONLY, DEFERRABLE",
    "repeatable_read": "REPEATABLE READ",
    "read_committed": "READ COMMITTED",
    "read_uncommitted": "READ UNCOMMITTED",
}


def connect_with_text_settings(conninfo: str, *, autocommit: bool = False, application_name: str = "sparkcdc") -> psycopg.Connection:
    """A SQL connection whose value text output matches the replication connection's."""
    params = conninfo_to_dict(conninfo)
    params.setdefault("application_name", application_name)
    params["options"] = libpq_options(TEXT_OUTPUT_SETTINGS, params.get("options"))
    return connect(make_conninfo(**params), autocommit=autocommit)


#: COPY bytes gathered before a block of rows is split (whole rows: see ``copy_blocks``).
COPY_BLOCK_BYTES = 1 << 20
COPY_NULL = b"\\N"
_COPY_ESCAPES = {b"\\": b"\\", b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"}
_COPY_ESCAPE = re.compile(rb"\\(.)")


def copy_text(field: bytes) -> str | None:
    """A field of COPY's text format: ``\\N`` is NULL; the output escapes only \\, \\b \\f \\n \\r \\t \\v."""
    if field == COPY_NULL:
        return None
    if b"\\" in field:
        field = _COPY_ESCAPE.sub(lambda m: _COPY_ESCAPES.get(m.group(1), m.group(1)), field)
    return field.decode("utf-8")


_COPY_TEXT_ESCAPES = {key.decode(): value.decode() for key, value in _COPY_ESCAPES.items()}
_COPY_TEXT_ESCAPE = re.compile(r"\\(.)")


def _copy_field(field: str) -> str | None:
    """:func:`copy_text` of a decoded field that holds a backslash."""
    if field == "\\N":
        return None
    return _COPY_TEXT_ESCAPE.sub(lambda m: _COPY_TEXT_ESCAPES.get(m.group(1), m.group(1)), field)


def table_query(schema: str, table: str, columns: Sequence[str], where: str | None = None) -> str:
    """The SELECT of a table's ``columns`` (``where``: a condition on its rows)."""
    projection = ", ".join(quote_ident(c) for c in columns)
    query = f"SELECT {projection} FROM {quote_ident(schema)}.{quote_ident(table)}"
    return f"{query} WHERE {where}" if where else query


#: What each major answers ``SET TRANSACTION SNAPSHOT`` with for a snapshot whose exporter is gone
#: (15: 22023 invalid snapshot identifier; 18: 42704 snapshot does not exist), or that it may not use.
_SNAPSHOT_GONE = (psycopg.errors.InvalidParameterValue, psycopg.errors.UndefinedObject,
                  psycopg.errors.ObjectNotInPrerequisiteState)


class SnapshotTransaction:
    """A read-only transaction that sees one snapshot; reads tables as rows of text values.

    With ``snapshot_name`` the exported snapshot of a new slot is imported (REPEATABLE READ, as it
    must be); without it the transaction takes its own snapshot at ``isolation``.
    """

    def __init__(self, conninfo: str, *, snapshot_name: str | None = None, isolation: str = "repeatable_read") -> None:
        """Raises :class:`ExportedSnapshotGoneError` when ``snapshot_name`` can no longer be imported."""
        if isolation not in ISOLATION_LEVELS:
            raise ConfigurationError(f"unknown snapshot isolation {isolation!r}", prop="isolation")
        # Autocommit, so that our BEGIN (with its isolation level) is the transaction's first statement.
        self.conn = connect_with_text_settings(conninfo, autocommit=True, application_name="sparkcdc-snapshot")
        try:
            if snapshot_name is not None:
                self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try:
                    self.conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'".encode())
                except _SNAPSHOT_GONE as exc:
                    raise ExportedSnapshotGoneError(str(exc).strip()) from exc
            else:
                self.conn.execute(f"BEGIN ISOLATION LEVEL {ISOLATION_LEVELS[isolation]}".encode())
        except (psycopg.Error, ExportedSnapshotGoneError):
            self.conn.close()
            raise

    def transaction_id(self) -> int | None:
        """``txid_current()``: the snapshot transaction's id (``source.txId`` of snapshot rows).

        A standby assigns no transaction ids (``txid_current()`` fails in recovery): there it is the
        snapshot's xmax, the first id not yet assigned when it was taken, which is what
        ``txid_current()`` would have given a transaction started then on the primary."""
        row = self.conn.execute("SELECT CASE WHEN pg_is_in_recovery() THEN txid_snapshot_xmax(txid_current_snapshot()) "
                                "ELSE txid_current() END").fetchone()
        return None if row is None else int(row[0])

    def use_rendering_settings(self) -> None:
        """The settings the server-rendered JSON payloads assume (``sparkcdc.debezium.sql_json``),
        for the rest of this transaction."""
        self.conn.execute("SET LOCAL client_encoding TO 'UTF8'")
        self.conn.execute("SET LOCAL standard_conforming_strings TO on")

    def copy_blocks(self, query: str, block_bytes: int) -> Iterator[bytes]:
        """``query`` (a ``COPY ... TO STDOUT``) as raw text-format data, in blocks of about
        ``block_bytes`` (whole rows: each COPY data message is one row, ending in a newline). The
        COPY ends, and the connection is free again, when the iterator is exhausted."""
        with self.conn.cursor().copy(query.encode()) as copy:
            parts: list[Buffer] = []
            size = 0
            for data in copy:
                parts.append(data)
                size += len(data)
                if size >= block_bytes:
                    yield b"".join(parts)
                    parts, size = [], 0
            if parts:
                yield b"".join(parts)

    def current_wal_lsn_text(self) -> str:
        row = self.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        return row[0]

    def lock_tables(self, tables: Sequence[tuple[str, str]], timeout_ms: int) -> None:
        """``snapshot.locking.mode=shared``: ACCESS SHARE locks, bounded by ``snapshot.lock.timeout.ms``."""
        self.conn.execute(f"SET LOCAL lock_timeout = {int(timeout_ms)}".encode())
        for schema, table in tables:
            self.conn.execute(f"LOCK TABLE {quote_ident(schema)}.{quote_ident(table)} IN ACCESS SHARE MODE".encode())

    def rows(self, query: str, column_count: int) -> Iterator[tuple[str | None, ...]]:
        """Rows of ``query`` (a SELECT) as text values, streamed through COPY.

        The COPY text is split here, a block of rows at a time, rather than by psycopg's row
        parser: measured, that parser was the largest single cost of a typed snapshot chunk."""
        for block in self.copy_blocks(f"COPY ({query}) TO STDOUT", COPY_BLOCK_BYTES):
            # Decoded a block at a time (a tab or newline byte is never part of a UTF-8 sequence):
            # most lines have no backslash, so neither a NULL nor an escape, and split as they are.
            # Every row ends in a newline; an empty line is a row too (one empty string, or no column).
            lines = block.decode("utf-8").split("\n")
            lines.pop()
            for line in lines:
                fields = line.split("\t") if column_count else []
                if len(fields) != column_count:
                    raise ValueError(f"COPY gave {len(fields)} fields for {column_count} columns")
                if "\\" in line:
                    yield tuple([_copy_field(field) if "\\" in field else field for field in fields])
                else:
                    yield tuple(fields)

    def table_rows(self, schema: str, table: str, columns: Sequence[str], where: str | None = None) -> Iterator[tuple[str | None, ...]]:
        return self.rows(table_query(schema, table, columns, where), len(columns))

    def text_columns(self, query: str, column_count: int) -> Iterator[pa.Table]:
        """Rows of ``query`` (a SELECT) as tables of text columns (``c0``, ``c1`` …, Arrow strings,
        NULL as null; a query without columns: one column of nulls), a block of COPY data at a time: the values are the ones :meth:`rows` gives,
        without a Python object per row or value.

        COPY's CSV format (rather than text) because Arrow's CSV reader parses it exactly: a NULL
        is an unquoted empty field, an empty string a quoted one, and a value holding a delimiter,
        quote or line break is quoted (line breaks in quoted values allowed); no backslash escapes."""
        names = [f"c{i}" for i in range(column_count)]
        convert = pa_csv.ConvertOptions(column_types={name: pa.string() for name in names}, null_values=[""],
                                        strings_can_be_null=True, quoted_strings_can_be_null=False)
        parse = pa_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False)
        for block in self.copy_blocks(f"COPY ({query}) TO STDOUT (FORMAT csv)", COPY_BLOCK_BYTES):
            if not column_count:  # no column: an empty line per row, counted by a column of nulls
                yield pa.table({"rows": pa.nulls(block.count(b"\n"))})
                continue
            # A block is whole rows (one COPY message each), parsed as one CSV block.
            options = pa_csv.ReadOptions(column_names=names, use_threads=False, block_size=len(block) + 1)
            try:
                yield pa_csv.read_csv(pa.BufferReader(block), read_options=options, parse_options=parse, convert_options=convert)
            except pa.ArrowInvalid as exc:
                raise ValueError(f"COPY gave rows that are not {column_count} CSV fields: {exc}") from None

    def table_text_columns(self, schema: str, table: str, columns: Sequence[str], where: str | None = None) -> Iterator[pa.Table]:
        """:meth:`text_columns` of a table's rows (``where``: a condition on them)."""
        return self.text_columns(table_query(schema, table, columns, where), len(columns))

    def close(self) -> None:
        if not self.conn.closed:
            if self.conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.ACTIVE:
                # A COPY abandoned half-way (a conversion failed): its suspended generator holds the
                # connection's lock, so a ROLLBACK would wait forever. Closing ends the transaction.
                self.conn.close()
                return
            try:
                self.conn.execute("ROLLBACK")
            finally:
                self.conn.close()

    def __enter__(self) -> SnapshotTransaction:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
