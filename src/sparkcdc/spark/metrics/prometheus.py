"""The connector's metrics for Prometheus, under the names Debezium's dashboards know.

:class:`PrometheusExposition` publishes a :class:`~.collector.MetricsCollector`'s figures under the
names Debezium's documented Prometheus JMX exporter rules give (debezium-examples
``monitoring/debezium-jmx-exporter/config.yml``)::

    debezium_metrics_<Attribute>{plugin="postgres",name="<topic.prefix>",context="snapshot|streaming"}
    debezium_metrics_RowsScanned{plugin="postgres",name="<topic.prefix>",context="snapshot",table="<schema.table>"}

so Debezium's dashboards and alerts work unchanged; sparkcdc's own figures are ``sparkcdc_*``.
:func:`serve_metrics` serves them over HTTP (``sparkcdc run --metrics-port``, or
:meth:`~.listener.CdcMetricsListener.serve`; see docs/metrics.md).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from ...debezium.metric_tags import prometheus_labels
from ...engine.core.metrics import ATTRIBUTES
from .collector import MetricsCollector

__all__ = ["PLUGIN", "WAL_STATUSES", "PrometheusExposition", "serve_metrics"]

PLUGIN = "postgres"
WAL_STATUSES = ("reserved", "extended", "unreserved", "lost")


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
