"""The connector's metrics on the driver: Debezium's attributes, sparkcdc's extras, Prometheus."""

from .collector import CdcMetricsListener, MetricsCollector, PrometheusExposition, RunMetrics, serve_metrics

__all__ = ["CdcMetricsListener", "MetricsCollector", "PrometheusExposition", "RunMetrics", "serve_metrics"]
