"""Helpers for differential tests of incremental snapshots against real Debezium (see ``oracle.py``).

Debezium runs an ad-hoc incremental snapshot when an ``execute-snapshot`` signal reaches it. With the
``source`` channel the signal is a row INSERTed into the signal table, acted on when that INSERT comes
back through the WAL; the connector then writes its own watermark rows into the same table around
every chunk (see docs/incremental-snapshot-oracle-facts.md for what was observed). These helpers keep
that plumbing in one place so that tests only say which tables to snapshot and what to compare.

The signal table need not be in ``table.include.list``: with a ``filtered`` publication Debezium adds
it to the publication itself, and its rows (the signal and every watermark) come back as change
events on ``<prefix>.public.debezium_signal`` either way.

Usage::

    db.execute(SIGNAL_TABLE_DDL)
    props = debezium_properties(pg_cluster, slot=..., publication=..., tables=["public.a"],
                                **signal_properties(chunk_size=3), **{"snapshot.mode": "no_data"})
    with debezium_oracle.run(props) as session:
        session.wait_streaming()
        send_source_signal(db, "snap-1", "execute-snapshot", {"data-collections": ["public.a"]})
        records = wait_incremental_snapshot_done(session, ["public.a"], signal_id="snap-1")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import psycopg
from psycopg import sql

from .oracle import OracleRecord, OracleSession, OracleTimeout

__all__ = [
    "NOTIFICATION_TOPIC",
    "SIGNAL_TABLE",
    "SIGNAL_TABLE_DDL",
    "incremental_reads",
    "notifications",
    "send_source_signal",
    "signal_properties",
    "wait_incremental_snapshot_done",
]

#: The signal table every helper here assumes (``schema.table``, as ``signal.data.collection`` wants it).
SIGNAL_TABLE = "public.debezium_signal"

#: Debezium's documented signal table shape; the columns must be called ``id``, ``type`` and ``data``.
SIGNAL_TABLE_DDL = (
    "CREATE TABLE IF NOT EXISTS public.debezium_signal "
    "(id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"
)

#: Where the ``sink`` notification channel sends notifications in these tests.
NOTIFICATION_TOPIC = "test_server.notifications"


def signal_properties(
    *,
    chunk_size: int = 3,
    signal_table: str = SIGNAL_TABLE,
    channels: str = "source",
    notification_topic: str | None = NOTIFICATION_TOPIC,
    watermarking: str | None = None,
) -> dict[str, str]:
    """The extra Debezium properties for signal-triggered incremental snapshots.

    A small ``chunk_size`` makes even a ten-row table take several chunks (several watermark
    windows), which is where implementations differ. With ``notification_topic`` the ``sink``
    notification channel is enabled: the embedded engine then hands notifications to the consumer
    like any other record, which gives :func:`wait_incremental_snapshot_done` a real end condition.
    ``watermarking`` is ``incremental.snapshot.watermarking.strategy`` (``insert_insert`` by default,
    or ``insert_delete``).
    """
    props = {
        "signal.enabled.channels": channels,
        "signal.data.collection": signal_table,
        "incremental.snapshot.chunk.size": str(chunk_size),
    }
    if notification_topic is not None:
        props["notification.enabled.channels"] = "sink"
        props["notification.sink.topic.name"] = notification_topic
    if watermarking is not None:
        props["incremental.snapshot.watermarking.strategy"] = watermarking
    return props


def send_source_signal(
    conn: psycopg.Connection, signal_id: str, signal_type: str, data: Mapping[str, Any] | str | None = None,
    *, signal_table: str = SIGNAL_TABLE,
) -> None:
    """INSERT a signal row (committed at once: Debezium acts on it when the INSERT arrives through the WAL).

    ``data`` is serialized to JSON unless it is already a string (a string lets a test send malformed
    JSON on purpose); ``None`` leaves the column NULL.
    """
    schema, table = signal_table.split(".", 1)
    text = data if isinstance(data, str) or data is None else json.dumps(data)
    statement = sql.SQL("INSERT INTO {} (id, type, data) VALUES (%s, %s, %s)").format(sql.Identifier(schema, table))
    with conn.transaction():
        conn.execute(statement, (signal_id, signal_type, text))


def incremental_reads(records: Iterable[OracleRecord], table: str | None = None) -> list[OracleRecord]:
    """The read events of incremental snapshots (``op`` ``r`` with ``source.snapshot == "incremental"``),
    optionally of one ``schema.table`` only, in Debezium's order."""
    found = []
    for record in records:
        payload = record.value_payload
        if not isinstance(payload, dict) or payload.get("op") != "r":
            continue
        source = payload.get("source") or {}
        if source.get("snapshot") != "incremental":
            continue
        if table is not None and f"{source.get('schema')}.{source.get('table')}" != table:
            continue
        found.append(record)
    return found


def notifications(records: Iterable[OracleRecord], topic: str = NOTIFICATION_TOPIC) -> list[dict[str, Any]]:
    """The payloads of the notifications that reached the consumer through the ``sink`` channel."""
    return [r.value_payload for r in records if r.topic == topic and r.value is not None]


def _completed(records: list[OracleRecord], topic: str, signal_id: str | None) -> bool:
    # Incremental-snapshot notifications carry the execute-snapshot signal's id as their "id";
    # "Initial Snapshot" notifications (also sent for blocking snapshots) carry random UUIDs.
    return any(
        n.get("aggregate_type") == "Incremental Snapshot"
        and n.get("type") == "COMPLETED"
        and (signal_id is None or n.get("id") == signal_id)
        for n in notifications(records, topic)
    )


def wait_incremental_snapshot_done(
    session: OracleSession,
    tables: Iterable[str],
    timeout: float = 60,
    *,
    signal_id: str | None = None,
    expected_rows: Mapping[str, int] | None = None,
    notification_topic: str | None = NOTIFICATION_TOPIC,
) -> list[OracleRecord]:
    """Wait until the incremental snapshot of ``tables`` (``schema.table``) is over; returns all records.

    Over means: the ``COMPLETED`` notification of the ``Incremental Snapshot`` aggregate arrived
    (when the ``sink`` channel is on, see :func:`signal_properties`; with ``signal_id`` only the
    one of that execute-snapshot signal counts, so a session can run several snapshots), and, when
    ``expected_rows`` is given, at least that many read events per table. Debezium sends COMPLETED
    after the last chunk's read events, so they are all there when it arrives. Without notifications
    ``expected_rows`` is the only condition, so it is then required. Conditions only, no sleeps.
    """
    wanted = list(tables)
    if notification_topic is None and expected_rows is None:
        raise ValueError("without notifications, pass expected_rows to know when the snapshot is complete")
    counts = dict(expected_rows or {})

    def done(records: list[OracleRecord]) -> bool:
        if notification_topic is not None and not _completed(records, notification_topic, signal_id):
            return False
        return all(len(incremental_reads(records, table)) >= counts.get(table, 0) for table in wanted)

    try:
        return session.wait_for(done, timeout=timeout)
    except OracleTimeout as exc:
        records = session.records
        seen = {table: len(incremental_reads(records, table)) for table in wanted}
        raise OracleTimeout(f"incremental snapshot of {wanted} not done: read events so far {seen}; {exc}") from None
