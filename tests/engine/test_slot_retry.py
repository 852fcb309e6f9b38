"""A batch's task waits for a slot another process holds: ``slot.max.retries`` attempts, ``slot.retry.delay.ms`` apart."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.batch_reader import read_stream_range
from sparkcdc.engine.core.offsets import SourceOffset
from sparkcdc.engine.core.state_store import StreamStateStore
from sparkcdc.postgres import LogicalReplicationReader, ReplicationOptions, SlotInUseError, create_publication, ensure_slot

from ..support.waiting import wait_until


def _setup(pg_cluster, db: psycopg.Connection, name: str, **overrides: str) -> tuple[ConnectorConfig, SourceOffset, SourceOffset]:
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    create_publication(db, name, tables=[("public", name)])
    slot, _ = ensure_slot(db, name)
    db.execute(f"INSERT INTO {name} VALUES (1)")
    end = db.execute("SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn").fetchone()[0]  # type: ignore[index]
    config = ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": name, "publication.name": name,
        "table.include.list": f"public.{name}", **overrides,
    })
    start_lsn = slot.confirmed_flush_lsn or 0
    return config, SourceOffset(name, "postgres", start_lsn), SourceOffset(name, "postgres", int(end))


def _holder(pg_cluster, name: str) -> LogicalReplicationReader:
    """Another process's walsender on the slot."""
    return LogicalReplicationReader(pg_cluster.conninfo(), ReplicationOptions(name, (name,))).start()


def test_a_held_slot_fails_after_the_retries_spaced_by_the_delay(pg_cluster, db, unique_name, tmp_path: Path) -> None:
    config, start, end = _setup(pg_cluster, db, unique_name, **{"slot.max.retries": "2", "slot.retry.delay.ms": "1200"})
    holder = _holder(pg_cluster, unique_name)
    try:
        began = time.monotonic()
        with pytest.raises(SlotInUseError, match=f"{unique_name}.*after 3 attempts"):
            list(read_stream_range(config, start, end, run_id="r", state_store=StreamStateStore(tmp_path)))
        assert time.monotonic() - began >= 2.4, "two retries, 1200 ms apart"
    finally:
        holder.close()


def test_a_slot_released_within_the_retries_is_read(pg_cluster, db, unique_name, tmp_path: Path) -> None:
    config, start, end = _setup(pg_cluster, db, unique_name, **{"slot.max.retries": "50", "slot.retry.delay.ms": "100"})
    holder = _holder(pg_cluster, unique_name)
    result: dict[str, object] = {}

    def read() -> None:
        try:
            result["records"] = list(read_stream_range(config, start, end, run_id="r", state_store=StreamStateStore(tmp_path)))
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            result["error"] = exc

    reader = threading.Thread(target=read, daemon=True)
    logged = pg_cluster.log_size()
    try:
        reader.start()
        # the task has tried and been refused: the server logs each refused START_REPLICATION
        wait_until(lambda: f'replication slot "{unique_name}" is active' in pg_cluster.server_log(since_offset=logged),
                   timeout=30, what="a refused attempt")
    finally:
        holder.close()
    reader.join(60)
    assert "error" not in result, result
    assert [(r.op, r.table) for r in result["records"]] == [("c", unique_name)]  # type: ignore[attr-defined]
