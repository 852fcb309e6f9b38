"""Properties honoured by the engine (docs/properties.md), each shown against the real server."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.connection import sql_connection
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.postgres import drop_slot, get_slot


def _config(pg_cluster, name: str, tmp_path: Path, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": pg_cluster.port, "database.user": "postgres",
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": name, "publication.name": name,
        "table.include.list": rf"public\.{name}", "publication.autocreate.mode": "filtered",
        "sparkcdc.state.location": str(tmp_path / "state"), **extra,
    })


@pytest.fixture
def table(db, unique_name) -> str:
    db.execute(f"CREATE TABLE {unique_name} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {unique_name} VALUES (1, 'a')")
    return unique_name


@pytest.fixture
def cleanup(db, unique_name):
    yield
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')


def test_query_timeout_is_the_sql_connections_statement_timeout(pg_cluster, unique_name, tmp_path) -> None:
    config = _config(pg_cluster, unique_name, tmp_path, **{"database.query.timeout.ms": "150"})
    with sql_connection(config) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "150ms"
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_sleep(2)")
    with sql_connection(_config(pg_cluster, unique_name, tmp_path)) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "10min"  # Debezium's default, 600000 ms
    # database.initial.statements run after it, so they may set their own.
    with sql_connection(_config(pg_cluster, unique_name, tmp_path, **{"database.query.timeout.ms": "150",
                                                                       "database.initial.statements": "SET statement_timeout = 0"})) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"


def _stream_one_batch(planner: ConnectorPlanner, db, table: str) -> tuple[dict, dict]:
    start = planner.initial_offset()
    db.execute(f"INSERT INTO {table} VALUES (2, 'b')")
    end = planner.latest_offset(start)
    assert planner.parse(end).lsn > planner.parse(start).lsn
    return start, end


@pytest.mark.parametrize("mode", ["manual", "connector"])
def test_lsn_flush_mode(db, pg_cluster, unique_name, tmp_path, table, cleanup, mode: str) -> None:
    planner = ConnectorPlanner(_config(pg_cluster, unique_name, tmp_path, **{"snapshot.mode": "no_data", "lsn.flush.mode": mode}))
    try:
        start, end = _stream_one_batch(planner, db, table)
        planner.commit(end)
        confirmed = get_slot(db, unique_name).confirmed_flush_lsn
        if mode == "manual":
            assert confirmed == planner.parse(start).lsn, "lsn.flush.mode=manual: sparkcdc never moves the slot"
        else:
            assert confirmed == planner.parse(end).lsn
    finally:
        planner.stop()


def test_streaming_delay_waits_once_before_the_first_streaming_batch(db, pg_cluster, unique_name, tmp_path, table, cleanup) -> None:
    planner = ConnectorPlanner(_config(pg_cluster, unique_name, tmp_path, **{"snapshot.mode": "no_data", "streaming.delay.ms": "1500"}))
    try:
        start = planner.initial_offset()
        began = time.monotonic()
        first = planner.latest_offset(start)
        assert time.monotonic() - began >= 1.5
        began = time.monotonic()
        planner.latest_offset(first)
        assert time.monotonic() - began < 1.5, "the delay is waited once, not per batch"
    finally:
        planner.stop()


def test_snapshot_delay_waits_before_the_snapshot(db, pg_cluster, unique_name, tmp_path, table, cleanup) -> None:
    for delay, snapshot_mode in (("1500", "initial"), ("1500", "no_data")):
        planner = ConnectorPlanner(_config(pg_cluster, unique_name, tmp_path, **{"snapshot.mode": snapshot_mode, "snapshot.delay.ms": delay}))
        try:
            began = time.monotonic()
            offset = planner.parse(planner.initial_offset())
            waited = time.monotonic() - began
        finally:
            planner.stop()
        if snapshot_mode == "initial":
            assert offset.phase == "snapshot" and waited >= 1.5
        else:
            assert offset.phase == "stream" and waited < 1.5, "no snapshot, no snapshot delay"
