"""Incremental snapshot tests' shared pieces: the signal table, sending signals, replaying output.

Each test checks its output the same way: the change events of a table, applied in order onto an
empty table, must give the table as the server has it; and no row may be read twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import psycopg.rows

from sparkcdc.debezium.config import ConnectorConfig

SIGNAL_DDL = "CREATE TABLE {name}_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"

#: The key columns of the two tables every incremental snapshot test uses: ``<name>_a`` has one
#: key column, ``<name>_b`` a composite key.
KEYS = {"a": ("id",), "b": ("k1", "k2")}


def create_tables(db: psycopg.Connection, name: str, rows_a: int, rows_b: int) -> None:
    """The signal table and the two snapshotted tables, filled."""
    db.execute(SIGNAL_DDL.format(name=name))
    db.execute(f"CREATE TABLE {name}_a (id int PRIMARY KEY, v text)")
    db.execute(f"CREATE TABLE {name}_b (k1 int, k2 text, v int, PRIMARY KEY (k1, k2))")
    db.execute(f"INSERT INTO {name}_a SELECT g, 'a' || g FROM generate_series(1, {int(rows_a)}) g")
    db.execute(f"INSERT INTO {name}_b SELECT g % 5, 'k' || g, g FROM generate_series(1, {int(rows_b)}) g")


def send_signal(db: psycopg.Connection, name: str, signal_id: str, kind: str, data: dict[str, Any] | str | None = None) -> None:
    """A signal through the signal table (the ``source`` channel); ``data`` as JSON, or raw text."""
    text = data if data is None or isinstance(data, str) else json.dumps(data)
    db.execute(f"INSERT INTO {name}_signal VALUES (%s, %s, %s)", (signal_id, kind, text))


def replay(events: Iterable[dict[str, Any] | None], key_columns: Sequence[str]) -> dict[tuple, dict[str, Any]]:
    """One table's change events (payloads, None for a tombstone) applied in order: its rows by key."""
    rows: dict[tuple, dict[str, Any]] = {}
    for event in events:
        if event is None:
            continue
        if event["op"] == "d":
            rows.pop(tuple(event["before"][c] for c in key_columns), None)
        elif event["op"] in ("c", "u", "r"):
            rows[tuple(event["after"][c] for c in key_columns)] = event["after"]
    return rows


def table_rows(db: psycopg.Connection, table: str, key_columns: Sequence[str]) -> dict[tuple, dict[str, Any]]:
    cursor = db.cursor(row_factory=psycopg.rows.dict_row)
    return {tuple(r[c] for c in key_columns): r for r in cursor.execute(f"SELECT * FROM {table}").fetchall()}


def reads_twice(events: Iterable[dict[str, Any] | None], key_columns: Sequence[str]) -> list[tuple]:
    """Keys with more than one read (``op`` r) event."""
    seen: set[tuple] = set()
    twice: list[tuple] = []
    for event in events:
        if event is not None and event["op"] == "r":
            key = tuple(event["after"][c] for c in key_columns)
            if key in seen:
                twice.append(key)
            seen.add(key)
    return twice


def local_config(cluster: Any, name: str, tmp_path: Path, *, chunk_size: int = 7, **extra: str) -> ConnectorConfig:
    """The in-process connector (LocalConnector) on the two tables: no initial snapshot, signals
    through ``<name>_signal``, JSON without schemas (a record's value is the event itself)."""
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": cluster.port, "database.user": "postgres",
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": name, "publication.name": name,
        "table.include.list": rf"public\.{name}_a,public\.{name}_b", "publication.autocreate.mode": "filtered",
        "snapshot.mode": "no_data", "signal.data.collection": f"public.{name}_signal",
        "incremental.snapshot.chunk.size": str(chunk_size), "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false", "sparkcdc.state.location": str(tmp_path / "state"), **extra,
    })


def local_events(records: Iterable[Any], name: str, table: str) -> list[dict[str, Any] | None]:
    """The events (None: a tombstone) of table ``<name>_<table>`` among a LocalConnector's records."""
    topic = f"srv.public.{name}_{table}"
    return [None if r.value is None else json.loads(r.value) for r in records if r.topic == topic]
