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
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.work import read_work
from sparkcdc.postgres import get_slot

from ..support.incremental import KEYS, local_config, local_events, replay, send_signal, table_rows
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


def _writes(db, tables: list[str]) -> dict[str, tuple[int, int, int]]:
    db.execute("SELECT pg_stat_clear_snapshot()")
    rows = db.execute(
        "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = ANY(%s)", (tables,)
    ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_read_only_snapshot_with_a_select_and_replication_role_writes_nothing(db, pg_cluster, tables, tmp_path) -> None:
    name = tables
    role = f"{name}_ro"
    db.execute(f'CREATE ROLE "{role}" LOGIN REPLICATION')
    db.execute(f'GRANT SELECT ON {name}_a, {name}_b, {name}_signal TO "{role}"')
    db.execute(f'CREATE PUBLICATION "{name}" FOR TABLE {name}_a, {name}_b, {name}_signal')
    captured = [f"{name}_a", f"{name}_b", f"{name}_signal"]
    db.execute(f"INSERT INTO {name}_signal VALUES ('before', 'log', '{{\"message\": \"x\"}}')")  # the operator's own write
    config = _config(pg_cluster, name, tmp_path, **{"read.only": "true", "database.user": role,
                                                     "publication.autocreate.mode": "disabled"})
    out: list = []
    try:
        with LocalConnector(config) as connector:
            connector.poll(0.5)
            wait_until(lambda: _writes(db, captured).get(f"{name}_signal", (0,))[0] == 1, timeout=30, what="statistics")
            before = _writes(db, captured)
            db.execute(f"INSERT INTO {name}_signal VALUES ('sig-ro', 'execute-snapshot', %s)",
                       (json.dumps({"data-collections": [f"public.{name}_a", f"public.{name}_b"]}),))
            _drain(connector, out, lambda records: sum(
                1 for r in records if r.value is not None and json.loads(r.value)["op"] == "r") == 73)
    finally:
        db.execute(f'DROP OWNED BY "{role}"')
        db.execute(f'DROP ROLE "{role}"')
    reads = [json.loads(r.value) for r in out if r.value is not None and json.loads(r.value)["op"] == "r"]
    assert {r["source"]["table"] for r in reads} == {f"{name}_a", f"{name}_b"}
    # The connector's sessions are gone (their statistics flushed at exit): only the operator's signal row was written.
    after = wait_until(lambda: (w := _writes(db, captured))[f"{name}_signal"][0] == before[f"{name}_signal"][0] + 1 and w,
                       timeout=30, what="statistics of the operator's signal")
    assert {t: after[t] for t in (f"{name}_a", f"{name}_b")} == {t: before[t] for t in (f"{name}_a", f"{name}_b")}
    assert after[f"{name}_signal"][1:] == before[f"{name}_signal"][1:]


def test_blocking_snapshot_while_streaming(db, pg_cluster, tables, tmp_path) -> None:
    """Streaming stops at the blocking snapshot's consistent point and goes on from it with the same
    slot: replayed in order, the output equals the tables, and the rows say ``blocking`` in the
    ``snapshot`` column (their JSON carries Debezium's snapshot markers)."""
    name = tables
    config = _config(pg_cluster, name, tmp_path, **{"sparkcdc.snapshot.chunk.rows": "10"})
    stop = threading.Event()

    def writer() -> None:
        with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
            i = 0
            while not stop.wait(0.01):
                i += 1
                conn.execute(f"UPDATE {name}_a SET v = v || '!' WHERE id = %s", (i % 45 + 1,))
                conn.execute(f"DELETE FROM {name}_a WHERE id = %s", ((i * 7) % 45 + 1,))
                conn.execute(f"INSERT INTO {name}_a VALUES (%s, 'w') ON CONFLICT (id) DO UPDATE SET v = 'w2'", ((i * 3) % 50 + 1,))

    out: list = []
    with LocalConnector(config) as connector:
        slot_before = get_slot(db, name)
        connector.poll(0.5)
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            db.execute(f"INSERT INTO {name}_signal VALUES ('blk-1', 'execute-snapshot', %s)",
                       (json.dumps({"data-collections": [f"public.{name}_a", f"public.{name}_b"], "type": "blocking",
                                    "additional-conditions": [{"data-collection": f"public.{name}_b",
                                                               "filter": f"SELECT * FROM {name}_b WHERE k1 = 3"}]}),))
            _drain(connector, out, lambda records: any(r.snapshot == "blocking" for r in records) and not connector.snapshot_pending)
            wait_until(lambda: out.extend(connector.poll(0.2)) or sum(1 for r in out if r.op == "c") > 20, timeout=60,
                       what="streaming after the blocking snapshot")
        finally:
            stop.set()
            thread.join()
        db.execute("SELECT pg_logical_emit_message(false, 'test-end', '')")
        end_lsn = db.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        _drain(connector, out, lambda _: connector.planner.parse(connector._offset).lsn >= _lsn(end_lsn))
        assert get_slot(db, name).slot_name == slot_before.slot_name  # the same slot all along

    blocking = [r for r in out if r.snapshot == "blocking"]
    markers = [json.loads(r.value)["source"]["snapshot"] for r in blocking]
    assert markers[0] == "first" and markers[-1] == "last" and set(markers) <= {
        "first", "true", "first_in_data_collection", "last_in_data_collection", "last"}
    b_rows = [json.loads(r.value)["after"] for r in blocking if r.topic.endswith(f"{name}_b")]
    assert b_rows and all(row["k1"] == 3 for row in b_rows)  # the additional condition's SELECT
    assert _replay(out, f"{name}_a", ("id",)) == _table(db, f"{name}_a", ("id",))
    # No overlap: every change streamed before the snapshot committed before its point, every one after at or after it.
    point = blocking[0].commit_lsn
    first, last = out.index(blocking[0]), out.index(blocking[-1])
    streamed = [r for r in out if r.op in ("c", "u", "d") and r.snapshot != "blocking"]
    assert all(r.commit_lsn < point for r in streamed if out.index(r) < first)
    assert all(r.commit_lsn >= point for r in streamed if out.index(r) > last)
    assert any(out.index(r) > last for r in streamed) and any(out.index(r) < first for r in streamed)


def test_blocking_snapshot_in_sparks_call_order(db, pg_cluster, tables, tmp_path) -> None:
    """Spark commits batch N-1 after it has planned batch N (MicroBatchExecution), not before as
    LocalConnector does: the commit of the batch before a blocking snapshot comes after the snapshot
    was exported, and must not close it. The snapshot batch then reads the snapshot taken at the
    point its offset names, not a new one taken later (which would stream changes it already holds)."""
    name = tables
    config = _config(pg_cluster, name, tmp_path)
    planner = ConnectorPlanner(config)
    try:
        offset = planner.initial_offset()
        db.execute(f"INSERT INTO {name}_signal VALUES ('blk-spark', 'execute-snapshot', %s)",
                   (json.dumps({"data-collections": [f"public.{name}_a"], "type": "blocking"}),))
        previous, planned, blocking = None, None, []
        for _ in range(10):
            end = planner.latest_offset(offset)
            if end == offset:
                continue  # Spark constructs no batch, and commits nothing
            if previous is not None:
                planner.commit(previous)  # the batch before, committed once this one is planned
            if end.get("phase") == "snapshot":
                planned = end["snapshot"]["lsn"]
            records = [r for piece in planner.partitions(offset, end)
                       for batch in read_work(config, piece, run_id=planner.run_id) for r in batch.records()]
            blocking += [r for r in records if r.snapshot == "blocking"]
            previous, offset = end, end
            if blocking:
                break
        planner.commit(previous)
    finally:
        planner.stop()
    assert planned is not None and len(blocking) == 40
    assert {r.commit_lsn for r in blocking} == {planned}


def test_blocking_snapshot_taken_again_after_the_driver_died_does_not_overlap(db, pg_cluster, tables, tmp_path) -> None:
    """The driver that planned a blocking snapshot dies before the snapshot batch runs; the next one
    takes the snapshot again, at a later point of the same slot. The changes between the two points
    are in the new snapshot, so the stream after it must start at the new point, not the planned one."""
    name = tables
    config = _config(pg_cluster, name, tmp_path)
    first = ConnectorPlanner(config)
    try:
        offset = first.initial_offset()
        db.execute(f"INSERT INTO {name}_signal VALUES ('blk-dead', 'execute-snapshot', %s)",
                   (json.dumps({"data-collections": [f"public.{name}_a"], "type": "blocking"}),))
        for _ in range(10):
            end = first.latest_offset(offset)
            if end == offset:
                continue
            for piece in first.partitions(offset, end):
                for _batch in read_work(config, piece, run_id=first.run_id):
                    pass
            first.commit(end)
            offset = end
            if end.get("phase") == "snapshot":
                break
        assert offset.get("phase") == "snapshot"
    finally:
        first.stop()  # the driver dies: its exported snapshot is gone
    db.execute(f"UPDATE {name}_a SET v = 'between' WHERE id <= 5")  # after the planned point, before the new one
    second = ConnectorPlanner(config)
    out = []
    try:
        end = second.latest_offset(offset)
        for piece in second.partitions(offset, end):
            out += [r for batch in read_work(config, piece, run_id=second.run_id) for r in batch.records()]
        second.commit(end)
        offset = end
        db.execute(f"UPDATE {name}_a SET v = 'after' WHERE id = 6")
        end = second.latest_offset(offset)
        for piece in second.partitions(offset, end):
            out += [r for batch in read_work(config, piece, run_id=second.run_id) for r in batch.records()]
        second.commit(end)
    finally:
        second.stop()
    snapshot = [r for r in out if r.snapshot == "blocking"]
    streamed = [r for r in out if r.op in ("c", "u", "d")]
    assert len(snapshot) == 40 and {json.loads(r.value)["after"]["v"] for r in snapshot if json.loads(r.key)["id"] <= 5} == {"between"}
    assert [json.loads(r.value)["after"]["v"] for r in streamed if r.topic.endswith(f"{name}_a")] == ["after"]


def test_chunks_wait_for_a_backlog_beyond_the_batch_cap(db, pg_cluster, tables, tmp_path) -> None:
    """A chunk's window is written at the end of the WAL and its batch must reach past it: planned
    while a backlog larger than ``sparkcdc.max.batch.wal.bytes`` waits, that batch would take the
    whole backlog at once. Chunks are planned once the stream has caught up to within one batch."""
    name = tables
    cap = 32768
    config = local_config(pg_cluster, name, tmp_path, **{"sparkcdc.max.batch.wal.bytes": str(cap)})
    batches: list[tuple[int, int]] = []
    with LocalConnector(config) as connector:
        plan = connector.planner.partitions

        def recorded(start, end):  # every batch's WAL range, as the planner hands it out
            batches.append((start["lsn"], end["lsn"]))
            return plan(start, end)

        connector.planner.partitions = recorded  # type: ignore[method-assign]
        connector.poll(0.2)
        send_signal(db, name, "sig-1", "execute-snapshot", {"data-collections": [f"public.{name}_a", f"public.{name}_b"]})
        for _ in range(10):  # a backlog of some ten batches, behind the signal
            db.execute(f"UPDATE {name}_a SET v = v || repeat('x', 60)")
        out: list = []
        _drain(connector, out, lambda records: any(
            json.loads(r.value)["op"] == "r" for r in records if r.topic.endswith(f"{name}_b") and r.value is not None
        ) and connector._offset.get("incremental") is None)
    assert len(batches) > 10
    watermarks = 2048  # the window's own rows, written after the batch's end was chosen
    assert max(end - start for start, end in batches) <= cap + watermarks, batches
    for table, keys in KEYS.items():
        events = local_events(out, name, table)
        assert replay(events, keys) == table_rows(db, f"{name}_{table}", keys)
