"""The incremental-snapshot oracle works: real Debezium snapshots two tables on a signal-table request.

This pins the basics that docs/incremental-snapshot-oracle-facts.md records from Debezium 3.6.3, so a
Debezium upgrade that changes them fails here first: read events are ``op: "r"`` with
``source.snapshot: "incremental"`` and no ``txId``/``lsn``, in key order, chunk by chunk between the
connector's own watermark rows, which (like the signal row) are emitted as change events of the
signal table even though it is not in ``table.include.list``.
"""

from __future__ import annotations

import json

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster

from .incremental_oracle import (
    SIGNAL_TABLE_DDL,
    incremental_reads,
    notifications,
    send_source_signal,
    signal_properties,
    wait_incremental_snapshot_done,
)
from .oracle import DebeziumOracle, OracleRecord, debezium_properties

PREFIX = "test_server"
SIGNAL_TOPIC = f"{PREFIX}.public.debezium_signal"


def _signal_rows(records: list[OracleRecord]) -> list[dict[str, str]]:
    """``after`` of every INSERT into the signal table that Debezium emitted, in order."""
    return [r.value_payload["after"] for r in records if r.topic == SIGNAL_TOPIC and r.op == "c"]


def test_incremental_snapshot_of_two_tables_through_the_signal_table(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    single, composite = f"{unique_name}_a", f"{unique_name}_b"
    db.execute(SIGNAL_TABLE_DDL)
    db.execute(f"CREATE TABLE {single} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {single} SELECT g, 'v' || g FROM generate_series(1, 10) g")
    db.execute(f"CREATE TABLE {composite} (k1 int, k2 text, v int, PRIMARY KEY (k1, k2))")
    db.execute(f"INSERT INTO {composite} VALUES (1,'x',1), (1,'y',2), (2,'a',3), (2,'b',4), (3,'z',5), (10,'q',6), (4,'m',7)")
    tables = [f"public.{single}", f"public.{composite}"]
    props = debezium_properties(
        pg_cluster,
        slot=unique_name,
        publication=unique_name,
        tables=tables,  # the signal table is not listed: Debezium adds it to the publication itself
        **signal_properties(chunk_size=3),
        **{"snapshot.mode": "no_data"},
    )

    with debezium_oracle.run(props) as session:
        session.wait_streaming()
        assert incremental_reads(session.records) == []
        send_source_signal(db, unique_name, "execute-snapshot", {"data-collections": tables, "type": "incremental"})
        records = wait_incremental_snapshot_done(
            session, tables, signal_id=unique_name, expected_rows={tables[0]: 10, tables[1]: 7}
        )
        # COMPLETED is sent before the last window's close event and one more (empty) window
        # open/close pair reach us: wait for those too (the signal row + 8 windows).
        records = session.wait_for(lambda rs: len(_signal_rows(rs)) >= 1 + 2 * 8)

    reads_a, reads_b = incremental_reads(records, tables[0]), incremental_reads(records, tables[1])
    assert [r.key_payload for r in reads_a] == [{"id": i} for i in range(1, 11)]
    assert [r.key_payload for r in reads_b] == [
        {"k1": k1, "k2": k2} for k1, k2 in [(1, "x"), (1, "y"), (2, "a"), (2, "b"), (3, "z"), (4, "m"), (10, "q")]
    ]
    for record in reads_a + reads_b:
        payload = record.value_payload
        assert payload["op"] == "r" and payload["before"] is None and payload["transaction"] is None
        source = payload["source"]
        assert source["snapshot"] == "incremental"
        assert source["txId"] is None and source["lsn"] is None and source["xmin"] is None
    assert reads_a[0].value_payload["after"] == {"id": 1, "v": "v1"}
    assert all(r.topic == f"{PREFIX}.public.{single}" for r in reads_a)

    # The signal row and the watermark rows come back as change events of the signal table:
    # 4 + 3 non-empty chunks, plus one last window in which nothing is left to read.
    rows = _signal_rows(records)
    assert rows[0] == {"id": unique_name, "type": "execute-snapshot", "data": json.dumps({"data-collections": tables, "type": "incremental"})}
    windows = rows[1:]
    assert [row["type"] for row in windows] == ["snapshot-window-open", "snapshot-window-close"] * 8
    for opening, closing in zip(windows[::2], windows[1::2], strict=True):
        chunk_id = opening["id"].removesuffix("-open")
        assert closing["id"] == f"{chunk_id}-close"
        assert list(json.loads(opening["data"])) == ["openWindowTimestamp"]
        assert list(json.loads(closing["data"])) == ["openWindowTimestamp", "closeWindowTimestamp"]

    # Each chunk's read events come right before the close-window event that released them (only
    # notifications in between) and carry that event's "sequence".
    pending: list[OracleRecord] = []
    released = 0
    for record in records:
        if record.topic == SIGNAL_TOPIC:
            payload = record.value_payload
            if payload["op"] == "c" and payload["after"]["type"] == "snapshot-window-close":
                assert {r.value_payload["source"]["sequence"] for r in pending} <= {payload["source"]["sequence"]}
                released += len(pending)
            else:
                assert pending == [], f"read events not followed by their close-window event: {pending}"
            pending = []
        elif record.op == "r":
            pending.append(record)
    assert pending == [] and released == 17

    mine = [n for n in notifications(records) if n["id"] == unique_name]
    assert [n["type"] for n in mine] == ["STARTED"] + ["IN_PROGRESS"] * 4 + ["TABLE_SCAN_COMPLETED"] + ["IN_PROGRESS"] * 3 + ["TABLE_SCAN_COMPLETED", "COMPLETED"]
    assert {n["aggregate_type"] for n in mine} == {"Incremental Snapshot"}
    assert mine[0]["additional_data"] == {"connector_name": PREFIX, "data_collections": ",".join(tables)}
    scans = [n["additional_data"] for n in mine if n["type"] == "TABLE_SCAN_COMPLETED"]
    assert [(s["scanned_collection"], s["total_rows_scanned"], s["status"]) for s in scans] == [
        (tables[0], "10", "SUCCEEDED"),
        (tables[1], "7", "SUCCEEDED"),
    ]
