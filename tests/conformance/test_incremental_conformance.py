"""Incremental snapshots against real Debezium 3.6.3: one signal, both connectors, a concurrent writer.

The same signal row (the signal table is shared; each connector ignores the other's watermark
windows, and both stream every row of the table) asks both connectors for an incremental snapshot
of two tables of a few thousand rows while a writer inserts, updates and deletes in them. Then:

* the read events have Debezium's shape field for field: for every key both sides read with the
  same row, key, value (schema and payload) and headers are equal, wall-clock fields and
  ``source.sequence`` aside (each connector releases its chunks at its own close watermark);
* the signal table's change events (the signal, and both connectors' watermark rows) are the same
  records in the same order on both sides;
* replaying each side's records in order onto empty tables gives the same tables, equal to the source.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster

from ..support.waiting import wait_until
from .differential import assert_same_records, by_topic, capture_both, json_differences, normalize
from .incremental_oracle import incremental_reads, send_source_signal, signal_properties, wait_incremental_snapshot_done
from .oracle import DebeziumOracle, OracleRecord

PREFIX = "test_server"


def _replay(records: list[OracleRecord], topic: str) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for record in records:
        if record.topic != topic or record.value is None:
            continue
        payload = record.value_payload
        key = json.dumps(record.key_payload, sort_keys=True)
        if payload["op"] == "d":
            rows.pop(key, None)
        elif payload["op"] in ("c", "u", "r"):
            rows[key] = payload["after"]
    return rows


def _source_rows(db: psycopg.Connection, table: str, keys: tuple[str, ...]) -> dict[str, Any]:
    cursor = db.cursor(row_factory=psycopg.rows.dict_row)
    return {json.dumps({k: row[k] for k in keys}, sort_keys=True): row for row in cursor.execute(f"SELECT * FROM {table}")}


def _read_shape(record: OracleRecord) -> dict[str, Any]:
    normalized = normalize(record)
    source = normalized["value"]["payload"]["source"]
    for field in ("ts_ms", "ts_us", "ts_ns", "sequence"):
        source[field] = "<emission>"
    return normalized


def test_incremental_snapshot_matches_debezium_under_a_concurrent_writer(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    single, composite, signal = f"{unique_name}_a", f"{unique_name}_b", f"{unique_name}_signal"
    db.execute(f"CREATE TABLE {signal} (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    db.execute(f"CREATE TABLE {single} (id int PRIMARY KEY, v text, n bigint)")
    db.execute(f"INSERT INTO {single} SELECT g, 'v' || g, g * 7 FROM generate_series(1, 3000) g")
    db.execute(f"CREATE TABLE {composite} (k1 int, k2 text, v int, PRIMARY KEY (k1, k2))")
    db.execute(f"INSERT INTO {composite} SELECT g % 17, 'k' || g, g FROM generate_series(1, 2000) g")
    tables = [f"public.{single}", f"public.{composite}"]
    overrides = signal_properties(chunk_size=400, signal_table=f"public.{signal}")
    overrides["snapshot.mode"] = "no_data"
    stop = threading.Event()

    def writer() -> None:
        with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
            i = 0
            while not stop.wait(0.005):  # paced: the snapshot and the stream overlap for several chunks
                i += 1
                conn.execute(f"UPDATE {single} SET v = v || '!' WHERE id = %s", (i * 37 % 3100 + 1,))
                conn.execute(f"DELETE FROM {single} WHERE id = %s", (i * 101 % 3100 + 1,))
                conn.execute(f"INSERT INTO {single} VALUES (%s, 'w', 1) ON CONFLICT (id) DO UPDATE SET v = 'again'", (i * 53 % 3100 + 1,))
                conn.execute(f"UPDATE {composite} SET v = v + 1 WHERE k1 = %s AND k2 = %s", (i % 17, f"k{i * 17 % 2000 + 1}"))
                conn.execute(f"DELETE FROM {composite} WHERE k1 = %s AND k2 = %s", ((i * 3) % 17, f"k{i * 29 % 2000 + 1}"))

    with capture_both(debezium_oracle, pg_cluster, db, unique_name, tables, **overrides) as capture:
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            send_source_signal(db, "snapshot-1", "execute-snapshot", {"data-collections": tables}, signal_table=f"public.{signal}")
            wait_incremental_snapshot_done(capture.debezium, tables, timeout=180, signal_id="snapshot-1")
            wait_until(lambda: capture.ours.connector._offset is not None and "incremental" not in capture.ours.connector._offset
                       and incremental_reads(capture.ours.records), timeout=180, what="sparkcdc's incremental snapshot")
        finally:
            stop.set()
            thread.join(30)
        theirs, ours = capture.finish()

    notification_topic = overrides["notification.sink.topic.name"]
    theirs = [r for r in theirs if r.topic != notification_topic]
    for table, keys in ((single, ("id",)), (composite, ("k1", "k2"))):
        topic = f"{PREFIX}.public.{table}"
        expected = _source_rows(db, table, keys)
        assert _replay(theirs, topic) == expected, f"Debezium's replay of {table} differs from the table"
        assert _replay(ours, topic) == expected, f"sparkcdc's replay of {table} differs from the table"

        their_reads = {json.dumps(r.key_payload, sort_keys=True): r for r in incremental_reads(theirs, f"public.{table}")}
        our_reads = {}
        for record in incremental_reads(ours, f"public.{table}"):
            key = json.dumps(record.key_payload, sort_keys=True)
            assert key not in our_reads, f"sparkcdc read {key} of {table} twice"
            our_reads[key] = record
        same_row = [k for k in their_reads.keys() & our_reads.keys()
                    if their_reads[k].value_payload["after"] == our_reads[k].value_payload["after"]]
        assert len(same_row) > len(expected) // 2, f"{table}: only {len(same_row)} rows read alike by both"
        for key in same_row:
            differences = json_differences(_read_shape(their_reads[key]), _read_shape(our_reads[key]))
            assert not differences, f"{table} read of {key}:\n" + "\n".join(differences)

    signal_topic = f"{PREFIX}.public.{signal}"
    assert_same_records(by_topic(theirs).get(signal_topic, []), by_topic(ours).get(signal_topic, []))
    assert any(r.value_payload["after"]["type"] == "snapshot-window-close" for r in by_topic(ours)[signal_topic] if r.value)
