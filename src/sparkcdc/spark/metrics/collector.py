"""The connector's metrics as the driver sees them: Debezium's attributes and sparkcdc's extras.

:class:`MetricsCollector` gathers what the tasks and the planner reported (see
:mod:`sparkcdc.engine.core.metric_reports`) into :class:`~sparkcdc.engine.core.metrics.ConnectorMetrics`,
adds what only the driver knows (the slot as the server sees it, the last batch Spark committed,
whether the server answers), and refreshes it all every ``interval`` seconds on a thread of its own.

The figures are published by :mod:`.prometheus` (``sparkcdc run --metrics-port``) and shown by
progress displays; in a query of your own, :class:`~.listener.CdcMetricsListener` keeps a collector
(see docs/metrics.md).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...debezium.config import ConnectorConfig
from ...debezium.metric_tags import mbean_name, metric_tags
from ...engine.core.metric_reports import metrics_location, read_json, stream_report_lsn
from ...engine.core.metrics import SNAPSHOT, STREAMING, ConnectorMetrics
from ...engine.core.stream_slots import stream_slots

__all__ = ["MetricsCollector", "report_location"]

log = logging.getLogger(__name__)

#: The connector's slots as one (several with sparkcdc.stream.slots): the worst WAL status, the most
#: WAL retained and pending, active only if all are, the least safe size. On a standby WAL is measured
#: from the last replayed position (pg_current_wal_lsn() fails in recovery).
_SLOT_QUERY = """
WITH here AS (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END AS lsn)
SELECT (array_agg(wal_status ORDER BY array_position(ARRAY['reserved', 'extended', 'unreserved', 'lost'], wal_status)
                  DESC NULLS LAST))[1],
       max(pg_wal_lsn_diff((SELECT lsn FROM here), restart_lsn))::bigint,
       max(pg_wal_lsn_diff((SELECT lsn FROM here), confirmed_flush_lsn))::bigint, bool_and(active), min(safe_wal_size)
  FROM pg_replication_slots WHERE slot_name = ANY(%s) HAVING count(*) > 0
"""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MetricsCollector:
    """The metrics of one connector, as the driver sees them. Thread-safe: ``snapshot()`` may be
    called from a scrape while the refresh thread folds new reports."""

    def __init__(self, config: ConnectorConfig | Mapping[str, Any], *, state_location: str | None = None,
                 interval: float = 0.5, poll_server: bool = True, remote: str | None = None) -> None:
        if not isinstance(config, ConnectorConfig):
            config = ConnectorConfig(config)
        self.config = config
        self.location = metrics_location(config, state_location)
        notes: list[str] = []
        #: custom.metric.tags: appended to Debezium's MBean names there, labels of every sample here.
        self.tags = metric_tags(config.settings.custom_metric_tags, notes)
        for note in notes:
            log.warning("%s", note)
        #: The Spark Connect server the query runs on (``sparkcdc run --remote``): the reports are then
        #: written on the server's side, and this process sees them only through a shared file system.
        self.remote = remote
        #: Whether this process finds the planner's reports: None until Spark committed a batch (the
        #: planner has written ``connector.json`` by then, wherever it runs).
        self.reports_found: bool | None = None
        self.model = ConnectorMetrics(config.topic_prefix, queue_capacity=config.settings.max_queue_size,
                                      max_queue_bytes=config.settings.max_queue_size_in_bytes)
        self.interval = interval
        self.poll_server = poll_server
        self.query: Any = None
        self.slot: dict[str, Any] = {}
        self.server_ok = False
        self.last_batch_id: int | None = None
        self.last_batch_end_lsn: int | None = None
        self.commit_lag_seconds: float | None = None
        #: The planner's row estimates (pg_class.reltuples) of the running snapshot's tables, for progress displays.
        self.table_estimates: dict[str, int] = {}
        self._estimated_snapshot: str | None = None
        self.started_ms = _now_ms()
        self._folded: set[str] = set()  # the stream reports folded (file names; one per batch and stream)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- feeding ---------------------------------------------------------------------------------
    def attach(self, query: Any) -> None:
        """Follow ``query`` (a StreamingQuery): its committed batches and whether it runs."""
        self.query = query

    def observe_progress(self, progress: Mapping[str, Any]) -> None:
        """A StreamingQueryProgress (as a dict) of a batch Spark completed and committed."""
        batch = progress.get("batchId")
        if batch is None or batch == self.last_batch_id:
            return
        end_lsn = None
        for source in progress.get("sources") or ():
            end = source.get("endOffset")
            if isinstance(end, str):
                try:
                    end = json.loads(end)
                except ValueError:
                    end = None
            if isinstance(end, dict) and "lsn" in end:
                end_lsn = int(end["lsn"])
        with self._lock:
            self.last_batch_id = int(batch)
            self.last_batch_end_lsn = end_lsn
            if end_lsn is not None:
                # every stream's report of the batch (sparkcdc.stream.slots): the latest event of any of them
                reports = [read_json(path) for path in (self.location / "stream").glob(f"batch-{end_lsn:020d}*.json")]
                ts_us = max((int(r["last_source_ts_us"]) for r in reports if r and r.get("last_source_ts_us")), default=None)
                if ts_us:
                    self.commit_lag_seconds = max(0.0, (time.time_ns() // 1000 - int(ts_us)) / 1e6)

    def refresh(self) -> None:
        """Fold what the reports say now, and ask the server about the slot."""
        now = _now_ms()
        connector = read_json(self.location / "connector.json")
        plans = [p for p in (read_json(path) for path in self.location.glob("snapshot-*.json")) if p and p.get("snapshot")]
        plans = [p for p in plans if int(p.get("started_ms", 0)) >= self.started_ms - 86_400_000]
        plan = max(plans, key=lambda p: int(p["started_ms"]), default=None)
        chunks = []
        if plan is not None:
            folder = self.location / f"snapshot-{plan['snapshot']}"
            chunks = [c for c in (read_json(path) for path in sorted(folder.glob("chunk-*.json"))) if c]
        listed = {path.name: path for path in (self.location / "stream").glob("batch-*.json")}
        stream = sorted((lsn, name, path) for name, path in listed.items()
                        if name not in self._folded and (lsn := stream_report_lsn(path)) is not None)
        reports = [(name, r) for _lsn, name, path in stream if (r := read_json(path)) is not None]
        progress = None
        if self.query is not None:
            try:
                progress = self.query.lastProgress
            except Exception:  # noqa: BLE001 - a stopped or restarting query answers nothing
                progress = None
        with self._lock:
            if connector:
                self.model.fold_connector(connector)
            if plan is not None:
                self.model.fold_snapshot(plan, chunks)
            # Pruned reports leave the set with their files (the planner prunes only what was folded long ago).
            self._folded &= listed.keys()
            for name, report in reports:
                self.model.fold_stream_batch(report, now)
                self._folded.add(name)
        if progress:
            self.observe_progress(progress)
        self._check_reports(connector is not None)
        if self.poll_server:
            self._poll_slot()
        with self._lock:
            self.model.connected = self.server_ok and self._query_active()

    def _check_reports(self, found: bool) -> None:
        """Once Spark committed a batch the planner has written its reports: if this process does not
        see them, the state location it reads is not the one the planner and the tasks wrote (another
        machine's, a Spark Connect server's), and the metrics would stay at zero without a word."""
        if self.last_batch_id is None or self.reports_found is not None and (self.reports_found or not found):
            return
        self.reports_found = found
        if found:
            return
        where = (f"the Spark Connect server ({self.remote}) and its executors" if self.remote
                 else "Spark's driver and executors")
        log.warning(
            "metrics: Spark committed batch %s but there is no metric report under %s: %s write them under "
            "sparkcdc.state.location (%s) on their own file system, which this process does not share; mount that "
            "directory here at the same path (or set sparkcdc.state.location to one both sides mount), or the Debezium "
            "metrics stay empty (docs/metrics.md)", self.last_batch_id, self.location, where, self.location.parent)

    def _query_active(self) -> bool:
        if self.query is None:
            return True
        try:
            return bool(self.query.isActive)
        except Exception:  # noqa: BLE001
            return False

    def _poll_slot(self) -> None:
        try:
            if self._conn is None or self._conn.closed:
                from ...engine.connection import sql_connection

                self._conn = sql_connection(self.config, autocommit=True, application_name="sparkcdc-metrics")
            row = self._conn.execute(_SLOT_QUERY, ([stream.slot for stream in stream_slots(self.config)],)).fetchone()
            slot = {} if row is None else {"wal_status": row[0], "retained_bytes": row[1], "pending_bytes": row[2],
                                           "active": bool(row[3]), "safe_wal_size": row[4]}
            self._estimate_tables()
            ok = True
        except Exception as exc:  # noqa: BLE001 - a server that went away is what Connected reports
            log.debug("metrics: the server did not answer: %s", exc)
            self._close_connection()
            slot, ok = {}, False
        with self._lock:
            self.slot, self.server_ok = slot, ok

    def _estimate_tables(self) -> None:
        """Once per snapshot: its tables' row estimates (``reltuples``; unknown before an ANALYZE)."""
        snapshot = self.model.snapshot
        if snapshot is None or snapshot.id == self._estimated_snapshot:
            return
        rows = self._conn.execute(
            "SELECT n.nspname || '.' || c.relname, c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname || '.' || c.relname = ANY(%s)", (list(snapshot.tables),)).fetchall()
        estimates = {str(name): int(count) for name, count in rows if count is not None and count >= 0}
        with self._lock:
            self.table_estimates, self._estimated_snapshot = estimates, snapshot.id

    def _close_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

    # -- reading ---------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything, as plain data: ``snapshot`` and ``streaming`` (Debezium's attributes by name),
        ``sparkcdc`` (the extras), ``tags`` (custom.metric.tags) and ``mbeans`` (the MBean name
        Debezium gives each context's attributes, the tags appended)."""
        now = _now_ms()
        with self._lock:
            return {
                SNAPSHOT: self.model.snapshot_attributes(now),
                STREAMING: self.model.streaming_attributes(now),
                "tags": dict(self.tags),
                "mbeans": {context: mbean_name(context, self.model.connector_name, self.tags) for context in (SNAPSHOT, STREAMING)},
                "sparkcdc": {
                    "slot_retained_wal_bytes": self.slot.get("retained_bytes"),
                    "slot_pending_wal_bytes": self.slot.get("pending_bytes"),
                    "slot_wal_status": self.slot.get("wal_status"),
                    "slot_safe_wal_size_bytes": self.slot.get("safe_wal_size"),
                    "commit_lag_seconds": self.commit_lag_seconds,
                    "last_committed_batch_id": self.last_batch_id,
                    "last_committed_batch_end_lsn": self.last_batch_end_lsn,
                    "table_estimates": dict(self.table_estimates),
                    "snapshot_tables_done": self.model.tables_done(),
                    "metric_reports_found": self.reports_found,
                },
            }

    # -- the refresh thread ----------------------------------------------------------------------
    def start(self) -> MetricsCollector:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sparkcdc-metrics", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - metrics must never stop the pipeline
                log.warning("metrics: refresh failed", exc_info=True)
            self._stop.wait(self.interval)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._close_connection()


def report_location(config: ConnectorConfig, state_location: str | None = None) -> Path:
    """Where a connector's reports are (for tools that read them directly)."""
    return metrics_location(config, state_location)
