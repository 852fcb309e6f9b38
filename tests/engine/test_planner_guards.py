"""The planner's guards from Debezium's properties: ``lsn.flush.timeout.ms`` / ``.action`` when the slot
cannot be confirmed, and ``guardrail.collections.max`` / ``.limit.action`` when too many tables are captured."""

from __future__ import annotations

import logging
import time

import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.driver_slots import confirm_slot
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.setup import check_guardrail
from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres import (
    LogicalReplicationReader,
    ReplicationOptions,
    SlotInUseError,
    create_publication,
    ensure_slot,
    get_slot,
)

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}


def _held_slot(pg_cluster, db: psycopg.Connection, name: str) -> tuple[int, LogicalReplicationReader]:
    """A slot with WAL after its confirmed position, held by another process's walsender: (the LSN to confirm, the holder)."""
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    create_publication(db, name, tables=[("public", name)])
    ensure_slot(db, name)
    db.execute(f"INSERT INTO {name} VALUES (1)")
    end = int(db.execute("SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn").fetchone()[0])  # type: ignore[index]
    holder = LogicalReplicationReader(pg_cluster.conninfo(), ReplicationOptions(name, (name,))).start()
    return end, holder


def _advance(db: psycopg.Connection, name: str, lsn: int, **props: str) -> None:
    """The driver's confirmation of one slot, with the configuration and its admin connection."""
    confirm_slot(db, ConnectorConfig(BASE | props), name, lsn)


@pytest.mark.parametrize("action", ["fail", "warn", "ignore"])
def test_a_slot_held_past_the_flush_timeout(pg_cluster, db, unique_name: str, action: str, caplog) -> None:
    end, holder = _held_slot(pg_cluster, db, unique_name)
    before = get_slot(db, unique_name).confirmed_flush_lsn  # type: ignore[union-attr]
    try:
        began = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="sparkcdc.engine.driver_slots"):
            if action == "fail":
                with pytest.raises(SlotInUseError, match=r"lsn\.flush\.timeout\.ms=300") as info:
                    _advance(db, unique_name, end, **{"lsn.flush.timeout.ms": "300", "lsn.flush.timeout.action": action})
                assert info.value.slot == unique_name
            else:
                _advance(db, unique_name, end, **{"lsn.flush.timeout.ms": "300", "lsn.flush.timeout.action": action})
        took = time.monotonic() - began
        assert 0.3 <= took < 10, took  # tried for the timeout, not Debezium's 30 s default
        warned = [r.getMessage() for r in caplog.records if "lsn.flush.timeout.ms=300" in r.getMessage()]
        assert len(warned) == (1 if action == "warn" else 0), warned
        assert get_slot(db, unique_name).confirmed_flush_lsn == before  # type: ignore[union-attr]  # not confirmed
    finally:
        holder.close()
    # once the slot is free, the next batch confirms it
    _advance(db, unique_name, end, **{"lsn.flush.timeout.ms": "30000"})
    assert get_slot(db, unique_name).confirmed_flush_lsn >= end  # type: ignore[union-attr, operator]
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))


def test_the_guardrail_warns_or_fails_naming_the_limit(caplog) -> None:
    tables = [("public", f"t{i}") for i in range(4)]
    check_guardrail(ConnectorConfig(BASE), tables)  # 0: no limit
    check_guardrail(ConnectorConfig(BASE | {"guardrail.collections.max": "4", "guardrail.collections.limit.action": "fail"}), tables)
    with caplog.at_level(logging.WARNING, logger="sparkcdc.engine.setup"):
        check_guardrail(ConnectorConfig(BASE | {"guardrail.collections.max": "3"}), tables)
    assert [r.getMessage() for r in caplog.records if "guardrail.collections.max=3" in r.getMessage()]
    with pytest.raises(ConfigurationError, match="captures 4 tables, more than guardrail.collections.max=3") as info:
        check_guardrail(ConnectorConfig(BASE | {"guardrail.collections.max": "3", "guardrail.collections.limit.action": "fail"}), tables)
    assert info.value.property == "guardrail.collections.max"


def test_the_planner_checks_the_guardrail_before_setting_anything_up(pg_cluster, db, unique_name: str) -> None:
    for i in range(2):
        db.execute(f"CREATE TABLE {unique_name}_{i} (id int PRIMARY KEY)")
    config = ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": unique_name, "publication.name": unique_name,
        "publication.autocreate.mode": "filtered", "table.include.list": rf"public\.{unique_name}_.*",
        "guardrail.collections.max": "1", "guardrail.collections.limit.action": "fail",
    })
    planner = ConnectorPlanner(config)
    try:
        with pytest.raises(ConfigurationError, match="captures 2 tables"):
            planner.initial_offset()
    finally:
        planner.stop()
    assert get_slot(db, unique_name) is None  # refused before the slot was created
    assert not db.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (unique_name,)).fetchall()
