"""The connector's metrics for a ``postgres-cdc`` query of your own: a StreamingQueryListener.

Importing this module imports PySpark (the listener is a subclass of Spark's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .collector import MetricsCollector
from .prometheus import serve_metrics

__all__ = ["CdcMetricsListener"]


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
        from ..source.options import config_from_options

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
