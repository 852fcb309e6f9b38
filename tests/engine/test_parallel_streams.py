"""Parallel streaming (``sparkcdc.stream.slots``) in the planner and the stream reader, without Spark:
what each stream emits of the records every slot could see (transaction metadata, logical decoding
messages, heartbeats). The Spark path and the replay are in tests/spark/test_parallel_streaming.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.core.stream_range import StreamRange
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.work import read_work_records


def test_each_stream_has_its_part_of_a_transaction_and_shared_records_come_once(
    db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path
) -> None:
    a, b = f"{unique_name}_a", f"{unique_name}_b"
    for table in (a, b):
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    config = ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
        "database.dbname": "postgres", "topic.prefix": "par", "slot.name": unique_name, "publication.name": unique_name,
        "publication.autocreate.mode": "filtered", "table.include.list": f"public.{a},public.{b}", "snapshot.mode": "no_data",
        "slot.drop.on.stop": "true", "provide.transaction.metadata": "true", "heartbeat.interval.ms": "1",
        "sparkcdc.stream.slots": "2", "sparkcdc.stream.slots.assignment": f"public.{a}:0,public.{b}:1",
    })
    planner = ConnectorPlanner(config, state_location=str(tmp_path / "state"))
    try:
        start = planner.initial_offset()
        with db.transaction():
            db.execute(f"INSERT INTO {a} VALUES (1), (2)")
            db.execute(f"INSERT INTO {b} VALUES (1)")
        db.execute("SELECT pg_logical_emit_message(false, 'par', 'hello')")
        end = planner.latest_offset(start)  # a heartbeat is due: the batch carries one
        work = planner.partitions(start, end)
        assert [(type(w), w.stream) for w in work] == [(StreamRange, 0), (StreamRange, 1)]
        streams = [list(read_work_records(config, w, run_id="r")) for w in work]
        planner.commit(end)
    finally:
        planner.stop()

    def of(records: list[Any], topic: str) -> list[Any]:
        return [r for r in records if r.topic == topic]

    first, second = streams
    assert [r.value["after"]["id"] for r in of(first, f"par.public.{a}")] == [1, 2] and not of(first, f"par.public.{b}")
    assert [r.value["after"]["id"] for r in of(second, f"par.public.{b}")] == [1] and not of(second, f"par.public.{a}")
    # Transaction metadata per stream: its own BEGIN and END, END counting only its part; both ENDs
    # name the transaction by its commit, so they carry one id.
    ends = [[r.value for r in of(records, "par.transaction") if r.value["status"] == "END"] for records in streams]
    assert [[end["event_count"] for end in stream] for stream in ends] == [[2], [1]]
    assert [[(c["data_collection"], c["event_count"]) for c in stream[0]["data_collections"]] for stream in ends] == [
        [(f"public.{a}", 2)], [(f"public.{b}", 1)]]
    assert ends[0][0]["id"] == ends[1][0]["id"]
    assert [len([r for r in of(records, "par.transaction") if r.value["status"] == "BEGIN"]) for records in streams] == [1, 1]
    # Every slot decodes the message and the heartbeat message; their records come from stream 0 only.
    assert [len(of(records, "par.message")) for records in streams] == [1, 0]
    assert [len(of(records, "__debezium-heartbeat.par")) for records in streams] == [1, 0]
