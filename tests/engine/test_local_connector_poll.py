"""LocalConnector.poll hands over streamed records as soon as it has some.

It used to collect until its timeout had passed and the stream was momentarily empty, so under a
steady backlog one call could gather hundreds of thousands of records before returning.
"""

from __future__ import annotations

import time

import orjson
import psycopg

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.connector import LocalConnector


def _config(cluster: ThrowawayCluster, name: str, table: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": cluster.host,
        "database.port": str(cluster.port),
        "database.user": cluster.user,
        "database.dbname": "postgres",
        "topic.prefix": "poll",
        "slot.name": name,
        "slot.drop.on.stop": "true",
        "publication.name": name,
        "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{table}",
        "snapshot.mode": "no_data",
    })


def test_poll_returns_records_without_waiting_out_its_timeout(
    db: psycopg.Connection, pg_cluster: ThrowawayCluster, unique_name: str
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    with LocalConnector(_config(pg_cluster, unique_name, table)) as connector:
        assert connector.poll(0.0) == []  # opens the replication stream
        db.execute(f"INSERT INTO {table} SELECT generate_series(1, 3000)")
        started = time.monotonic()
        records = connector.poll(60.0)
        first_wait = time.monotonic() - started
        while len(records) < 3000 and time.monotonic() - started < 60:
            records += connector.poll(60.0)
    assert [orjson.loads(r.value)["payload"]["after"]["id"] for r in records] == list(range(1, 3001))
    assert first_wait < 30, f"poll(60) held its records for {first_wait:.1f} s"
