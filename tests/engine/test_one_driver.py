"""One driver for every path: the Spark source and the in-process loop run the same planner and
the same reader of planned work — the objects, not copies — so the conformance suite, which drives
the in-process loop, checks what ``postgres-cdc`` emits."""

from __future__ import annotations

from typing import Any

import psycopg

import sparkcdc.engine.connector as connector_module
import sparkcdc.engine.work as work_module
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.spark.source import data_source as spark_source


def _properties(cluster: Any, name: str, table: str) -> dict[str, str]:
    return {
        "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
        "database.dbname": "postgres", "topic.prefix": "one", "slot.name": name, "slot.drop.on.stop": "true",
        "publication.name": name, "publication.autocreate.mode": "filtered", "table.include.list": f"public.{table}",
    }


def test_the_spark_source_and_the_local_loop_share_planner_and_reader(
    db: psycopg.Connection, pg_cluster: Any, unique_name: str, monkeypatch: Any
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} SELECT generate_series(1, 10)")
    properties = _properties(pg_cluster, unique_name, table)
    reader = spark_source.PostgresCdcStreamReader(properties)
    local = LocalConnector(ConnectorConfig(properties))
    try:
        assert type(reader.planner) is ConnectorPlanner and type(local.planner) is ConnectorPlanner

        calls: list[str] = []
        real = work_module.read_work

        def spy(config: ConnectorConfig, work: Any, **kwargs: Any) -> Any:
            calls.append(type(work).__name__)
            return real(config, work, **kwargs)

        monkeypatch.setattr(work_module, "read_work", spy)
        start = reader.initialOffset()
        end = reader.latestOffset(start, None)  # type: ignore[arg-type]
        partitions = reader.partitions(start, end)
        rows = sum(batch.num_rows for p in partitions for batch in spark_source.read_partition(p))  # type: ignore[arg-type]
        assert rows == 10 and calls == ["SnapshotChunk"] * len(partitions)
        reader.commit(end)
    finally:
        reader.stop()
        local.close()
    # The in-process loop reads with that very function object.
    assert connector_module.read_work is real
