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


def test_reports_out_of_reach_are_named_with_the_property(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A client whose file system lacks the server's state location (``run --remote`` on another
    machine): once Spark committed a batch, the planner's reports should be there; their absence is
    a warning naming ``sparkcdc.state.location`` and a 0 gauge, not metrics silently at zero."""
    state = tmp_path / "state"
    collector = MetricsCollector({"topic.prefix": "p", "database.hostname": "localhost", "database.user": "u",
                                  "database.dbname": "d", "slot.name": "s", "sparkcdc.state.location": str(state)},
                                 poll_server=False, remote="sc://spark.example:15002")
    collector.refresh()
    assert collector.snapshot()["sparkcdc"]["metric_reports_found"] is None  # nothing committed yet: nothing to say
    collector.observe_progress({"batchId": 0, "sources": []})
    with caplog.at_level("WARNING", logger="sparkcdc.spark.metrics"):
        collector.refresh()
        collector.refresh()
    warnings = [r.getMessage() for r in caplog.records if "metric report" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once
    assert "sparkcdc.state.location" in warnings[0] and str(state) in warnings[0] and "sc://spark.example:15002" in warnings[0]

    def gauge() -> float | None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(PrometheusExposition(collector))  # type: ignore[arg-type]
        text = generate_latest(registry).decode()
        return next((s.value for f in text_string_to_metric_families(text) for s in f.samples
                     if s.name == "sparkcdc_metric_reports_found"), None)

    assert gauge() == 0.0
    (state / "metrics").mkdir(parents=True)
    (state / "metrics" / "connector.json").write_text('{"captured_tables": ["public.t"]}')
    collector.refresh()  # mounted after all: found
    assert collector.snapshot()["sparkcdc"]["metric_reports_found"] is True and gauge() == 1.0
