"""A ``sparkcdc run``'s metrics: the collector, its Prometheus server and a progress display, started
and stopped together with the run (:func:`sparkcdc.spark.runner.run_pipeline`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ...debezium.config import ConnectorConfig
from .collector import MetricsCollector
from .prometheus import serve_metrics

__all__ = ["RunMetrics"]

log = logging.getLogger(__name__)


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
        from ...errors import PipelineError

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
