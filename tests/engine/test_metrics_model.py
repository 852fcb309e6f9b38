"""The metrics model folds task and planner reports into Debezium's attributes. No Spark, no server:
the reports are written as the tasks write them."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.engine.core.metric_reports import ChunkReporter, StreamReporter, read_json
from sparkcdc.engine.core.metrics import ATTRIBUTES, SNAPSHOT, STREAMING, ConnectorMetrics
from sparkcdc.engine.snapshot_plan import SnapshotChunk


def _chunk(index: int, count: int, table: str = "t", table_index: int = 0) -> SnapshotChunk:
    return SnapshotChunk("snap-1", "00000003-00000002-1", 100, 7, 1_000, "public", table, table_index, 2, index, count,
                         index * 10, None if index == count - 1 else (index + 1) * 10, (), None, ("id",))


class _Record:
    def __init__(self, op: str, commit_lsn: int, ts_us: int, table: str = "t") -> None:
        self.op, self.commit_lsn, self.lsn, self.tx_id, self.source_ts_us = op, commit_lsn, commit_lsn - 1, 42, ts_us
        self.schema, self.table, self.topic = "public", table, f"srv.public.{table}"


def test_snapshot_rows_and_tables_from_chunk_reports(tmp_path: Path) -> None:
    first, second = ChunkReporter(tmp_path, _chunk(0, 2)), ChunkReporter(tmp_path, _chunk(1, 2))
    first.add(10_000)  # a report every 10,000 rows, as Debezium's RowsScanned
    second.add(5)
    first.finish()
    chunks = [read_json(p) for p in sorted((tmp_path / "snapshot-snap-1").glob("*.json"))]
    metrics = ConnectorMetrics("srv")
    plan = {"snapshot": "snap-1", "kind": "initial", "started_ms": 1_000, "tables": ["public.t", "public.u"]}
    metrics.fold_snapshot(plan, chunks)
    running = metrics.snapshot_attributes(now_ms=4_500)
    assert running["RowsScanned"] == {"public.t": 10_000, "public.u": 0}  # the second chunk reported at its start only
    assert (running["TotalTableCount"], running["RemainingTableCount"]) == (2, 2)
    assert running["SnapshotRunning"] and not running["SnapshotCompleted"]
    assert running["SnapshotDurationInSeconds"] == 3
    second.finish()
    chunks = [read_json(p) for p in sorted((tmp_path / "snapshot-snap-1").glob("*.json"))]
    metrics.fold_snapshot(plan, chunks)
    assert metrics.snapshot_attributes(now_ms=5_000)["RemainingTableCount"] == 1  # public.t done, public.u not
    metrics.fold_snapshot({**plan, "completed_ms": 6_000}, chunks)
    done = metrics.snapshot_attributes(now_ms=9_000)
    assert done["SnapshotCompleted"] and not done["SnapshotRunning"] and done["RemainingTableCount"] == 0
    assert done["SnapshotDurationInSeconds"] == 5 and done["TotalNumberOfEventsSeen"] == 10_005


def test_stream_reports_counted_once_per_batch(tmp_path: Path) -> None:
    report = StreamReporter(tmp_path, 100, 200, None)
    records = [_Record("c", 150, 1_000_000), _Record("u", 150, 1_000_000), _Record("d", 180, 2_000_000)]
    assert list(report.count(records)) == records
    report.finish()
    content = read_json(tmp_path / "stream" / f"batch-{200:020d}.json")
    assert content is not None
    metrics = ConnectorMetrics("srv")
    metrics.fold_stream_batch(content, now_ms=10_000)
    values = metrics.streaming_attributes(now_ms=10_000)
    assert (values["TotalNumberOfEventsSeen"], values["TotalNumberOfCreateEventsSeen"], values["TotalNumberOfUpdateEventsSeen"],
            values["TotalNumberOfDeleteEventsSeen"], values["NumberOfCommittedTransactions"]) == (3, 1, 1, 1, 2)
    assert values["MilliSecondsBehindSource"] == content["last_event_ms"] - 2_000  # the last event's commit time
    assert values["LastTransactionId"] == "42" and values["SourceEventPosition"]["lsn"] == "179"


def test_every_attribute_of_the_manual_tables() -> None:
    names = {(a.context, a.name) for a in ATTRIBUTES}
    metrics = ConnectorMetrics("srv")
    for context in (SNAPSHOT, STREAMING):
        assert {n for c, n in names if c == context} == set(metrics.attributes(context, 0))


def test_incremental_snapshot_attributes_from_the_offsets_state(tmp_path: Path) -> None:
    from sparkcdc.engine.core.incremental import ChunkWindow, IncrementalState, SnapshotCollection
    from sparkcdc.engine.core.metric_reports import incremental_summary

    chunk = ChunkWindow("w-1", "public", "a", ("id",), ("int4",), ("100",), ("200",), None, "00000003-00000002-1", 2)
    state = IncrementalState("sig-1", (SnapshotCollection("public", "a"), SnapshotCollection("public", "b")), ("100",), ("900",),
                             chunk=chunk, chunks=2, rows=200)
    report = StreamReporter(tmp_path, 100, 300, incremental_summary(state))
    list(report.count([_Record("r", 0, 1, table="a")] * 100 + [_Record("c", 250, 2_000_000)]))
    report.finish()
    content = read_json(tmp_path / "stream" / f"batch-{300:020d}.json")
    assert content is not None
    metrics = ConnectorMetrics("srv")
    metrics.fold_stream_batch(content, now_ms=5_000)
    running = metrics.snapshot_attributes(now_ms=7_000)
    assert running["SnapshotRunning"] and not running["SnapshotCompleted"]
    assert (running["TotalTableCount"], running["RemainingTableCount"]) == (2, 2)
    assert running["RowsScanned"] == {"public.a": 100} and running["TotalNumberOfEventsSeen"] == 100
    assert (running["ChunkId"], running["ChunkFrom"], running["ChunkTo"], running["TableTo"]) == ("sig-1-2", '["100"]', '["200"]', '["900"]')
    assert metrics.streaming_attributes(now_ms=7_000)["TotalNumberOfEventsSeen"] == 1  # the reads are the snapshot's, not the stream's
    metrics.fold_stream_batch({**content, "incremental": None, "read_rows": {}, "events": 0}, now_ms=9_000)
    done = metrics.snapshot_attributes(now_ms=10_000)
    assert done["SnapshotCompleted"] and not done["SnapshotRunning"] and done["SnapshotDurationInSeconds"] == 4
