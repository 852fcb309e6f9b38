"""The connector's metrics on the driver: Debezium's attributes, sparkcdc's extras, Prometheus.

:class:`MetricsCollector` gathers what the tasks and the planner reported (see
:mod:`sparkcdc.engine.metric_reports`) into :class:`~sparkcdc.engine.metrics.ConnectorMetrics`,
adds what only the driver knows (the slot as the server sees it, the last batch Spark committed,
whether the server answers), and refreshes it all every ``interval`` seconds on a thread of its own.

:class:`PrometheusExposition` publishes it under the names Debezium's documented Prometheus JMX
exporter rules give (debezium-examples ``monitoring/debezium-jmx-exporter/config.yml``)::

    debezium_metrics_<Attribute>{plugin="postgres",name="<topic.prefix>",context="snapshot|streaming"}
    debezium_metrics_RowsScanned{plugin="postgres",name="<topic.prefix>",context="snapshot",table="<schema.table>"}

so Debezium's dashboards and alerts work unchanged; sparkcdc's own figures are ``sparkcdc_*``.
``sparkcdc run --metrics-port`` serves it; in a query of your own, :class:`CdcMetricsListener`
does the same (see docs/metrics.md).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..debezium.config import ConnectorConfig
from ..debezium.metric_tags import PROPERTY as TAGS_PROPERTY
from ..debezium.metric_tags import mbean_name, metric_tags, prometheus_labels
from ..engine.metric_reports import metrics_location, read_json, stream_report_lsn
from ..engine.metrics import ATTRIBUTES, SNAPSHOT, STREAMING, ConnectorMetrics
from ..engine.stream_slots import stream_slots

__all__ = ["CdcMetricsListener", "MetricsCollector", "PrometheusExposition", "RunMetrics", "serve_metrics"]

log = logging.getLogger(__name__)

PLUGIN = "postgres"
WAL_STATUSES = ("reserved", "extended", "unreserved", "lost")

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
        self.tags = metric_tags(config.get(TAGS_PROPERTY), notes)
        for note in notes:
            log.warning("%s", note)
        #: The Spark Connect server the query runs on (``sparkcdc run --remote``): the reports are then
        #: written on the server's side, and this process sees them only through a shared file system.
        self.remote = remote
        #: Whether this process finds the planner's reports: None until Spark committed a batch (the
        #: planner has written ``connector.json`` by then, wherever it runs).
        self.reports_found: bool | None = None
        self.model = ConnectorMetrics(config.topic_prefix, queue_capacity=config.get_int("max.queue.size"),
                                      max_queue_bytes=config.get_int("max.queue.size.in.bytes"))
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
                from ..engine.connection import sql_connection

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


class PrometheusExposition:
    """A prometheus-client collector of a :class:`MetricsCollector`'s figures."""

    def __init__(self, collector: MetricsCollector) -> None:
        self.collector = collector

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily, UnknownMetricFamily

        figures = self.collector.snapshot()
        name = self.collector.model.connector_name
        # custom.metric.tags: labels of every sample, after sparkcdc's own (as the key properties of
        # Debezium's MBean names, which a JMX exporter turns into labels)
        tags = prometheus_labels(self.collector.tags)
        tag_names, tag_values = list(tags), list(tags.values())
        labels = ["plugin", "name", "context"]
        # One family per name, its samples of both contexts (a name's HELP and TYPE appear once).
        families: dict[str, Any] = {}
        for attribute in ATTRIBUTES:
            # The JMX exporter's samples are untyped; strings, arrays and maps of strings have none.
            if attribute.name != "RowsScanned" and not attribute.numeric:
                continue
            metric = f"debezium_metrics_{attribute.name}"
            family = families.get(metric)
            if family is None:
                extra = ["table"] if attribute.name == "RowsScanned" else []
                family = families[metric] = UnknownMetricFamily(metric, attribute.meaning, labels=[*labels, *extra, *tag_names])
            values = figures[attribute.context]
            if attribute.name == "RowsScanned":
                for table, rows in values["RowsScanned"].items():
                    family.add_metric([PLUGIN, name, attribute.context, table, *tag_values], float(rows))
            else:
                family.add_metric([PLUGIN, name, attribute.context, *tag_values], float(values[attribute.name]))
        yield from families.values()
        extras = figures["sparkcdc"]
        gauges = (
            ("sparkcdc_slot_retained_wal_bytes", "WAL the replication slot keeps on the server (pg_current_wal_lsn() - restart_lsn)",
             extras["slot_retained_wal_bytes"]),
            ("sparkcdc_slot_pending_wal_bytes", "WAL written since the slot's confirmed_flush_lsn (not yet committed by the pipeline)",
             extras["slot_pending_wal_bytes"]),
            ("sparkcdc_slot_safe_wal_size_bytes", "WAL that can still be written before the slot is in danger of losing WAL "
             "(pg_replication_slots.safe_wal_size; absent without max_slot_wal_keep_size)", extras["slot_safe_wal_size_bytes"]),
            ("sparkcdc_commit_lag_seconds", "seconds from the source commit of the newest change of the last committed batch "
             "to Spark committing that batch (durable in the output)", extras["commit_lag_seconds"]),
            ("sparkcdc_last_committed_batch_id", "the id of the last micro-batch Spark committed", extras["last_committed_batch_id"]),
            ("sparkcdc_metric_reports_found", "1 when this process finds the metric reports under sparkcdc.state.location once Spark "
             "committed a batch; 0 when it does not (another machine's file system: the Debezium metrics stay empty)",
             None if extras["metric_reports_found"] is None else int(extras["metric_reports_found"])),
        )
        for metric, meaning, value in gauges:
            if value is not None:
                gauge = GaugeMetricFamily(metric, meaning, labels=["name", *tag_names])
                gauge.add_metric([name, *tag_values], float(value))
                yield gauge
        status = extras["slot_wal_status"]
        if status is not None:
            gauge = GaugeMetricFamily("sparkcdc_slot_wal_status", "the slot's wal_status (pg_replication_slots): 1 for the current one",
                                      labels=["name", "wal_status", *tag_names])
            for state in WAL_STATUSES:
                gauge.add_metric([name, state, *tag_values], 1.0 if state == status else 0.0)
            yield gauge


def serve_metrics(collector: MetricsCollector, port: int, host: str = "127.0.0.1") -> Any:
    """Serve ``collector`` on ``host:port`` from a daemon thread; returns the server (``shutdown()``
    then ``server_close()`` stop it).

    ``/metrics``: the Prometheus exposition (prometheus-client). ``/attributes``: every attribute as
    JSON, the string, array and map ones too (LastEvent, CapturedTables, SourceEventPosition ...),
    which a JMX exporter drops and Prometheus cannot hold.
    """
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import CollectorRegistry, make_wsgi_app

    registry = CollectorRegistry(auto_describe=False)
    registry.register(PrometheusExposition(collector))  # type: ignore[arg-type]
    prometheus = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == "/attributes":
            body = json.dumps(collector.snapshot(), default=str, indent=1).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        return prometheus(environ, start_response)

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    server = make_server(host, port, app, Server, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, name="sparkcdc-metrics-http", daemon=True).start()
    return server


class RunMetrics:
    """A run's metrics: the collector, its Prometheus server (``port``) and a progress display."""

    def __init__(self, collector: MetricsCollector, server: Any, progress: Any) -> None:
        self.collector, self.server, self.progress = collector, server, progress

    @classmethod
    def start(cls, properties: Mapping[str, str], port: int | None, host: str, display: Any,
              remote: str | None = None) -> RunMetrics | None:
        """Started before Spark: a port in use fails the run at once. None when nothing asks for metrics."""
        if port is None and display is None:
            return None
        from ..errors import PipelineError

        collector = MetricsCollector(ConnectorConfig(dict(properties)), remote=remote)
        server = None
        if port is not None:
            try:
                server = serve_metrics(collector, port, host)
            except OSError as exc:
                raise PipelineError(f"cannot serve the metrics on {host}:{port}: {exc}") from None
            log.info("metrics for Prometheus on http://%s:%d/metrics", host, port)
        collector.start()
        if display is not None:
            display.start(collector)
        return cls(collector, server, display)

    @property
    def spark_conf(self) -> dict[str, str] | None:
        """Spark's console progress bar would scribble over a display that owns the terminal."""
        return {"spark.ui.showConsoleProgress": "false"} if getattr(self.progress, "owns_terminal", False) else None

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        self.collector.close()


def _listener_base() -> type:
    from pyspark.sql.streaming import StreamingQueryListener

    return StreamingQueryListener


class CdcMetricsListener(_listener_base()):  # type: ignore[misc]
    """The connector's metrics for a ``postgres-cdc`` query of your own::

        listener = CdcMetricsListener(options)            # the options the query reads with
        spark.streams.addListener(listener)
        listener.serve(9404)                               # optional: Prometheus /metrics
        ... listener.metrics()["streaming"]["MilliSecondsBehindSource"]

    After each StreamingQueryProgress of a query, its figures are refreshed, and ``on_progress``
    (if given) is called with (progress as a dict, the figures of :meth:`metrics`).
    """

    def __init__(self, options: Mapping[str, str], *, on_progress: Any = None, poll_server: bool = True) -> None:
        super().__init__()
        from .source.options import config_from_options

        self.collector = MetricsCollector(config_from_options(dict(options)), poll_server=poll_server)
        self.on_progress = on_progress
        self._server: Any = None

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's names
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        progress = json.loads(event.progress.json)
        self.collector.refresh()
        self.collector.observe_progress(progress)
        if self.on_progress is not None:
            self.on_progress(progress, self.metrics())

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        pass

    def metrics(self) -> dict[str, Any]:
        return self.collector.snapshot()

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        """Prometheus ``/metrics`` for this connector, refreshed on its own between batches too."""
        self.collector.start()
        self._server = serve_metrics(self.collector, port, host)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.collector.close()


def report_location(config: ConnectorConfig, state_location: str | None = None) -> Path:
    """Where a connector's reports are (for tools that read them directly)."""
    return metrics_location(config, state_location)
