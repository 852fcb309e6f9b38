"""Parallel streaming (``sparkcdc.stream.slots``): the captured tables over several slots and publications.

Held to the source: a snapshot and changes across three tables on two slots (transactions spanning
both), the output replayed equals the tables, each change once even when Spark runs a batch again,
every slot confirmed after commits and dropped at stop. The seam the design rests on is checked on
PostgreSQL itself: a slot asked to start past its consistent point skips what commits before.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.cli.status import server_report
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.core.offsets import OffsetError, SourceOffset
from sparkcdc.engine.core.stream_slots import assign_tables, check_parallel_streaming, stream_slots
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.setup import SetupError, ensure_stream_publications
from sparkcdc.errors import ConfigurationError
from sparkcdc.pgoutput.messages import Insert
from sparkcdc.postgres import get_slot
from sparkcdc.postgres.replication import LogicalReplicationReader, ReplicationOptions
from sparkcdc.postgres.slots import ExportedSnapshotSlot, create_logical_slot, current_wal_insert_lsn, drop_slot
from sparkcdc.spark.metrics import MetricsCollector

from ..support.incremental import replay, table_rows
from .support import checkpoint_offset, output_lines, payload, properties, run_once


def _inserted_ids(conninfo: str, slot: str, publication: str, start_lsn: int, until_lsn: int) -> list[int]:
    """The ids inserted in what the slot streams from ``start_lsn`` up to ``until_lsn``."""
    reader = LogicalReplicationReader(conninfo, ReplicationOptions(slot, (publication,), proto_version=1), start_lsn=start_lsn)
    reader.start()
    ids: list[int] = []
    deadline = time.monotonic() + 30
    try:
        while reader.received_lsn < until_lsn:
            assert time.monotonic() < deadline, "the walsender did not reach the WAL's end"
            items = reader.read_batch(timeout=0.2)
            ids += [int(i.message.new_tuple[0]) for i in items if isinstance(i.message, Insert)]
            if not items:
                reader.request_reply()
    finally:
        reader.close()
    return ids


def test_a_slot_started_past_its_consistent_point_skips_earlier_commits(db: psycopg.Connection, pg_cluster: Any,
                                                                         unique_name: str) -> None:
    table, first, main = f"t_{unique_name}", f"{unique_name}_1", unique_name
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute(f"CREATE PUBLICATION {unique_name} FOR TABLE {table}")
    own_point = create_logical_slot(db, first)  # an extra stream's slot: created first
    db.execute(f"INSERT INTO {table} VALUES (1)")  # commits between the two slots' consistent points
    with ExportedSnapshotSlot(pg_cluster.conninfo(), main) as export:
        point = export.consistent_point
    db.execute(f"INSERT INTO {table} VALUES (2)")
    end = current_wal_insert_lsn(db)
    try:
        assert point > own_point
        # From its own consistent point the slot has the row the main slot's snapshot already holds ...
        assert _inserted_ids(pg_cluster.conninfo(), first, unique_name, own_point, end) == [1, 2]
        # ... and asked to start at the main slot's point, it skips it: no overlap with the snapshot.
        assert _inserted_ids(pg_cluster.conninfo(), first, unique_name, point, end) == [2]
    finally:
        drop_slot(db, first, wait=10)
        drop_slot(db, main, wait=10)
        db.execute(f"DROP PUBLICATION {unique_name}")


def _config(pg_cluster: Any, name: str, tables: list[str], **overrides: Any) -> ConnectorConfig:
    return ConnectorConfig(properties(pg_cluster, name, tables, **{"sparkcdc.stream.slots": "2", **overrides}))


@pytest.mark.parametrize(("overrides", "named", "says"), [
    ({"publication.autocreate.mode": "all_tables"}, "sparkcdc.stream.slots", "publication.autocreate.mode=filtered"),
    ({"publication.autocreate.mode": "no_tables"}, "sparkcdc.stream.slots", "publication.autocreate.mode=filtered"),
    ({"signal.data.collection": "public.sig"}, "sparkcdc.stream.slots", "signal.data.collection"),
    ({"signal.enabled.channels": "source,file", "signal.file": "/tmp/x"}, "sparkcdc.stream.slots", "signal.enabled.channels"),
    ({"sparkcdc.stream.slots.assignment": "public.a:2"}, "sparkcdc.stream.slots.assignment", "slots 0 to 1"),
    ({"sparkcdc.stream.slots": "1", "sparkcdc.stream.slots.assignment": "public.a:0"}, "sparkcdc.stream.slots.assignment", "only one"),
    ({"slot.name": "s" * 62}, "slot.name", "longer than 63"),
    ({"publication.autocreate.mode": "disabled", "sparkcdc.stream.slots.assignment": "public.a:1"},
     "sparkcdc.stream.slots.assignment", "made by hand"),
])
def test_what_several_streams_cannot_do_is_refused_naming_the_property(pg_cluster: Any, overrides: dict[str, str], named: str,
                                                                      says: str) -> None:
    with pytest.raises(ConfigurationError, match=says) as raised:  # by the rules as the configuration is built, or by the check
        check_parallel_streaming(_config(pg_cluster, "refused", ["public.a"], **overrides))
    assert raised.value.property == named


def test_tables_go_to_listed_slots_else_to_their_stable_hash(pg_cluster: Any) -> None:
    tables = [("public", f"t{i}") for i in range(40)]
    config = _config(pg_cluster, "assign", [], **{"sparkcdc.stream.slots": "3", "sparkcdc.stream.slots.assignment": "public.t7:2"})
    shares = assign_tables(config, tables)
    assert sorted(t for share in shares for t in share) == sorted(tables)
    assert ("public", "t7") in shares[2] and all(shares), "each slot gets some of 40 tables"
    assert shares == assign_tables(config, list(tables)), "the same split every time (crc32, not hash())"
    assert [s.slot for s in stream_slots(config)] == ["assign", "assign_1", "assign_2"]
    assert [s.publication for s in stream_slots(config)] == ["assign", "assign_1", "assign_2"]


def test_a_slot_left_without_tables_or_a_table_in_two_publications_is_refused(db: psycopg.Connection, pg_cluster: Any,
                                                                               unique_name: str) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    with pytest.raises(ConfigurationError, match="would stream no table") as raised:
        ensure_stream_publications(db, _config(pg_cluster, unique_name, []), [("public", table)])
    assert raised.value.property == "sparkcdc.stream.slots"
    db.execute(f"CREATE PUBLICATION {unique_name} FOR TABLE {table}")
    db.execute(f"CREATE PUBLICATION {unique_name}_1 FOR TABLE {table}")
    try:
        with pytest.raises(SetupError, match=f"in publications '{unique_name}' and '{unique_name}_1'"):
            ensure_stream_publications(db, _config(pg_cluster, unique_name, [], **{"publication.autocreate.mode": "disabled"}),
                                       [("public", table)])
    finally:
        db.execute(f"DROP PUBLICATION {unique_name}, {unique_name}_1")


def _confirmed(db: psycopg.Connection, slot: str) -> int:
    state = get_slot(db, slot)
    assert state is not None and state.confirmed_flush_lsn is not None
    return state.confirmed_flush_lsn


def _last_committed_lsn(checkpoint: Path) -> int:
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    return int(checkpoint_offset(checkpoint, last)["lsn"])


def test_two_slots_stream_three_tables_exactly_once_and_the_replay_equals_the_source(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path
) -> None:
    name = unique_name
    tables = [f"{name}_a", f"{name}_b", f"{name}_c"]
    for table in tables:
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        db.execute(f"INSERT INTO {table} SELECT g, 'snap' || g FROM generate_series(1, 20) g")
    props = properties(pg_cluster, name, [f"public.{t}" for t in tables], **{
        "sparkcdc.stream.slots": "2", "sparkcdc.stream.slots.assignment": f"public.{tables[0]}:0,public.{tables[1]}:1",
        "sparkcdc.state.location": str(tmp_path / "state")})
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    slots = [name, f"{name}_1"]

    run_once(props, output, checkpoint)  # the initial snapshot: both slots created, streaming from one point
    assert [len(events) for events in (_events(output, t) for t in tables)] == [20, 20, 20]

    def changes(base: int) -> None:
        a, b, c = tables
        with db.transaction():  # one transaction over both slots' tables
            db.execute(f"INSERT INTO {a} VALUES ({base}, 'x'), ({base + 1}, 'x')")
            db.execute(f"INSERT INTO {b} VALUES ({base}, 'y')")
            db.execute(f"UPDATE {c} SET v = 'tx{base}' WHERE id <= 3")
            db.execute(f"DELETE FROM {b} WHERE id = {base // 100 + 10}")
        db.execute(f"UPDATE {a} SET v = 'u{base}' WHERE id % 4 = 0")
        db.execute(f"DELETE FROM {c} WHERE id = {base // 10}")
        db.execute(f"INSERT INTO {c} VALUES ({base}, 'z')")
        with db.transaction():
            db.execute(f"UPDATE {b} SET v = 'w{base}' WHERE id = 7")
            db.execute(f"UPDATE {a} SET v = 'w{base}' WHERE id = 7")

    changes(100)
    db.execute("SELECT pg_logical_emit_message(true, 'parallel', 'once')")  # every slot decodes it; emitted once
    run_once(props, output, checkpoint)
    end = _last_committed_lsn(checkpoint)
    assert [_confirmed(db, slot) for slot in slots] == [end, end], "every slot confirmed to the committed end"
    messages = [line for line in output_lines(output) if line["topic"] == "srv.message"]
    assert len(messages) == 1
    reports = tmp_path / "state" / "metrics" / "stream"
    assert (reports / f"batch-{end:020d}.json").exists() and (reports / f"batch-{end:020d}-1.json").exists(), \
        "the batch was read by one task per stream"

    # A batch whose output is published but whose commit Spark never recorded (the driver died in
    # between): the slots have not moved (lsn.flush.mode=manual holds them here), Spark runs it again.
    changes(200)
    run_once({**props, "lsn.flush.mode": "manual"}, output, checkpoint)
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert [_confirmed(db, slot) for slot in slots] == [end, end] and _last_committed_lsn(checkpoint) > end
    for file in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / file).unlink(missing_ok=True)
    changes(300)
    run_once(props, output, checkpoint)
    assert (checkpoint / "commits" / str(last)).exists()

    lines = output_lines(output)
    positions = [(line["topic"], line["commit_lsn"], line["lsn"], line["ordinal"]) for line in lines]
    assert len(positions) == len(set(positions)), "each change once"
    for table in tables:
        assert replay(_events(output, table), ["id"]) == table_rows(db, table, ["id"]), table
    # The spanning transaction's parts, one per stream, under one txId.
    a_tx = {payload(line)["source"]["txId"] for line in lines if line["topic"] == f"srv.public.{tables[0]}" and payload(line)
            and payload(line)["op"] == "c" and payload(line)["after"]["id"] == 300}
    b_tx = {payload(line)["source"]["txId"] for line in lines if line["topic"] == f"srv.public.{tables[1]}" and payload(line)
            and payload(line)["op"] == "c" and payload(line)["after"]["id"] == 300}
    assert a_tx == b_tx and len(a_tx) == 1
    # The checkpoint is read with two slots only: with another number, tables would move between slots.
    assert SourceOffset.from_dict(checkpoint_offset(checkpoint, last), streams=2).streams == 2
    with pytest.raises(OffsetError, match="sparkcdc.stream.slots: the checkpoint streams through 2 slot"):
        SourceOffset.from_dict(checkpoint_offset(checkpoint, last), streams=1)
    # The metrics sum both streams' reports, and see both slots; `sparkcdc status` shows both streams.
    collector = MetricsCollector(props, state_location=str(tmp_path / "state"))
    try:
        collector.refresh()
        streaming = collector.snapshot()["streaming"]
        assert streaming["TotalNumberOfCreateEventsSeen"] == sum(1 for line in lines if payload(line) and payload(line)["op"] == "c")
        assert collector.slot["active"] is False and collector.slot["pending_bytes"] is not None
    finally:
        collector.close()
    report = server_report(db, ConnectorConfig(props))
    assert report["streams"][0]["slot"]["name"] == slots[1] and report["streams"][0]["slot"]["exists"]
    shares = assign_tables(ConnectorConfig(props), [("public", table) for table in tables])
    assert report["streams"][0]["publication"]["tables"] == sorted(f"{s}.{t}" for s, t in shares[1])
    assert report["publication"]["tables"] == sorted(f"{s}.{t}" for s, t in shares[0]) and f"public.{tables[0]}" in report[
        "publication"]["tables"]
    # slot.drop.on.stop: a run that ends drops every stream's slot.
    run_once({**props, "slot.drop.on.stop": "true"}, output, checkpoint)
    assert [get_slot(db, slot) for slot in slots] == [None, None]


def _events(output: Path, table: str) -> list[dict[str, Any] | None]:
    return [payload(line) for line in output_lines(output) if line["topic"] == f"srv.public.{table}"]


def test_two_slots_produce_to_kafka_from_their_tasks_exactly_once(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, kafka_broker: str, unique_name: str, tmp_path: Path
) -> None:
    """The ``kafka`` layout with a task per stream: transactional ids and fence keys per task index never
    collide, and a replayed batch produces nothing again."""
    from sparkcdc.spark.outputs.kafka.task_commits import ReaderKafkaBatchWriter
    from sparkcdc.spark.outputs.kafka.task_producer import kafka_link

    from ..support.kafka_topics import consume
    from .test_kafka_sink import committed_batches
    from .test_reader_kafka import _Collect, _config, _forget, _kafka_props, _ops_by_key, _run

    a, b = f"{unique_name}_a", f"{unique_name}_b"
    for table in (a, b):
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        db.execute(f"INSERT INTO {table} SELECT g, 's' FROM generate_series(1, 5) g")
    props = {**_kafka_props(pg_cluster, unique_name, a, kafka_broker, tmp_path), "table.include.list": f"public.{a},public.{b}",
             "sparkcdc.stream.slots": "2", "sparkcdc.stream.slots.assignment": f"public.{a}:0,public.{b}:1"}
    checkpoint = tmp_path / "checkpoint"
    writer = ReaderKafkaBatchWriter(kafka_link(_config(props)))
    _run(spark, props, checkpoint, _Collect(writer))  # the snapshot
    with db.transaction():  # spans both slots
        db.execute(f"INSERT INTO {a} VALUES (10, 'x')")
        db.execute(f"INSERT INTO {b} VALUES (10, 'y')")
        db.execute(f"DELETE FROM {b} WHERE id = 1")
    db.execute(f"UPDATE {a} SET v = 'u' WHERE id = 2")
    _run(spark, props, checkpoint, _Collect(writer))
    last = committed_batches(checkpoint)[-1]
    assert writer.records_by_batch[last] == 5  # 2 creates, a delete and its tombstone, an update
    _forget(checkpoint, last)
    replayer = ReaderKafkaBatchWriter(kafka_link(_config(props)))
    _run(spark, props, checkpoint, _Collect(replayer))
    assert replayer.records_by_batch[last] == 5, "the replayed batch reports what the fence holds"

    assert _ops_by_key(consume(kafka_broker, [f"{unique_name}.public.{a}"])) == {
        **{i: ["r"] for i in range(1, 6)}, 2: ["r", "u"], 10: ["c"]}
    assert _ops_by_key(consume(kafka_broker, [f"{unique_name}.public.{b}"])) == {
        **{i: ["r"] for i in range(1, 6)}, 1: ["r", "d", "tombstone"], 10: ["c"]}
    ConnectorPlanner(ConnectorConfig({**props, "slot.drop.on.stop": "true"})).stop()


def _zstd_frames(path: Path) -> int:
    """How many zstd frames the file is made of, one after another."""
    import zstandard

    data, frames = path.read_bytes(), 0
    while data:
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        decompressor.decompress(data)
        data = decompressor.unused_data
        frames += 1
    return frames


def test_a_stream_decoded_in_two_processes_is_written_once_in_commit_order(
    spark: Any, db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path
) -> None:
    """``sparkcdc.stream.decode.processes=2`` through ``sparkcdc run``: chunks of a few transactions
    alternate between the processes (each compressed piece a zstd frame of the topic file), the
    replay of the output equals the tables, and a batch Spark runs again is published once."""
    tables = [f"{unique_name}_a", f"{unique_name}_b"]
    for table in tables:
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        db.execute(f"INSERT INTO {table} SELECT g, 'snap' || g FROM generate_series(1, 20) g")
    props = properties(pg_cluster, unique_name, [f"public.{t}" for t in tables], **{
        "sparkcdc.stream.decode.processes": "2", "sparkcdc.stream.decode.chunk.messages": "12",
        "sparkcdc.output.topic.files.compression": "zstd", "sparkcdc.state.location": str(tmp_path / "state")})
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_once(props, output, checkpoint)  # the snapshot

    def changes(base: int) -> None:
        a, b = tables
        for i in range(10):
            with db.transaction():
                db.execute(f"INSERT INTO {a} VALUES ({base + i}, 'x'), ({base + 100 + i}, 'y')")
                db.execute(f"UPDATE {b} SET v = 'u{base + i}' WHERE id = {i + 1}")
        db.execute(f"DELETE FROM {a} WHERE id <= 5")
        if base == 1000:  # a new Relation message, mid-stream; every row then carries the column
            db.execute(f"ALTER TABLE {b} ADD COLUMN n int DEFAULT 7")
            db.execute(f"UPDATE {b} SET v = v || '!'")
        db.execute(f"INSERT INTO {b} (id, v) SELECT g, 'late' FROM generate_series({base}, {base + 30}) g")

    changes(1000)
    run_once(props, output, checkpoint)
    streamed = sorted(max(p.glob("part-*.jsonl.zst")) for p in output.iterdir() if p.name.startswith("srv.public."))
    assert streamed and all(_zstd_frames(path) > 1 for path in streamed), "pieces from several chunks: frames of their own"
    changes(2000)
    run_once({**props, "lsn.flush.mode": "manual"}, output, checkpoint)  # published, and the commit is then lost
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    for file in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / file).unlink(missing_ok=True)
    run_once(props, output, checkpoint)
    lines = output_lines(output)
    positions = [(line["topic"], line["commit_lsn"], line["lsn"], line["ordinal"]) for line in lines]
    assert len(positions) == len(set(positions)), "each change once"
    for table in tables:
        assert replay(_events(output, table), ["id"]) == table_rows(db, table, ["id"]), table
