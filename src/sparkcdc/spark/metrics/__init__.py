"""The connector's metrics on the driver: Debezium's attributes, sparkcdc's extras, Prometheus.

:class:`MetricsCollector` (:mod:`.collector`) gathers what the tasks and the planner reported and
what only the driver knows; :class:`PrometheusExposition` and :func:`serve_metrics`
(:mod:`.prometheus`) publish it under Debezium's names; :class:`RunMetrics` (:mod:`.run_metrics`)
is a ``sparkcdc run``'s set of them; :class:`CdcMetricsListener` (:mod:`.listener`) gives a query of
your own the same figures (docs/metrics.md).
"""

from .collector import MetricsCollector
from .listener import CdcMetricsListener
from .prometheus import PrometheusExposition, serve_metrics
from .run_metrics import RunMetrics

__all__ = ["CdcMetricsListener", "MetricsCollector", "PrometheusExposition", "RunMetrics", "serve_metrics"]
