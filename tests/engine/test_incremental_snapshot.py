"""Incremental snapshots through the one driver and reader (LocalConnector), against the real server.

The signal arrives through the signal table (the ``source`` channel), the chunks are read in
windows between watermarks (or, read-only, by snapshot visibility) while a writer changes the same
rows, and the output replayed in order must equal the table.
"""

from __future__ import annotations

import json
import threading

import psycopg
import pytest

from sparkcdc.engine.connector import LocalConnector
from sparkcdc.postgres import drop_slot, get_slot

from ..support.incremental import KEYS, create_tables, local_config, local_events, reads_twice, replay, send_signal, table_rows
from ..support.waiting import wait_until


@pytest.fixture
def tables(db, unique_name):
    create_tables(db, unique_name, rows_a=40, rows_b=33)
    yield unique_name
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')


def _drain(connector: LocalConnector, out: list, until) -> None:
    wait_until(lambda: out.extend(connector.poll(0.2)) or until(out), timeout=120, what="the incremental snapshot")


@pytest.mark.parametrize("extra", [{}, {"incremental.snapshot.watermarking.strategy": "insert_delete"}, {"read.only": "true"}],
                         ids=["insert_insert", "insert_delete", "read_only"])
def test_incremental_snapshot_under_a_concurrent_writer(db, pg_cluster, tables, tmp_path, extra) -> None:
    name = tables
    config = local_config(pg_cluster, name, tmp_path, **extra)
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
        send_signal(db, name, "sig-1", "execute-snapshot", {"data-collections": [f"public.{name}_a", f"public.{name}_b"]})

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

    for table, keys in KEYS.items():
        events = local_events(out, name, table)
        reads = [e for e in events if e is not None and e["op"] == "r"]
        assert reads and all(e["source"]["snapshot"] == "incremental" for e in reads)
        assert replay(events, keys) == table_rows(db, f"{name}_{table}", keys)
        assert not reads_twice(events, keys), "a row was read twice"
    if extra.get("read.only") == "true":
        watermarks = db.execute(f"SELECT count(*) FROM {name}_signal WHERE type LIKE 'snapshot-window-%%'").fetchone()[0]
        assert watermarks == 0


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


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
