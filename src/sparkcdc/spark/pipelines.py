"""sparkcdc in Spark Declarative Pipelines (``spark-pipelines run``): what a definition file calls first.

A pipeline's definition files run in the ``spark-pipelines`` client, a Spark Connect client of the
pipeline's server, with a global ``spark`` session. One call readies that session::

    from sparkcdc.spark.pipelines import use_postgres_cdc

    use_postgres_cdc(spark)   # the postgres-cdc source registered; pyspark's accumulator bug worked around

Then query functions read ``spark.readStream.format("postgres-cdc")`` and type each table with
:func:`sparkcdc.spark.views.table_changes` given ``layout=`` (it then never analyses its input: a
query function must not, and :func:`~sparkcdc.spark.views.describe_table` asks PostgreSQL, not Spark;
:mod:`sparkcdc.spark.pipeline_analysis` tells whether code runs in one).

pyspark's bug, worked around here: when a pipeline run's flows ran Python workers (a Python data
source such as ``postgres-cdc`` does), the server sends the accumulator updates of those workers
(observed metrics named ``__python_accumulator__``) in the run's response stream; pyspark 4.3.0's
``SparkConnectClient.execute_command_as_iterator`` (``pyspark/sql/connect/client/core.py``) accepts
only dictionaries there and ends the run with ``[UNKNOWN_RESPONSE] Unknown response: Plan
observed(__python_accumulator__=...)``, after the flows did their work. The same method carries
streaming-query listener events, hit by the same responses. Reported upstream as SPARK-59135
(apache/spark pull request 58435, "Handle metadata in command response streams"). The client has
already applied those updates (``_execute_and_fetch_as_iterator`` reads them before it yields them):
skipping them loses nothing. Remove :func:`install_accumulator_workaround` once the pyspark that
sparkcdc pins yields no ``PlanObservedMetrics`` from that method (the fix of SPARK-59135).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ACCUMULATOR_METRICS", "install_accumulator_workaround", "use_postgres_cdc"]

#: The observed metrics that carry Python accumulator updates (pyspark's own name for them).
ACCUMULATOR_METRICS = "__python_accumulator__"
_MARK = "__sparkcdc_skips_accumulator_updates__"


def use_postgres_cdc(spark: Any) -> None:
    """Ready a pipeline's session (or any Spark Connect session) for sparkcdc: the ``postgres-cdc``
    source and the ``sparkcdc-apply`` sink (:mod:`sparkcdc.spark.sinks.apply_sink`) registered on it
    and, on Spark Connect, :func:`install_accumulator_workaround`. Calling it again does no harm
    (each definition file may call it)."""
    from .running_session import is_connect
    from .sinks.apply_sink import register_apply_sink
    from .source import register

    if is_connect(spark):
        install_accumulator_workaround()
    register(spark)
    register_apply_sink(spark)


def install_accumulator_workaround() -> bool:
    """Make Spark Connect command streams pass over Python accumulator updates (pyspark's bug
    SPARK-59135, see the module's docstring) instead of failing on them. Only observed metrics named
    ``__python_accumulator__`` are skipped: any other response the method refuses is still refused.
    Idempotent; returns whether this call installed it (False: it already was, or this pyspark's
    client lacks the internals the replacement calls, a sign it changed: then it is left alone)."""
    from pyspark.sql.connect.client.core import SparkConnectClient

    current = SparkConnectClient.execute_command_as_iterator
    if getattr(current, _MARK, False):
        return False
    if not all(hasattr(SparkConnectClient, name) for name in _INTERNALS):
        return False
    SparkConnectClient.execute_command_as_iterator = _skipping_accumulator_updates(current)  # type: ignore[method-assign]
    return True


#: What the replacement calls: the same steps as pyspark 4.3.0's own method.
_INTERNALS = ("_execute_plan_request_with_metadata", "_set_command_in_plan", "_execute_and_fetch_as_iterator")


def _skipping_accumulator_updates(original: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """``execute_command_as_iterator`` that builds the same request, and yields the command's results
    (dictionaries) but not the accumulator updates; anything else still fails with pyspark's error."""
    from pyspark.errors import PySparkValueError
    from pyspark.sql.connect.client.core import PlanObservedMetrics

    @functools.wraps(original)
    def execute_command_as_iterator(self: Any, command: Any, observations: Any = None) -> Iterator[dict[str, Any]]:
        request = self._execute_plan_request_with_metadata()
        self._set_command_in_plan(request.plan, command)
        for response in self._execute_and_fetch_as_iterator(request, observations or {}):
            if isinstance(response, dict):
                yield response
            elif isinstance(response, PlanObservedMetrics) and response.name == ACCUMULATOR_METRICS:
                continue  # the fetch has applied them already (profiler updates); not a command result
            else:
                raise PySparkValueError(errorClass="UNKNOWN_RESPONSE", messageParameters={"response": str(response)})

    setattr(execute_command_as_iterator, _MARK, True)
    return execute_command_as_iterator
