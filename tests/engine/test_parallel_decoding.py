"""A stream range decoded by several processes (``sparkcdc.stream.decode.processes``) gives the
records one process gives, in the same order: chunks and pieces made tiny here so that transactions
cross processes, a large transaction goes in pieces, a table first seen (and a column added) in one
process's chunk is known to the other's, and ``source.sequence`` follows commits and
non-transactional messages decoded elsewhere. Refusals name the property; a process's failure fails
the read with what it raised. The Spark path is in tests/spark/test_parallel_streaming.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine import wal_dispatcher
from sparkcdc.engine.core.emission import serializer_for
from sparkcdc.engine.core.metric_reports import metrics_location
from sparkcdc.engine.planner import ConnectorPlanner
from sparkcdc.engine.work import read_stream_encoded, read_work, read_work_records
from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.outputs import output_for
from sparkcdc.spark.outputs.changes.blocks import change_blocks
from sparkcdc.spark.outputs.changes.pieces import BlockPieceEncoder, piece_blocks
from sparkcdc.spark.outputs.registry import check_output_settings
from sparkcdc.spark.outputs.topic_files.task_files import TopicRunEncoder, write_topic_runs


def _config(pg_cluster: Any, name: str, tables: list[str], **extra: str) -> ConnectorConfig:
    return ConnectorConfig({
        "database.hostname": pg_cluster.host, "database.port": str(pg_cluster.port), "database.user": pg_cluster.user,
        "database.dbname": "postgres", "topic.prefix": "pd", "slot.name": name, "publication.name": name,
        "publication.autocreate.mode": "filtered", "table.include.list": ",".join(f"public.{t}" for t in tables),
        "snapshot.mode": "no_data", "slot.drop.on.stop": "true", "sparkcdc.output.layout": "topic_files",
        "sparkcdc.output.topic.files": "/unused", **extra,
    })


def _stable(line: bytes) -> dict[str, Any]:
    """A topic-file line without the envelope's own clock readings (the only fields that differ between reads)."""
    record = json.loads(line)
    for part in ("key", "value"):
        if isinstance(record.get(part), str):  # a line holds key and value as their JSON texts
            record[part] = json.loads(record[part])
    payload = (record.get("value") or {}).get("payload")
    if isinstance(payload, dict):
        for name in ("ts_ms", "ts_us", "ts_ns"):
            payload.pop(name, None)
    return record


def _sequential(config: ConnectorConfig, work: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for batch in read_work(config, work, run_id="r", lines=True, line_end=b"\n"):
        data, offsets = batch.line.data, batch.line.offsets
        for i, topic in enumerate(batch.topic):
            out.setdefault(topic, []).append(_stable(data[offsets[i]:offsets[i + 1]]))
    return out


def _parallel(config: ConnectorConfig, work: Any, output: Path, processes: int = 2) -> dict[str, list[dict[str, Any]]]:
    """The range read by ``processes`` processes, written as the topic_files layout's tasks write it."""
    placed = read_stream_encoded(config, work, run_id="r", processes=processes, encoder=TopicRunEncoder(serializer_for(config), "none"))
    assert placed is not None
    out: dict[str, list[dict[str, Any]]] = {}
    for summary in write_topic_runs(placed, output, 0):
        for topic, file, lines in zip(*(summary.column(i).to_pylist() for i in range(3)), strict=True):
            parsed = [_stable(line) for line in Path(file).read_bytes().splitlines()]
            assert len(parsed) == lines
            out[topic] = parsed
    return out


def test_several_processes_make_the_records_one_makes(
    db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_dispatcher, "PIECE_MESSAGES", 7)
    a, b = f"{unique_name}_a", f"{unique_name}_b"
    db.execute(f"CREATE TABLE {a} (id int PRIMARY KEY, v text)")
    db.execute(f"CREATE TABLE {b} (id int PRIMARY KEY, n numeric)")
    config = _config(pg_cluster, unique_name, [a, b], **{"provide.transaction.metadata": "true", "heartbeat.interval.ms": "1",
                                                          "sparkcdc.stream.decode.chunk.messages": "40",
                                                          "sparkcdc.stream.decode.processes": "2"})
    planner = ConnectorPlanner(config, state_location=str(tmp_path / "state"))
    try:
        start = planner.initial_offset()
        for t in range(30):  # small transactions: chunks end at commits, processes alternate
            db.execute(f"INSERT INTO {a} SELECT g, 'v' || g FROM generate_series({t * 10}, {t * 10 + 9}) g")
        db.execute(f"INSERT INTO {a} SELECT g, 'big' FROM generate_series(1000, 1400) g")  # one transaction in many pieces
        db.execute("SELECT pg_logical_emit_message(false, 'pd', 'between')")  # moves source.sequence
        db.execute(f"INSERT INTO {b} VALUES (1, 1.5)")  # a table first seen now: its Relation reaches both processes
        db.execute(f"ALTER TABLE {a} ADD COLUMN extra int")
        for t in range(10):
            with db.transaction():
                db.execute(f"UPDATE {a} SET v = 'u{t}', extra = {t} WHERE id BETWEEN {t * 10} AND {t * 10 + 4}")
                db.execute(f"DELETE FROM {a} WHERE id = {t * 10 + 9}")
                db.execute(f"UPDATE {b} SET n = n + 1 WHERE id = 1")
        db.execute(f"TRUNCATE {b}")
        end = planner.latest_offset(start)
        [work] = planner.partitions(start, end)
        one = _sequential(config, work)
        report_path = metrics_location(config, work.state_location) / "stream" / f"batch-{end['lsn']:020d}.json"
        report_one = json.loads(report_path.read_text())
        report_path.unlink()
        two = _parallel(config, work, tmp_path / "out")
        report_two = json.loads(report_path.read_text())
        planner.commit(end)
    finally:
        planner.stop()
    assert set(two) == set(one) and {f"pd.public.{a}", f"pd.public.{b}", "pd.transaction", "pd.message"} <= set(one)
    for topic in one:
        assert two[topic] == one[topic], topic
    assert len(one[f"pd.public.{a}"]) == 300 + 401 + 10 * (5 + 2)  # inserts, the big one, updates, deletes + tombstones
    assert any(r["value"]["payload"]["after"] and "extra" in r["value"]["payload"]["after"] for r in one[f"pd.public.{a}"])
    for name in ("events", "created", "updated", "deleted", "truncated", "messages", "transactions", "last_lsn", "last_commit_lsn",
                 "last_tx_id", "last_event"):
        assert report_two[name] == report_one[name], name


def test_refused_where_the_processes_cannot_work(pg_cluster: Any) -> None:
    given = _config(pg_cluster, "x", ["t"], **{"sparkcdc.stream.decode.processes": "2", "sparkcdc.output.layout": "lines"}).raw
    # without the topic files directory, another of the topic_files output's own properties (refused first otherwise)
    lines = ConnectorConfig({name: value for name, value in given.items() if name != "sparkcdc.output.topic.files"})
    with pytest.raises(ConfigurationError, match="sparkcdc.stream.decode.processes"):
        check_output_settings(lines)  # the topic_files output's own property
    with pytest.raises(ConfigurationError, match="signal.data.collection"):  # refused as the configuration is built
        _config(pg_cluster, "x", ["t"], **{"sparkcdc.stream.decode.processes": "2", "signal.data.collection": "public.sig"})
    assert _config(pg_cluster, "x", ["t"], **{"sparkcdc.stream.decode.processes": "3"}).settings.sparkcdc_stream_decode_processes == 3
    with pytest.raises(ConfigurationError, match="sparkcdc.stream.decode.chunk.messages"):
        _config(pg_cluster, "x", ["t"], **{"sparkcdc.stream.decode.chunk.messages": "100", "sparkcdc.stream.decode.processes": "1"})


class _EncodingFails(TopicRunEncoder):
    def encode(self, records: Any) -> Any:
        raise ValueError(f"cannot encode {len(list(records))} records")


def test_a_process_failure_fails_the_read_with_what_it_raised(
    db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path
) -> None:
    db.execute(f"CREATE TABLE {unique_name} (id int PRIMARY KEY)")
    config = _config(pg_cluster, unique_name, [unique_name], **{"sparkcdc.stream.decode.chunk.messages": "10",
                                                                     "sparkcdc.stream.decode.processes": "2"})
    planner = ConnectorPlanner(config, state_location=str(tmp_path / "state"))
    try:
        start = planner.initial_offset()
        db.execute(f"INSERT INTO {unique_name} SELECT generate_series(1, 50)")
        end = planner.latest_offset(start)
        [work] = planner.partitions(start, end)
        # Under a chunk's worth of WAL with the default chunk, the task reads the range itself.
        assert read_stream_encoded(_config(pg_cluster, unique_name, [unique_name]), work, run_id="r", processes=2,
                                   encoder=TopicRunEncoder(serializer_for(config), "none")) is None
        placed = read_stream_encoded(config, work, run_id="r", processes=2, encoder=_EncodingFails(serializer_for(config), "none"))
        assert placed is not None
        with pytest.raises(ValueError, match="cannot encode 50 records"):
            list(placed)
        assert not (Path(work.state_location) / f"state-{end['lsn']:020d}.json").exists(), "a failed read leaves no state"
    finally:
        planner.stop()


def _blocks_by_table(batches: Any) -> dict[str, dict[str, Any]]:
    """Per table, the changes of its blocks in the order the blocks come (each block's IPC stream
    decoded) and the header counts, from record batches of the ``changes`` layout's rows."""
    out: dict[str, dict[str, Any]] = {}
    for batch in batches:
        for row in batch.to_pylist():
            table = out.setdefault(f"{row['schema']}.{row['table']}", {"rows": [], "counts": [0, 0, 0, 0], "shapes": set()})
            changes = pa.ipc.open_stream(row["block"]).read_all()
            assert changes.num_rows == row["rows"]
            assert (changes.column("__commit_lsn")[0].as_py(), changes.column("__lsn")[0].as_py(), changes.column("__op")[0].as_py()) == (
                row["commit_lsn"], row["lsn"], row["op"]), "a block's header row is its first change's"
            table["rows"] += changes.to_pylist()
            for i, name in enumerate(("rows", "truncates", "key_changes", "partial_key_changes")):
                table["counts"][i] += row[name]
            table["shapes"].add(row["shape"])
    return out


def test_the_changes_layout_makes_the_blocks_one_process_makes(
    db: psycopg.Connection, pg_cluster: Any, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """apply_changes' source (``sparkcdc.output.layout=changes``) decoded in two processes: every table's
    changes, in their order, with their header counts (truncates, key changes, key changes lacking a
    TOASTed value) and versions, as one process makes them; tiny chunks and pieces, so that
    transactions, a large one, a key change, an unchanged TOASTed value and a truncate cross processes."""
    monkeypatch.setattr(wal_dispatcher, "PIECE_MESSAGES", 7)
    a, b = f"{unique_name}_a", f"{unique_name}_b"
    db.execute(f"CREATE TABLE {a} (id int PRIMARY KEY, v text, doc text)")
    db.execute(f"ALTER TABLE {a} ALTER COLUMN doc SET STORAGE EXTERNAL")  # stored out of line: TOASTed, unchanged when not set
    db.execute(f"CREATE TABLE {b} (id int PRIMARY KEY, n numeric)")
    given = {"sparkcdc.output.layout": "changes", "sparkcdc.stream.decode.chunk.messages": "40", "skipped.operations": "none"}
    config = ConnectorConfig({name: value for name, value in _config(pg_cluster, unique_name, [a, b], **given).raw.items()
                              if name != "sparkcdc.output.topic.files"})
    assert output_for(config).decoding_processes(config) == min(len(os.sched_getaffinity(0)), 4)  # auto: the cores
    planner = ConnectorPlanner(config, state_location=str(tmp_path / "state"))
    try:
        start = planner.initial_offset()
        for t in range(30):  # small transactions over both tables: chunks end at commits, processes alternate
            with db.transaction():
                db.execute(f"INSERT INTO {a} SELECT g, 'v' || g, repeat('d', 3000) FROM generate_series({t * 10}, {t * 10 + 9}) g")
                db.execute(f"INSERT INTO {b} VALUES ({t}, {t}.5)")
        db.execute(f"INSERT INTO {a} SELECT g, 'big', NULL FROM generate_series(1000, 1400) g")  # one transaction in many pieces
        db.execute(f"UPDATE {a} SET v = 'toast kept' WHERE id < 50")  # doc unchanged: not in the WAL record
        db.execute(f"UPDATE {a} SET id = id + 5000 WHERE id BETWEEN 50 AND 59")  # key changes (delete + create)
        db.execute(f"ALTER TABLE {b} ADD COLUMN extra int")
        db.execute(f"UPDATE {b} SET extra = id, n = n + 1")
        db.execute(f"DELETE FROM {a} WHERE id BETWEEN 1000 AND 1099")
        db.execute(f"TRUNCATE {b}")
        end = planner.latest_offset(start)
        [work] = planner.partitions(start, end)
        one = _blocks_by_table(change_blocks(read_work_records(config, work, run_id="r"), config))
        pieces = read_stream_encoded(config, work, run_id="r", processes=2, encoder=BlockPieceEncoder(config))
        assert pieces is not None, "a range of many chunks is decoded in the processes"
        two = _blocks_by_table(piece_blocks(pieces))
        planner.commit(end)
    finally:
        planner.stop()
    assert set(two) == set(one) == {f"public.{a}", f"public.{b}"}
    for table in one:
        assert two[table]["rows"] == one[table]["rows"], table
        assert two[table]["counts"] == one[table]["counts"], table
        assert two[table]["shapes"] == one[table]["shapes"], table
    rows_a, rows_b = one[f"public.{a}"], one[f"public.{b}"]
    assert rows_a["counts"][0] == 300 + 401 + 50 + 20 + 100 and rows_a["counts"][2] == 10  # key changes: their creates
    assert any(change["__unchanged"] for change in rows_a["rows"]), "updates that left the TOASTed column out"
    assert rows_b["counts"][1] == 1 and len(rows_b["shapes"]) == 2  # the truncate; the version before and after ADD COLUMN
