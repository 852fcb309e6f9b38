"""The Prometheus exposition of the connector's metrics: names and labels as Debezium's JMX exporter
rule makes them (debezium-examples monitoring/debezium-jmx-exporter/config.yml), and the server."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sparkcdc.errors import PipelineError
from sparkcdc.spark.metrics import MetricsCollector, PrometheusExposition, RunMetrics


def test_prometheus_names_follow_the_jmx_exporter_rule(tmp_path: Path) -> None:
    collector = MetricsCollector({"topic.prefix": "dbserver1", "database.hostname": "localhost", "database.user": "u",
                                  "database.dbname": "d", "slot.name": "s", "sparkcdc.state.location": str(tmp_path)},
                                 poll_server=False)
    collector.model.fold_snapshot({"snapshot": "x", "started_ms": 0, "tables": ["public.customers"]}, [
        {"table": "public.customers", "rows": 7, "chunk_count": 1, "done": True, "updated_ms": 1}])
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PrometheusExposition(collector))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}
    rule = {"plugin": "postgres", "name": "dbserver1"}  # plugin=$1, name=$3 (server=), context=$2
    # debezium.([^:]+)<type=connector-metrics, context=([^,]+), server=([^,]+), key=([^>]+)><>RowsScanned
    rows = {**rule, "context": "snapshot", "table": "public.customers"}
    assert samples[("debezium_metrics_RowsScanned", tuple(sorted(rows.items())))] == 7.0
    # debezium.([^:]+)<type=connector-metrics, context=([^,]+), server=([^>]+)>([^:]+) -> debezium_metrics_$4
    streaming = tuple(sorted({**rule, "context": "streaming"}.items()))
    assert samples[("debezium_metrics_MilliSecondsBehindSource", streaming)] == -1.0
    assert samples[("debezium_metrics_QueueTotalCapacity", streaming)] == 8192.0
    snapshot = tuple(sorted({**rule, "context": "snapshot"}.items()))
    assert samples[("debezium_metrics_TotalNumberOfEventsSeen", snapshot)] == 7.0
    assert text.count("# TYPE debezium_metrics_TotalNumberOfEventsSeen untyped") == 1  # both contexts, one family
    assert "debezium_metrics_LastEvent" not in text  # a string: the exporter has no sample for it


def test_a_metrics_port_in_use_fails_before_spark_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        properties = {"topic.prefix": "srv", "database.hostname": "localhost", "database.user": "u", "database.dbname": "d",
                      "slot.name": "s", "sparkcdc.state.location": str(tmp_path)}
        with pytest.raises(PipelineError, match=f"cannot serve the metrics on 127.0.0.1:{port}"):
            RunMetrics.start(properties, port, "127.0.0.1", None)
