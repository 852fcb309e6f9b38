"""Capturing pgoutput bytes live from the server, for decoder tests.

``pg_logical_slot_get_binary_changes`` returns exactly the bytes the walsender would put in XLogData
frames, so decoder tests run on what the server really sends, never on hand-written bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg

from sparkcdc.lsn import parse_lsn
from sparkcdc.pgoutput import Decoder, PgOutputMessage
from sparkcdc.postgres import LogicalReplicationReader, WalMessage, create_publication, drop_publication, drop_slot

from .waiting import ConditionTimeout, wait_until


def wait_for_wal_flush(conn: psycopg.Connection, timeout: float = 10.0, *, transaction_open: bool = False) -> None:
    """Wait until all WAL inserted so far is flushed.

    Decoding reads only flushed WAL, and neither aborts nor non-transactional logical messages
    flush it; the WAL writer does so within ``wal_writer_delay``. While a transaction is still open
    the WAL writer flushes only completed pages, and a record crossing the flush point would make
    decoding wait for it, so then force the flush with a WAL switch.
    """
    target = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])  # type: ignore[index]
    if transaction_open:
        conn.execute("SELECT pg_switch_wal()")

    def flushed() -> bool:
        if parse_lsn(conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0]) >= target:  # type: ignore[index]
            return True
        if conn.autocommit and not transaction_open:
            # A loaded machine can leave the WAL writer behind for seconds: a committed
            # transaction with an xid flushes the WAL up to its commit record, past the target.
            conn.execute("SELECT pg_current_xact_id()")
        return False

    wait_until(flushed, timeout=timeout, what="WAL flush")


@dataclass
class Captured:
    lsn: str
    xid: int
    data: bytes


class SlotCapture:
    """A logical slot plus its publication, and the pgoutput options to read it with."""

    def __init__(
        self,
        conn: psycopg.Connection,
        name: str,
        *,
        proto_version: int = 1,
        streaming: bool = False,
        binary: bool = False,
        two_phase: bool = False,
        messages: bool = True,
        work_mem: str | None = None,
    ) -> None:
        self.conn = conn
        self.slot = name
        self.publication = name
        self.proto_version = proto_version
        self.streaming = streaming
        self.binary = binary
        self.two_phase = two_phase
        self.messages = messages
        self.work_mem = work_mem

    def options(self) -> list[str]:
        opts = ["proto_version", str(self.proto_version), "publication_names", self.publication]
        opts += ["messages", "true" if self.messages else "false", "binary", "true" if self.binary else "false"]
        if self.proto_version >= 2:
            opts += ["streaming", "on" if self.streaming else "off"]
        if self.two_phase:
            opts += ["two_phase", "on"]
        return opts

    def changes(self, *, transaction_open: bool = False) -> list[Captured]:
        """Consume everything decodable so far from the slot, as raw pgoutput messages.

        ``transaction_open``: some transaction is still in progress (see :func:`wait_for_wal_flush`).
        """
        wait_for_wal_flush(self.conn, transaction_open=transaction_open)
        with self.conn.cursor() as cur:
            if self.work_mem:
                cur.execute(f"SET logical_decoding_work_mem = '{self.work_mem}'")
            cur.execute(
                "SELECT lsn::text, xid::text::bigint, data FROM pg_logical_slot_get_binary_changes(%s, NULL, NULL, VARIADIC %s::text[])",
                (self.slot, self.options()),
            )
            rows = cur.fetchall()
            if self.work_mem:
                cur.execute("RESET logical_decoding_work_mem")
        return [Captured(row[0], row[1], bytes(row[2])) for row in rows]

    def decoded(self) -> list[PgOutputMessage]:
        decoder = Decoder(self.proto_version)
        return [decoder.decode(change.data) for change in self.changes()]


@contextmanager
def slot_capture(
    conn: psycopg.Connection,
    name: str,
    tables: Sequence[tuple[str, str]] | None,
    **options: object,
) -> Iterator[SlotCapture]:
    """Create publication + slot (``tables=None``: all tables), drop both afterwards."""
    create_publication(conn, name, tables=tables)
    two_phase = bool(options.get("two_phase", False))
    conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput', false, %s)", (name, two_phase))
    try:
        yield SlotCapture(conn, name, **options)  # type: ignore[arg-type]
    finally:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        drop_slot(conn, name, wait=30)  # a reader that just closed leaves its walsender a moment to go
        drop_publication(conn, name)


def of_type(messages: Sequence[PgOutputMessage], kind: type) -> list:
    return [m for m in messages if isinstance(m, kind)]


def kinds(messages: Sequence[PgOutputMessage], keep: Callable[[PgOutputMessage], bool] = lambda m: True) -> list[str]:
    return [type(m).__name__ for m in messages if keep(m)]


def read_until(
    reader: LogicalReplicationReader,
    stop: Callable[[PgOutputMessage], bool],
    *,
    timeout: float = 30.0,
) -> list[PgOutputMessage]:
    """Read decoded messages from a live walsender until ``stop(message)`` holds (inclusive)."""
    deadline = time.monotonic() + timeout
    collected: list[PgOutputMessage] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ConditionTimeout(f"timed out after {timeout}s; last messages: {collected[-5:]!r}")
        item = reader.read(timeout=remaining)
        if isinstance(item, WalMessage):
            collected.append(item.message)
            if stop(item.message):
                return collected
        elif item is not None:
            raise AssertionError(f"unexpected {item!r}")
