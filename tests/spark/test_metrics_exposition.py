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
    with caplog.at_level("WARNING", logger="sparkcdc.spark.metrics.collector"):
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


def _samples(collector: MetricsCollector) -> list[tuple[str, dict[str, str], float]]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PrometheusExposition(collector))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def test_custom_metric_tags_label_every_sample(tmp_path: Path) -> None:
    """custom.metric.tags (Debezium appends them to the MBean names): every sample carries them as labels,
    after its own, the key as a JMX exporter makes it a label name; the JSON attributes name the MBeans."""
    properties = {"topic.prefix": "dbserver1", "database.hostname": "localhost", "database.user": "u", "database.dbname": "d",
                  "slot.name": "s", "sparkcdc.state.location": str(tmp_path),
                  "custom.metric.tags": "database=salesdb-streaming, table-group = inventory,env=prod"}
    collector = MetricsCollector(properties, poll_server=False)
    collector.model.fold_snapshot({"snapshot": "x", "started_ms": 0, "tables": ["public.customers"]}, [
        {"table": "public.customers", "rows": 7, "chunk_count": 1, "done": True, "updated_ms": 1}])
    collector.slot = {"wal_status": "reserved", "retained_bytes": 10, "pending_bytes": 0, "safe_wal_size": None}
    tags = {"database": "salesdb-streaming", "table_group": "inventory", "env": "prod"}
    samples = _samples(collector)
    assert {name for name, _, _ in samples} >= {"debezium_metrics_RowsScanned", "debezium_metrics_MilliSecondsBehindSource",
                                                "sparkcdc_slot_retained_wal_bytes", "sparkcdc_slot_wal_status"}
    for name, labels, _ in samples:
        assert {k: labels.get(k) for k in tags} == tags, name
    rows = {"plugin": "postgres", "name": "dbserver1", "context": "snapshot", "table": "public.customers", **tags}
    assert ("debezium_metrics_RowsScanned", rows, 7.0) in samples
    figures = collector.snapshot()
    assert figures["tags"] == {"database": "salesdb-streaming", "table-group": "inventory", "env": "prod"}
    assert figures["mbeans"]["streaming"] == ("debezium.postgres:type=connector-metrics,context=streaming,server=dbserver1,"
                                              "database=salesdb-streaming,table-group=inventory,env=prod")
    untagged = MetricsCollector({**properties, "custom.metric.tags": ""}, poll_server=False)
    assert all(not set(labels) & set(tags) for _, labels, _ in _samples(untagged))


@pytest.mark.parametrize(("value", "message"), [
    ("k1", "'k1' is not a key=value pair"),
    ("k1=v1=x", "is not a key=value pair"),
    ("context=x", "would be the label 'context'"),
    ("a:b=1", "cannot be part of an MBean name"),
    ("a-b=1,a_b=2", "would both be the label 'a_b'"),
])
def test_custom_metric_tags_that_cannot_be_labels_are_refused(value: str, message: str) -> None:
    from sparkcdc.debezium.config import ConnectorConfig
    from sparkcdc.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as raised:
        ConnectorConfig({"topic.prefix": "p", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
                         "custom.metric.tags": value})
    assert raised.value.property == "custom.metric.tags" and message in str(raised.value)


def test_a_tag_given_twice_keeps_its_last_value_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    collector = MetricsCollector({"topic.prefix": "p", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
                                  "sparkcdc.state.location": str(tmp_path), "custom.metric.tags": "env=a,region=x,env=b"},
                                 poll_server=False)
    assert collector.tags == {"env": "b", "region": "x"}
    assert "given twice" in caplog.text
