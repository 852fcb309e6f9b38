"""Watching a running streaming query, stopping it between micro-batches, and reading its failure.

The runner starts a query and restarts it after a server went away (:mod:`sparkcdc.spark.restarts`
decides when); what it needs of the query while it runs, and once it has failed, is here.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["describe_failure", "failure_report", "release_quietly", "stop_between_batches", "stop_quietly", "watch"]

log = logging.getLogger(__name__)


def watch(query: Any, stop_event: threading.Event | None) -> bool:
    """Until the query ends (finished, failed or stopped by ``stop_event``); whether a signal stopped it."""
    from pyspark.errors import StreamingQueryException

    try:
        while query.isActive:
            if stop_event is not None and stop_event.is_set():
                stop_between_batches(query)
                return True
            query.awaitTermination(0.1)  # a run --once ends when its last batch does: seen within 0.1 s
    except StreamingQueryException:
        pass  # the caller reads it from query.exception()
    return False


def failure_report(failure: Any) -> str:
    """Everything Spark says about a failure: the Python tracebacks it carries are in here."""
    return "\n".join(str(part) for part in (getattr(failure, "desc", None), failure) if part)


def stop_between_batches(query: Any, patience: float = 60.0) -> None:
    """Stop after the micro-batch in flight: interrupting one mid-way (its Python sink included)
    makes Spark report an interrupted batch, and it would be re-executed at the next start anyway."""
    deadline = time.monotonic() + patience
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        query.awaitTermination(0.1)
    query.stop()


def stop_quietly(spark: Any) -> None:
    """Stop what is still running (after a failure or an interrupt) without masking the cause."""
    for query in spark.streams.active:
        try:
            query.stop()
        except Exception:  # noqa: BLE001 - the query's own failure is what gets reported
            log.debug("stopping query %s failed", query.name, exc_info=True)


def release_quietly(spark: Any) -> None:
    """End a Spark Connect session: the server drops its state now rather than at its idle timeout
    (a classic session stays: its SparkContext is this process's, reused by the next run)."""
    try:
        spark.stop()
    except Exception:  # noqa: BLE001 - the run's own outcome is what gets reported
        log.debug("releasing the Spark Connect session failed", exc_info=True)


def describe_failure(failure: Any) -> str:
    """The one line of a failure that names its cause, for the run's error message."""
    text = str(getattr(failure, "desc", None) or failure)
    # Spark wraps the Python traceback; the last line naming an exception is the cause.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if "Error:" in line or "Exception:" in line]
    return causes[-1] if causes else (lines[0] if lines else repr(failure))
