"""The metrics' way from the processes that do the work to the one that publishes them.

Executor tasks read the snapshot chunks and the stream, the planner (in Spark's driver-side Python
worker) decides snapshots, and ``sparkcdc run`` (or a user's driver) publishes the metrics: three
kinds of process, possibly on three machines. They already share one directory, the streaming
state location (``sparkcdc.state.location``, which every executor must reach), so the counts
travel as small JSON *reports* under ``<state location>/metrics``, each written atomically
(write, then rename) and rewritten, never appended:

* ``connector.json`` (planner): the captured tables.
* ``snapshot-<id>.json`` (planner): a snapshot's tables, start, completion.
* ``snapshot-<id>/chunk-<table>-<chunk>.json`` (task): the rows a chunk has read so far, rewritten
  every 10,000 rows (Debezium's RowsScanned cadence) or second, and when the chunk ends.
* ``stream/batch-<end LSN>.json`` (task): a streaming micro-batch's counts, written when its read
  ends. A re-executed batch rewrites its own file, so it is never counted twice. With parallel
  streaming (``sparkcdc.stream.slots``) stream i > 0 writes ``stream/batch-<end LSN>-<i>.json``.

:class:`~sparkcdc.engine.core.metrics.ConnectorMetrics` folds them. Writing a report never fails the
work: a report that cannot be written is logged once and skipped (metrics are not data).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from ...debezium.config import ConnectorConfig
from .state_store import default_state_location

__all__ = [
    "ChunkReporter",
    "StreamReporter",
    "complete_snapshot_reports",
    "counted_chunk",
    "incremental_summary",
    "metrics_location",
    "prune_snapshot_reports",
    "prune_stream_reports",
    "read_json",
    "stream_report_lsn",
    "write_json",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Debezium updates RowsScanned every 10,000 rows; a task rewrites its chunk's report as often (or each second).
REPORT_ROWS = 10_000
REPORT_SECONDS = 1.0

_warned = False


def metrics_location(config: ConnectorConfig, state_location: str | os.PathLike[str] | None = None) -> Path:
    """``<state location>/metrics``: the state location as the planner resolves it."""
    base = state_location or config.settings.sparkcdc_state_location or default_state_location(
        config.settings.database_dbname, config.settings.slot_name)
    return Path(base) / "metrics"


def write_json(path: Path, content: dict[str, Any]) -> None:
    """``content`` at ``path`` atomically; an I/O failure is logged (once per process), not raised."""
    global _warned
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".tmp-", delete=False, encoding="utf-8") as handle:
            json.dump(content, handle)
            temporary = handle.name
        os.replace(temporary, path)
    except OSError as exc:
        if not _warned:
            _warned = True
            log.warning("cannot write the metrics report %s (metrics will be incomplete): %s", path, exc)


def read_json(path: Path) -> dict[str, Any] | None:
    """A report, or None when it is missing or (being replaced on a file system without atomic
    rename) unreadable for a moment."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ChunkReporter:
    """A snapshot chunk's report, rewritten as its rows are read."""

    def __init__(self, location: Path, chunk: Any) -> None:
        self.path = location / f"snapshot-{chunk.snapshot_id}" / f"chunk-{chunk.table_index:05d}-{chunk.chunk_index:06d}.json"
        self.table = f"{chunk.schema}.{chunk.table}"
        self.base = {"snapshot": chunk.snapshot_id, "kind": chunk.kind, "table": self.table, "table_index": chunk.table_index,
                     "table_count": chunk.table_count, "chunk_index": chunk.chunk_index, "chunk_count": chunk.chunk_count}
        self.rows = 0
        self._reported_rows = 0
        self._reported_at = time.monotonic()
        self._write(done=False)

    def add(self, rows: int) -> None:
        self.rows += rows
        if self.rows - self._reported_rows >= REPORT_ROWS or time.monotonic() - self._reported_at >= REPORT_SECONDS:
            self._write(done=False)

    def finish(self) -> None:
        self._write(done=True)

    def _write(self, *, done: bool) -> None:
        self._reported_rows, self._reported_at = self.rows, time.monotonic()
        last = f"{self.table} row {self.rows}" if self.rows else ""
        write_json(self.path, {**self.base, "rows": self.rows, "done": done, "updated_ms": _now_ms(), "last_event": last})


def counted_chunk(location: Path, chunk: Any, items: Iterable[T], size: Callable[[T], int]) -> Iterator[T]:
    """``items`` (a chunk's rows, records or batches of ``size`` rows each), reported as they pass."""
    reporter = ChunkReporter(location, chunk)
    for item in items:
        reporter.add(size(item))
        yield item
    reporter.finish()


class LastEvent(NamedTuple):
    """The latest event a stream batch handed on, as its report names it."""

    lsn: int | None
    commit_lsn: int | None
    tx_id: int | None
    source_ts_us: int | None
    topic: str
    op: str


class StreamReporter:
    """Counts a streaming micro-batch's records as they pass; writes its report at the end."""

    def __init__(self, location: Path, start_lsn: int, end_lsn: int, incremental: dict[str, Any] | None, stream: int = 0) -> None:
        self.path = location / "stream" / (f"batch-{end_lsn:020d}-{stream}.json" if stream else f"batch-{end_lsn:020d}.json")
        self.start_lsn, self.end_lsn = start_lsn, end_lsn
        self.incremental = incremental
        self.ops: dict[str, int] = {}
        self.read_rows: dict[str, int] = {}
        self.transactions = 0
        self.last: Any = None
        self.last_ms = 0
        self.erroneous = 0
        self.filtered = 0
        self._last_commit = -1  # a transaction counted across calls of count() is counted once

    def count(self, records: Iterable[T]) -> Iterator[T]:
        """``records``, counted as they pass (per record: keep this loop lean, it runs once per change)."""
        ops = self.ops
        last = None
        last_commit = self._last_commit
        transactions = 0
        for record in records:
            op = record.op  # type: ignore[attr-defined]
            if op is not None:
                if op == "r":
                    table = f"{record.schema}.{record.table}"  # type: ignore[attr-defined]
                    self.read_rows[table] = self.read_rows.get(table, 0) + 1
                else:
                    ops[op] = ops.get(op, 0) + 1
                    last = record
                    commit = record.commit_lsn  # type: ignore[attr-defined]
                    if commit != last_commit:  # a batch's changes arrive in commit order
                        transactions += 1
                        last_commit = commit
            yield record
        self.transactions += transactions
        self._last_commit = last_commit
        if last is not None:
            self.last = LastEvent(last.lsn, last.commit_lsn, last.tx_id, last.source_ts_us, last.topic, last.op)  # type: ignore[attr-defined]
            self.last_ms = _now_ms()  # when the batch's last event was handed on: "processed"

    def counts(self) -> dict[str, Any]:
        """What this reporter counted, to be added to another's (:meth:`add`): a parallel reader's
        decoding processes count their share of the batch (engine/parallel_stream.py)."""
        return {"ops": self.ops, "read_rows": self.read_rows, "transactions": self.transactions, "erroneous": self.erroneous,
                "filtered": self.filtered}

    def add(self, counts: dict[str, Any]) -> None:
        """Add another reporter's :meth:`counts`."""
        for name in ("ops", "read_rows"):
            mine = getattr(self, name)
            for key, value in counts[name].items():
                mine[key] = mine.get(key, 0) + value
        self.transactions += counts["transactions"]
        self.erroneous += counts["erroneous"]
        self.filtered += counts["filtered"]

    def finish(self) -> None:
        ops, last = self.ops, self.last
        events = sum(ops.values())
        report: dict[str, Any] = {
            "start_lsn": self.start_lsn, "end_lsn": self.end_lsn, "events": events, "created": ops.get("c", 0),
            "updated": ops.get("u", 0), "deleted": ops.get("d", 0), "truncated": ops.get("t", 0), "messages": ops.get("m", 0),
            "erroneous": self.erroneous, "filtered": self.filtered, "transactions": self.transactions, "read_rows": self.read_rows,
            "incremental": self.incremental, "updated_ms": _now_ms(),
        }
        if last is not None:
            ts_us = last.source_ts_us
            report.update(
                last_lsn=last.lsn, last_commit_lsn=last.commit_lsn, last_tx_id=last.tx_id, last_source_ts_us=ts_us,
                last_event_ms=self.last_ms, behind_ms=max(0, self.last_ms - ts_us // 1000) if ts_us else -1,
                last_event=f"{last.topic} op={last.op} lsn={last.lsn}",
            )
        write_json(self.path, report)


def stream_report_lsn(path: Path) -> int | None:
    """The end LSN a stream report's file name carries."""
    try:
        return int(path.stem.split("-")[1])
    except (IndexError, ValueError):
        return None


def incremental_summary(state: Any) -> dict[str, Any] | None:
    """What the incremental-snapshot metrics need of an offset's ``IncrementalState``."""
    if state is None:
        return None
    chunk = state.chunk
    current = state.current
    return {
        "id": state.id,
        "tables": [f"{c.schema}.{c.table}" for c in state.collections],
        "remaining": len(state.collections),
        "paused": state.paused,
        "table": "" if current is None else f"{current.schema}.{current.table}",
        "chunk_id": "" if chunk is None else f"{state.id}-{chunk.index}",
        "chunk_from": "" if chunk is None or chunk.after is None else json.dumps(list(chunk.after), default=str),
        "chunk_to": "" if chunk is None else json.dumps(list(chunk.upto), default=str),
        "table_from": "",
        "table_to": "" if state.max_key is None else json.dumps(list(state.max_key), default=str),
    }


def prune_stream_reports(location: Path, before_lsn: int, older_than_s: float = 300.0) -> None:
    """Drop stream reports of batches before ``before_lsn`` written more than ``older_than_s`` ago:
    the publisher reads them within a second or two; without one they would pile up."""
    folder = location / "stream"
    if not folder.is_dir():
        return
    limit = time.time() - older_than_s
    for path in folder.glob("batch-*.json"):
        lsn = stream_report_lsn(path)
        try:
            if lsn is not None and lsn < before_lsn and path.stat().st_mtime < limit:
                path.unlink(missing_ok=True)
        except OSError:
            continue


def complete_snapshot_reports(location: Path) -> None:
    """Mark completed the snapshot reports an earlier run left open although their batch was
    committed (the caller knows: it streams on from past them), at the time their last chunk report
    was written (else now)."""
    for path in location.glob("snapshot-*.json"):
        report = read_json(path)
        if report is None or report.get("completed_ms") is not None or report.get("aborted"):
            continue
        chunks = [c for c in (read_json(chunk) for chunk in (location / path.stem).glob("chunk-*.json")) if c]
        completed = max((int(c.get("updated_ms", 0)) for c in chunks), default=0) or _now_ms()
        write_json(path, {**report, "completed_ms": completed})


def prune_snapshot_reports(location: Path, keep: str) -> None:
    """Drop the reports of every snapshot but ``keep`` (a new snapshot resets the snapshot metrics, as in Debezium)."""
    import shutil

    for path in location.glob("snapshot-*"):
        if path.name in (f"snapshot-{keep}", f"snapshot-{keep}.json"):
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
