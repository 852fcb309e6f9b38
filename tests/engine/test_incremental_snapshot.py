"""Incremental snapshots through the one driver and reader (LocalConnector), against the real server.

The signal arrives through the signal table (the ``source`` channel), the chunks are read in
windows between watermarks (or, read-only, by snapshot visibility) while a writer changes the same
rows, and the output replayed in order must equal the table.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.connector import LocalConnector

from ..support.waiting import wait_until


def _config(pg_cluster, name: str, tmp_path: Path, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": pg_cluster.port, "database.user": "postgres",
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": name, "publication.name": name,
        "table.include.list": rf"public\.{name}_a,public\.{name}_b", "publication.autocreate.mode": "filtered",
        "snapshot.mode": "no_data", "signal.data.collection": f"public.{name}_signal",
        "incremental.snapshot.chunk.size": "7", "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false", "sparkcdc.state.location": str(tmp_path / "state"), **extra,
    })


def _replay(records, topic_suffix: str, key_columns: tuple[str, ...]) -> dict:
    """Records of one table applied in order: the table's rows by key."""
    rows: dict = {}
    for record in records:
        if not record.topic.endswith(topic_suffix) or record.value is None:
            continue
        value = json.loads(record.value)
        key = tuple(json.loads(record.key)[c] for c in key_columns)
        if value["op"] == "d":
            rows.pop(key, None)
        elif value["op"] in ("c", "u", "r"):
            rows[key] = value["after"]
    return rows


def _table(db, name: str, key_columns: tuple[str, ...]) -> dict:
    cursor = db.cursor(row_factory=psycopg.rows.dict_row)
    return {tuple(r[c] for c in key_columns): r for r in cursor.execute(f"SELECT * FROM {name}").fetchall()}


def _drain(connector: LocalConnector, out: list, until) -> None:
    wait_until(lambda: out.extend(connector.poll(0.2)) or until(out), timeout=120, what="the incremental snapshot")


@pytest.mark.parametrize("extra", [{}, {"incremental.snapshot.watermarking.strategy": "insert_delete"}, {"read.only": "true"}],
                         ids=["insert_insert", "insert_delete", "read_only"])
def test_incremental_snapshot_under_a_concurrent_writer(db, pg_cluster, tables, tmp_path, extra) -> None:
    name = tables
    config = _config(pg_cluster, name, tmp_path, **extra)
    stop = threading.Event()

    def writer() -> None:
        with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
            i = 0
            while not stop.wait(0.01):  # paced: a few hundred changes a second while chunks are read
                i += 1
                conn.execute(f"UPDATE {name}_a SET v = v || '!' WHERE id = %s", (i % 45 + 1,))
                conn.execute(f"DELETE FROM {name}_a WHERE id = %s", ((i * 7) % 45 + 1,))
                conn.execute(f"INSERT INTO {name}_a VALUES (%s, 'w') ON CONFLICT (id) DO UPDATE SET v = 'w2'", ((i * 3) % 50 + 1,))
                conn.execute(f"UPDATE {name}_b SET v = v + 1 WHERE k1 = %s", (i % 5,))

    out: list = []
    with LocalConnector(config) as connector:
        connector.poll(0.5)
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        db.execute(f"INSERT INTO {name}_signal VALUES ('sig-1', 'execute-snapshot', %s)",
                   (json.dumps({"data-collections": [f"public.{name}_a", f"public.{name}_b"]}),))

        def reads_done(records) -> bool:
            return connector.planner.incremental is not None and any(
                r.topic.endswith(f"{name}_b") and r.value is not None and json.loads(r.value)["op"] == "r" for r in records
            ) and connector._offset is not None and connector._offset.get("incremental") is None

        _drain(connector, out, reads_done)
        stop.set()
        thread.join()
        db.execute("SELECT pg_logical_emit_message(false, 'test-end', '')")
        end_lsn = db.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        _drain(connector, out, lambda _: connector.planner.parse(connector._offset).lsn >= _lsn(end_lsn))

    reads = [json.loads(r.value) for r in out if r.value is not None and json.loads(r.value)["op"] == "r"]
    assert reads and all(r["source"]["snapshot"] == "incremental" for r in reads)
    assert _replay(out, f"{name}_a", ("id",)) == _table(db, f"{name}_a", ("id",))
    assert _replay(out, f"{name}_b", ("k1", "k2")) == _table(db, f"{name}_b", ("k1", "k2"))
    read_keys = [(r["source"]["table"], json.dumps(r["after"])) for r in reads]
    assert len(read_keys) == len(set(read_keys)), "a row was read twice"
    if extra.get("read.only") == "true":
        watermarks = db.execute(f"SELECT count(*) FROM {name}_signal WHERE type LIKE 'snapshot-window-%%'").fetchone()[0]
        assert watermarks == 0


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)
