"""The Kafka sink against a real Kafka-protocol broker (Tansu): exactly once, in order, across replays.

Tansu limits shape what is asserted: records of an aborted transaction stay visible to
read_committed consumers (so nothing is asserted about what an aborted batch left behind), topics
are never compacted (only the configuration round-trip is checked), and watermarks are wrong (the
reads here go to partition EOF).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import psycopg
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from sparkcdc.spark.outputs.columns import DDL_SCHEMA
from sparkcdc.spark.outputs.kafka.batch_writer import (
    KafkaBatchWriter,
    KafkaSinkError,
    TopicConfig,
    fence_topic_name,
    kafka_writer,
)

from ..support.kafka_topics import consume
from .support import properties

CONTEXT_HEADER = "__debezium.context.connectorName"


# -- reading topics ----------------------------------------------------------------------------------


def fence_batches(bootstrap: str, pipeline_id: str) -> list[int]:
    return [json.loads(r["value"])["batch_id"] for r in consume(bootstrap, [fence_topic_name(pipeline_id)])]


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return {name: entry.value for name, entry in future.result(10).items()}


# -- static frames, as a streaming query hands them to foreachBatch ----------------------------------
def record(topic: str | None, key: str | None, value: str | None, *, lsn: int, commit_lsn: int, ordinal: int = 0,
           headers: list[tuple[str, bytes | None]] | None = None) -> tuple[Any, ...]:
    op = "d" if value is None else "c"
    return (topic, key, value, headers, op, "public", "t", lsn, commit_lsn, ordinal, 1000, None, None)


def frame(spark: Any, rows: list[tuple[Any, ...]], partitions: int = 1) -> Any:
    """``rows`` cut into ``partitions`` consecutive partitions, each keeping its rows' order (as the source's do)."""
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), DDL_SCHEMA)


def test_records_headers_tombstones_and_a_replayed_batch(spark: Any, kafka_broker: str, unique_name: str) -> None:
    topic_a, topic_b = f"{unique_name}.a", f"{unique_name}.b"
    headers = [(CONTEXT_HEADER, b"postgresql"), ("empty", None), ("bin", b"\x00\xff")]
    rows = [
        record(topic_a, '{"id":1}', '{"op":"c","id":1,"ü":"✓"}', lsn=10, commit_lsn=20, ordinal=0, headers=headers),
        record(topic_b, '{"id":1}', '{"op":"c","id":1}', lsn=11, commit_lsn=20, ordinal=1),
        record(topic_a, '{"id":1}', '{"op":"d","id":1}', lsn=30, commit_lsn=40, ordinal=0, headers=headers),
        record(topic_a, '{"id":1}', None, lsn=30, commit_lsn=40, ordinal=1, headers=headers),  # its tombstone
        record(topic_a, None, '{"op":"c","keyless":true}', lsn=31, commit_lsn=40, ordinal=2),
    ]
    rows += [record(topic_a, f'{{"id":{n % 7}}}', f'{{"n":{n}}}', lsn=100 + n, commit_lsn=1000 + n) for n in range(200)]
    pipeline = f"p-{unique_name}"
    config = TopicConfig(partitions=3)

    KafkaBatchWriter(kafka_broker, pipeline_id=pipeline, topic_config=config)(frame(spark, rows, partitions=3), 0)
    # A replay of batch 0 by a new writer (a restarted driver): the fence in Kafka says it is written.
    KafkaBatchWriter(kafka_broker, pipeline_id=pipeline, topic_config=config)(frame(spark, rows), 0)
    writer = KafkaBatchWriter(kafka_broker, pipeline_id=pipeline, topic_config=config)
    later = [record(topic_b, '{"id":2}', '{"later":1}', lsn=5000, commit_lsn=5001)]
    writer(frame(spark, later), 1)
    writer(frame(spark, later), 1)  # again, known to this writer's session without reading the fence

    records = consume(kafka_broker, [topic_a, topic_b])
    assert len(records) == len(rows) + 1, "every record exactly once"
    first = [r for r in records if r["topic"] == topic_a and r["key"] == b'{"id":1}']
    assert [r["value"] for r in first[:3]] == ['{"op":"c","id":1,"ü":"✓"}'.encode(), b'{"op":"d","id":1}', None]
    assert first[0]["headers"] == headers and first[2]["headers"] == headers
    assert [r["value"] for r in records if r["key"] is None] == [b'{"op":"c","keyless":true}']
    assert sorted(r["value"] for r in records if r["topic"] == topic_b) == [b'{"later":1}', b'{"op":"c","id":1}']
    # Per key, the records are in their commit order (each key sits in one partition).
    for n in range(7):
        key = f'{{"id":{n}}}'.encode()
        values = [json.loads(r["value"])["n"] for r in records if r["key"] == key and r["value"] and b'"n"' in r["value"]]
        assert values == sorted(values) and len(values) == len(range(n, 200, 7))
        assert len({r["partition"] for r in records if r["key"] == key and r["topic"] == topic_a}) == 1
    assert fence_batches(kafka_broker, pipeline) == [0, 1]


def test_out_of_order_partitions_fail_the_batch_unless_sorted(spark: Any, kafka_broker: str, unique_name: str) -> None:
    topic = f"{unique_name}.t"
    rows = [record(topic, f'{{"id":{n % 5}}}', f'{{"n":{n}}}', lsn=n, commit_lsn=n) for n in range(100)]
    shuffled = rows[50:] + rows[:50]  # the second partition comes before the first

    with pytest.raises(KafkaSinkError, match=rf"batch 3: records out of commit order in topic '{topic}'.*sort=True") as caught:
        KafkaBatchWriter(kafka_broker, pipeline_id=f"p-{unique_name}")(frame(spark, shuffled, partitions=2), 3)
    assert caught.value.batch_id == 3 and caught.value.topic == topic

    sorted_topic = f"{unique_name}.sorted"
    again = [(sorted_topic, *row[1:]) for row in shuffled]
    KafkaBatchWriter(kafka_broker, pipeline_id=f"p2-{unique_name}", sort=True)(frame(spark, again, partitions=2), 0)
    assert [json.loads(r["value"])["n"] for r in consume(kafka_broker, [sorted_topic])] == list(range(100))


def test_missing_topics_are_created_with_the_configuration(spark: Any, kafka_broker: str, unique_name: str) -> None:
    topic = f"{unique_name}.compacted"
    pipeline = f"p-{unique_name}"
    config = TopicConfig(partitions=2, replication_factor=1, compact=True, config={"min.compaction.lag.ms": "1000"})
    KafkaBatchWriter(kafka_broker, pipeline_id=pipeline, topic_config=config)(
        frame(spark, [record(topic, "{}", "{}", lsn=1, commit_lsn=2)]), 0)

    topics = AdminClient({"bootstrap.servers": kafka_broker}).list_topics(timeout=10).topics
    assert len(topics[topic].partitions) == 2
    assert topic_configs(kafka_broker, topic).get("cleanup.policy") == "compact"
    assert topic_configs(kafka_broker, topic).get("min.compaction.lag.ms") == "1000"
    assert len(topics[fence_topic_name(pipeline)].partitions) == 1
    assert topic_configs(kafka_broker, fence_topic_name(pipeline)).get("cleanup.policy") == "compact"


def test_an_unreachable_broker_is_a_clear_error_within_the_timeout(spark: Any) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        bootstrap = f"127.0.0.1:{probe.getsockname()[1]}"
    writer = KafkaBatchWriter(bootstrap, pipeline_id="unreachable", timeout=2.0)
    started = time.monotonic()
    with pytest.raises(KafkaSinkError, match=rf"\({bootstrap}\), batch 7: no broker answered within 2.0s") as caught:
        writer(frame(spark, [record("t", "{}", "{}", lsn=1, commit_lsn=2)]), 7)
    assert time.monotonic() - started < 15
    assert caught.value.bootstrap_servers == bootstrap and caught.value.batch_id == 7


def test_a_second_writer_of_the_pipeline_fences_the_first(spark: Any, kafka_broker: str, unique_name: str) -> None:
    topic, pipeline = f"{unique_name}.t", f"p-{unique_name}"
    zombie = KafkaBatchWriter(kafka_broker, pipeline_id=pipeline)
    zombie(frame(spark, [record(topic, "{}", '{"n":0}', lsn=1, commit_lsn=1)]), 0)
    successor = KafkaBatchWriter(kafka_broker, pipeline_id=pipeline)
    successor(frame(spark, [record(topic, "{}", '{"n":1}', lsn=2, commit_lsn=2)]), 1)

    with pytest.raises(KafkaSinkError, match=r"batch 2: .*fenced.*is the pipeline running twice\?"):
        zombie(frame(spark, [record(topic, "{}", '{"zombie":2}', lsn=3, commit_lsn=3)]), 2)
    successor(frame(spark, [record(topic, "{}", '{"n":2}', lsn=3, commit_lsn=3)]), 2)
    assert fence_batches(kafka_broker, pipeline) == [0, 1, 2]


def test_the_fence_of_another_streaming_query_does_not_apply(
    spark: Any, kafka_broker: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sparkcdc.spark.outputs.kafka.batch_writer as sink

    topic, pipeline = f"{unique_name}.t", f"p-{unique_name}"
    monkeypatch.setattr(sink, "query_id", lambda batch: "query-1")
    KafkaBatchWriter(kafka_broker, pipeline_id=pipeline)(frame(spark, [record(topic, "{}", '{"n":0}', lsn=1, commit_lsn=1)]), 0)
    KafkaBatchWriter(kafka_broker, pipeline_id=pipeline)(frame(spark, [record(topic, "{}", '{"n":0}', lsn=1, commit_lsn=1)]), 0)
    # A new checkpoint (another query id): its batch ids start again at 0, and its batch 0 is new.
    monkeypatch.setattr(sink, "query_id", lambda batch: "query-2")
    KafkaBatchWriter(kafka_broker, pipeline_id=pipeline)(frame(spark, [record(topic, "{}", '{"n":1}', lsn=1, commit_lsn=1)]), 0)
    assert [r["value"] for r in consume(kafka_broker, [topic])] == [b'{"n":0}', b'{"n":1}']


def test_a_record_the_producer_refuses_names_its_topic(spark: Any, kafka_broker: str, unique_name: str) -> None:
    topic = f"{unique_name}.t"
    writer = KafkaBatchWriter(kafka_broker, pipeline_id=f"p-{unique_name}", producer_config={"message.max.bytes": 2000})
    rows = [record(topic, "{}", '{"small":1}', lsn=1, commit_lsn=1), record(topic, "{}", "x" * 5000, lsn=2, commit_lsn=2)]
    with pytest.raises(KafkaSinkError, match=rf"batch 4: producing to topic '{topic}': .*MSG_SIZE_TOO_LARGE"):
        writer(frame(spark, rows), 4)
    writer(frame(spark, rows[:1]), 4)  # the next attempt gets a new producer session
    assert fence_batches(kafka_broker, f"p-{unique_name}") == [4]


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="enable.idempotence"):
        KafkaBatchWriter("x:1", pipeline_id="p", producer_config={"enable.idempotence": False})
    with pytest.raises(ValueError, match="acks"):
        KafkaBatchWriter("x:1", pipeline_id="p", producer_config={"acks": 1})
    with pytest.raises(ValueError, match="pipeline_id"):
        KafkaBatchWriter("x:1", pipeline_id="a/b")
    with pytest.raises(ValueError, match="unknown keys"):
        KafkaBatchWriter("x:1", pipeline_id="p", topic_config={"partitons": 3})
    assert KafkaBatchWriter("x:1", pipeline_id="p", topic_config={"compact": True}).topic_config.topic_settings() == {
        "cleanup.policy": "compact"}


# -- a real streaming query over PostgreSQL -----------------------------------------------------------
def run_available_now(writer: Any, checkpoint: Path) -> Any:
    """Run ``writer`` (a DataStreamWriter) from ``checkpoint`` with an availableNow trigger; the finished query."""
    query = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(120), "the availableNow query did not finish"
    finally:
        if query.isActive:
            query.stop()
    assert query.exception() is None
    return query


def _run(spark: Any, props: dict[str, str], bootstrap: str, checkpoint: Path, pipeline: str) -> Any:
    frame = spark.readStream.format("postgres-cdc").options(**props).load()
    return run_available_now(kafka_writer(frame, bootstrap, pipeline_id=pipeline, topic_config=TopicConfig(partitions=3), timeout=20),
                             checkpoint)


def committed_batches(checkpoint: Path) -> list[int]:
    return sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def test_a_streaming_query_writes_every_change_once_across_a_forced_replay(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    # Enough pages for several snapshot chunks: the snapshot batch has several partitions.
    db.execute(f"INSERT INTO {table} SELECT g, repeat('s', 200) FROM generate_series(0, 599) g")
    db.execute(f"ANALYZE {table}")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "topic.prefix": unique_name, "sparkcdc.state.location": str(tmp_path / "state"), "sparkcdc.snapshot.chunk.rows": 200})
    topic = f"{unique_name}.public.{table}"
    checkpoint, pipeline = tmp_path / "checkpoint", f"p-{unique_name}"

    _run(spark, props, kafka_broker, checkpoint, pipeline)  # the snapshot
    for i in range(1000, 1010):
        db.execute(f"INSERT INTO {table} VALUES (%s, %s)", (i, f"v{i}"))
    db.execute(f"UPDATE {table} SET v = 'changed' WHERE id = 0")
    db.execute(f"DELETE FROM {table} WHERE id = 1")  # a delete event, then its tombstone
    _run(spark, props, kafka_broker, checkpoint, pipeline)

    # Forced replay: Spark forgets it committed the last batch and runs the same batch id again.
    last = committed_batches(checkpoint)[-1]
    assert last in fence_batches(kafka_broker, pipeline), "the last batch wrote records"
    for name in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    db.execute(f"INSERT INTO {table} VALUES (2000, 'after')")  # for the batches after the replayed one
    db.execute(f"DELETE FROM {table} WHERE id = 2")
    replay = _run(spark, props, kafka_broker, checkpoint, pipeline)
    assert [p["batchId"] for p in replay.recentProgress][0] == last, "the batch ran again"
    assert committed_batches(checkpoint)[-1] > last


    records = consume(kafka_broker, [topic])
    events = [(r["key"], None if r["value"] is None else json.loads(r["value"])["payload"]) for r in records]
    seen = Counter((key, None if p is None else (p["op"], p["source"]["lsn"])) for key, p in events)
    assert [item for item, n in seen.items() if n > 1 and item[1] is not None] == [], "duplicates"

    by_key: dict[int, list[str]] = defaultdict(list)
    for key, p in events:
        by_key[json.loads(key)["payload"]["id"]].append("tombstone" if p is None else p["op"])
    assert by_key == {**{i: ["r"] for i in range(600)}, 0: ["r", "u"], 1: ["r", "d", "tombstone"], 2: ["r", "d", "tombstone"],
                      **{i: ["c"] for i in range(1000, 1010)}, 2000: ["c"]}
    for r in records:  # header values are the source's JSON texts, with their schemas
        assert json.loads(dict(r["headers"])[CONTEXT_HEADER])["payload"] == "postgresql", r
    # Each key's records sit in one partition, in commit order.
    for key in {r["key"] for r in records}:
        mine = [r for r in records if r["key"] == key]
        assert len({r["partition"] for r in mine}) == 1
        lsns = [json.loads(r["value"])["payload"]["source"]["lsn"] for r in mine if r["value"] is not None]
        assert lsns == sorted(lsns)
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))


def test_a_replayed_initial_snapshot_is_written_again_so_no_change_is_lost(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    """A re-executed snapshot batch is a new snapshot (the source's export died with the query): skipping it
    would lose the changes made between the two snapshots, since streaming goes on from the new one."""
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} VALUES (0), (1)")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "topic.prefix": unique_name, "sparkcdc.state.location": str(tmp_path / "state")})
    checkpoint, pipeline = tmp_path / "checkpoint", f"p-{unique_name}"
    _run(spark, props, kafka_broker, checkpoint, pipeline)
    assert committed_batches(checkpoint) == [0]

    (checkpoint / "commits" / "0").unlink()  # Spark forgets it committed the snapshot batch
    (checkpoint / "commits" / ".0.crc").unlink(missing_ok=True)
    db.execute(f"INSERT INTO {table} VALUES (2)")  # after the first snapshot, before the second
    _run(spark, props, kafka_broker, checkpoint, pipeline)
    db.execute(f"INSERT INTO {table} VALUES (3)")
    _run(spark, props, kafka_broker, checkpoint, pipeline)

    records = consume(kafka_broker, [f"{unique_name}.public.{table}"])
    reads = [(json.loads(r["value"])["payload"]["op"], json.loads(r["key"])["payload"]["id"]) for r in records]
    assert sorted(reads) == [("c", 3), ("r", 0), ("r", 0), ("r", 1), ("r", 1), ("r", 2)]
    assert fence_batches(kafka_broker, pipeline)[:2] == [0, 0]
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))
