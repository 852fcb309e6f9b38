"""slot.failover and several hosts in database.hostname: what the planner and the connection string make of them.

(The failover itself, a run across a promoted standby, is tests/spark/test_failover.py.)"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.connection import conninfo_from_config
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres.slots import create_logical_slot, drop_slot, slot_failover

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv"}


def _config(cluster: ThrowawayCluster, name: str, tmp_path: Path, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": name, "publication.name": name,
        "publication.autocreate.mode": "all_tables", "snapshot.mode": "no_data",
        "sparkcdc.state.location": str(tmp_path / "state"), **extra,
    })


def test_several_hosts_connect_to_the_one_accepting_writes() -> None:
    one = conninfo_to_dict(conninfo_from_config(ConnectorConfig(BASE | {"database.port": "6000"})))
    assert (one["host"], one["port"]) == ("h", "6000") and "target_session_attrs" not in one  # a standby too
    two = conninfo_to_dict(conninfo_from_config(ConnectorConfig(BASE | {"database.hostname": "h1, h2", "database.port": "5432"})))
    assert (two["host"], two["port"], two["target_session_attrs"]) == ("h1,h2", "5432", "read-write")
    each = conninfo_to_dict(conninfo_from_config(ConnectorConfig(BASE | {"database.hostname": "h1,h2", "database.port": "5432,5433"})))
    assert each["port"] == "5432,5433"
    with pytest.raises(ConfigurationError) as caught:
        conninfo_from_config(ConnectorConfig(BASE | {"database.hostname": "h1,h2", "database.port": "1,2,3"}))
    assert caught.value.property == "database.port" and "3 ports for the 2 hosts" in str(caught.value)
    with pytest.raises(ConfigurationError, match="database.port"):
        ConnectorConfig(BASE | {"database.port": "5432,x"})


def test_failover_slots_are_refused_before_postgresql_17(pg_cluster: ThrowawayCluster, unique_name: str, tmp_path: Path) -> None:
    planner = ConnectorPlanner(_config(pg_cluster, unique_name, tmp_path, **{"slot.failover": "true"}))
    try:
        with pytest.raises(ConfigurationError) as caught:
            planner.initial_offset()
    finally:
        planner.stop()
    assert caught.value.property == "slot.failover" and "PostgreSQL 17" in str(caught.value)
    with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as db:
        assert slot_failover(db, unique_name) is None, "nothing was created"


def test_a_slot_found_without_failover_is_made_a_failover_slot(pg18_cluster: ThrowawayCluster, unique_name: str,
                                                                tmp_path: Path) -> None:
    with psycopg.connect(pg18_cluster.conninfo(), autocommit=True) as db:
        create_logical_slot(db, unique_name)
        assert slot_failover(db, unique_name) is False
        planner = ConnectorPlanner(_config(pg18_cluster, unique_name, tmp_path, **{"slot.failover": "true"}))
        try:
            planner.initial_offset()
        finally:
            planner.stop()
        assert slot_failover(db, unique_name) is True
        drop_slot(db, unique_name, wait=10)
        # a new one is created as a failover slot; slot.failover=false creates an ordinary one
        for failover in ("true", "false"):
            planner = ConnectorPlanner(_config(pg18_cluster, unique_name, tmp_path / failover, **{"slot.failover": failover}))
            try:
                planner.initial_offset()
            finally:
                planner.stop()
            assert slot_failover(db, unique_name) is (failover == "true")
            drop_slot(db, unique_name, wait=10)
