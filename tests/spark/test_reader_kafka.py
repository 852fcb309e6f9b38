"""The ``kafka`` layout: the reader tasks produce to Kafka exactly once, the driver sees only counts.

Against a real Kafka-protocol broker (Tansu) and PostgreSQL: the snapshot (several chunks, so
several producing tasks) and streamed changes arrive once each, keyed and partitioned as the
driver's writer does, with their headers; a forced replay of a committed batch produces nothing
again (the driver's writer reads the fence and lets the tasks check it); tasks that find their batch
in the fence skip it even without the driver's writer; an initial snapshot replayed by a new run is
written again; `sparkcdc run --kafka` counts what it produced; and what the driver collects is one
row per task and topic, never a record.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.outputs.kafka.task_commits import ReaderKafkaBatchWriter
from sparkcdc.spark.outputs.kafka.task_producer import PRODUCED_DDL_SCHEMA, kafka_link
from sparkcdc.spark.runner import run_pipeline

from ..support.kafka_topics import consume
from .support import properties
from .test_kafka_sink import CONTEXT_HEADER, committed_batches, run_available_now

ROWS = 600


def _kafka_props(pg_cluster: Any, name: str, table: str, bootstrap: str, tmp_path: Path, **extra: Any) -> dict[str, str]:
    return properties(pg_cluster, name, [f"public.{table}"], **{
        "topic.prefix": name, "sparkcdc.state.location": str(tmp_path / "state"), "sparkcdc.snapshot.chunk.rows": 200,
        "sparkcdc.output.layout": "kafka", "sparkcdc.output.kafka.bootstrap.servers": bootstrap,
        "sparkcdc.output.kafka.topic.partitions": 3, "sparkcdc.output.kafka.timeout.ms": 20000, **extra})


class _Collect:
    """A ``foreachBatch`` that keeps what the driver is handed (and, optionally, is the layout's writer)."""

    def __init__(self, writer: ReaderKafkaBatchWriter | None) -> None:
        self.writer = writer
        self.rows: dict[int, list[Any]] = {}
        self.columns: list[str] = []

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.columns = batch.columns
        if self.writer is not None:
            self.writer(batch, batch_id)
        self.rows[batch_id] = [tuple(r) for r in batch.collect()] if self.writer is None else []


def _run(spark: Any, props: dict[str, str], checkpoint: Path, sink: Any) -> Any:
    return run_available_now(spark.readStream.format("postgres-cdc").options(**props).load().writeStream.foreachBatch(sink),
                             checkpoint)


def _forget(checkpoint: Path, batch: int) -> None:
    """Spark forgets it committed ``batch``: the next start runs it again."""
    for name in (str(batch), f".{batch}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)


def _ops_by_key(records: list[dict[str, Any]]) -> dict[int, list[str]]:
    by_key: dict[int, list[str]] = defaultdict(list)
    for r in records:
        value = None if r["value"] is None else json.loads(r["value"])["payload"]
        by_key[json.loads(r["key"])["payload"]["id"]].append("tombstone" if value is None else value["op"])
    return dict(by_key)


def test_tasks_produce_every_change_once_across_a_forced_replay(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, repeat('s', 200) FROM generate_series(0, {ROWS - 1}) g")
    db.execute(f"ANALYZE {table}")  # several snapshot chunks: several producing tasks
    props = _kafka_props(pg_cluster, unique_name, table, kafka_broker, tmp_path)
    topic, checkpoint = f"{unique_name}.public.{table}", tmp_path / "checkpoint"
    writer = ReaderKafkaBatchWriter(kafka_link(_config(props)))
    sink = _Collect(writer)

    _run(spark, props, checkpoint, sink)  # the snapshot
    assert sink.columns == [c.split()[0] for c in PRODUCED_DDL_SCHEMA.split(", ")]
    assert writer.records_by_batch == {0: ROWS}
    for i in range(1000, 1010):
        db.execute(f"INSERT INTO {table} VALUES (%s, %s)", (i, f"v{i}"))
    db.execute(f"UPDATE {table} SET v = 'changed' WHERE id = 0")
    db.execute(f"DELETE FROM {table} WHERE id = 1")  # a delete event, then its tombstone
    _run(spark, props, checkpoint, sink)
    last = committed_batches(checkpoint)[-1]
    assert writer.records_by_batch[last] == 13

    _forget(checkpoint, last)
    db.execute(f"INSERT INTO {table} VALUES (2000, 'after')")
    db.execute(f"DELETE FROM {table} WHERE id = 2")
    replayer = ReaderKafkaBatchWriter(kafka_link(_config(props)))  # a new driver: it reads the fence
    replay = _run(spark, props, checkpoint, _Collect(replayer))
    assert [p["batchId"] for p in replay.recentProgress][0] == last, "the batch ran again"
    assert replayer.records_by_batch[last] == 13, "the replayed batch reports what the fence holds"

    records = consume(kafka_broker, [topic])
    seen = Counter((r["key"], r["value"]) for r in records if r["value"] is not None)
    assert [item for item, n in seen.items() if n > 1] == [], "duplicates"
    assert _ops_by_key(records) == {**{i: ["r"] for i in range(ROWS)}, 0: ["r", "u"], 1: ["r", "d", "tombstone"],
                                    2: ["r", "d", "tombstone"], **{i: ["c"] for i in range(1000, 1010)}, 2000: ["c"]}
    for r in records:  # header values are the source's JSON texts, with their schemas
        assert json.loads(dict(r["headers"])[CONTEXT_HEADER])["payload"] == "postgresql", r
    for key in {r["key"] for r in records}:  # each key in one partition (murmur2), in commit order
        mine = [r for r in records if r["key"] == key]
        assert len({r["partition"] for r in mine}) == 1
        lsns = [json.loads(r["value"])["payload"]["source"]["lsn"] for r in mine if r["value"] is not None]
        assert lsns == sorted(lsns)
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))


def test_tasks_skip_a_batch_the_fence_holds_without_the_driver_writer(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    """In a user's own ``foreachBatch`` (no local property from the layout's writer) each task reads the
    fence: a forced replay of a streamed batch then produces nothing, and its rows say so."""
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    props = _kafka_props(pg_cluster, unique_name, table, kafka_broker, tmp_path)
    checkpoint, sink = tmp_path / "checkpoint", _Collect(None)
    _run(spark, props, checkpoint, sink)  # an empty snapshot
    db.execute(f"INSERT INTO {table} SELECT generate_series(1, 5)")
    _run(spark, props, checkpoint, sink)
    last = committed_batches(checkpoint)[-1]
    assert sink.rows[last] == [(0, f"{unique_name}.public.{table}", 5, False)]

    _forget(checkpoint, last)
    _run(spark, props, checkpoint, sink)
    assert sink.rows[last] == [(0, f"{unique_name}.public.{table}", 5, True)], "skipped, with the fence's count"
    assert sorted(_ops_by_key(consume(kafka_broker, [f"{unique_name}.public.{table}"]))) == [1, 2, 3, 4, 5]
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))


def test_an_initial_snapshot_replayed_by_a_new_run_is_written_again(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    """A re-executed snapshot batch is a new snapshot: skipping it would lose the changes between the two."""
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} VALUES (0), (1)")
    props = _kafka_props(pg_cluster, unique_name, table, kafka_broker, tmp_path)
    checkpoint = tmp_path / "checkpoint"
    _run(spark, props, checkpoint, _Collect(None))
    _forget(checkpoint, 0)
    db.execute(f"INSERT INTO {table} VALUES (2)")  # after the first snapshot, before the second
    _run(spark, props, checkpoint, _Collect(None))
    db.execute(f"INSERT INTO {table} VALUES (3)")
    _run(spark, props, checkpoint, _Collect(None))
    assert _ops_by_key(consume(kafka_broker, [f"{unique_name}.public.{table}"])) == {
        0: ["r", "r"], 1: ["r", "r"], 2: ["r"], 3: ["c"]}
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))


def test_run_pipeline_with_kafka_counts_what_the_tasks_produced(
    db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, 'v' FROM generate_series(1, 300) g")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{"topic.prefix": unique_name})
    summary = run_pipeline(props, output=None, checkpoint=tmp_path / "ck", once=True, master="local[2]", kafka=kafka_broker)
    assert summary.records == 300
    assert len(consume(kafka_broker, [f"{unique_name}.public.{table}"])) == 300
    with pytest.raises(Exception, match="runs on its own"):
        run_pipeline(props, output=tmp_path / "out", checkpoint=tmp_path / "ck2", once=True, kafka=kafka_broker)
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))


def test_settings_are_checked(spark: Any, pg_cluster: Any) -> None:
    base = properties(pg_cluster, "unused", ["public.unused"])
    with pytest.raises(ConfigurationError, match="sparkcdc.output.kafka.bootstrap.servers"):
        kafka_link(_config({**base, "sparkcdc.output.layout": "kafka"}))
    with pytest.raises(Exception, match="sparkcdc.output.kafka.bootstrap.servers"):
        spark.readStream.format("postgres-cdc").options(**{**base, "sparkcdc.output.kafka.bootstrap.servers": "x:1"}).load()
    with pytest.raises(Exception, match="sparkcdc.output.kafka.topic.partitions"):  # any of the layout's settings
        spark.readStream.format("postgres-cdc").options(**{**base, "sparkcdc.output.kafka.topic.partitions": "3"}).load()
    with pytest.raises(ConfigurationError, match="sparkcdc.output.kafka.pipeline.id"):
        kafka_link(_config({**base, "sparkcdc.output.kafka.bootstrap.servers": "x:1", "sparkcdc.output.kafka.pipeline.id": "a/b"}))
    link = kafka_link(_config({**base, "sparkcdc.output.kafka.bootstrap.servers": "x:1",
                               "sparkcdc.output.kafka.client.security.protocol": "plaintext",
                               "sparkcdc.output.kafka.client.linger.ms": "5"}))
    assert link.pipeline_id == "srv" and link.client_config["security.protocol"] == "plaintext"
    assert link.producer_config["linger.ms"] == "5" and link.producer_config["acks"] == "all"


def _config(props: dict[str, str]) -> Any:
    from sparkcdc.debezium.config import ConnectorConfig

    return ConnectorConfig(props)
