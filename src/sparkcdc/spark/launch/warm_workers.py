"""Start the executors' Python workers while the streaming query starts, not in its first batch.

Why: Spark starts an executor's Python daemon (``sparkcdc.spark.launch.worker_daemon``: an interpreter
that imports the reader's modules, about 0.8 s here) when a task first needs Python, and forks a
worker per task slot from it. For ``sparkcdc run`` that is the first micro-batch's first chunk
tasks: measured (1,000,000-row initial snapshot applied to Delta, local[2], Spark's event log),
the first two chunk tasks ran 2.5 s against 0.5 s for every later one, on the batch's critical
path. Started just before the query (after the source is registered and loaded: started earlier,
beside Spark's own data source planning processes, it slowed them as much as it gained on two
cores), a job of one small task per slot in a thread brings the daemon and its workers up while
the query starts and plans its first batch (the streaming source's planner process, about 1.5 s). The workers then stay (``spark.python.
worker.reuse``) for the batch's tasks: a Python data source's reader and ``mapInArrow`` run under
the same worker key (the session's interpreter and environment).

Only for a classic session (a Spark Connect server's workers are its own). The job is named
(:data:`WARM_JOB`) and failing it costs nothing but the head start: the batch then starts the
workers as it would have.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

from ..running_session import default_parallelism, is_connect, job_description

__all__ = ["WARM_JOB", "start_python_workers", "warm_python_workers"]

log = logging.getLogger(__name__)

#: The warm-up job's description (the Spark UI and event log show it).
WARM_JOB = "sparkcdc: starting the executors' Python workers"


def warm_python_workers(spark: Any) -> threading.Thread | None:
    """A thread running the warm-up job on ``spark``; None on Spark Connect."""
    if is_connect(spark):
        return None
    thread = threading.Thread(target=_warm_up, args=(spark,), name="sparkcdc-warm-python-workers", daemon=True)
    thread.start()
    return thread


def start_python_workers(spark: Any) -> list[int]:
    """Run one small task per task slot, each in a Python worker that has imported the reader's
    modules; the process ids of those workers (idle, and reused by the next tasks, afterwards)."""
    slots = max(1, default_parallelism(spark))
    with job_description(spark, WARM_JOB, "sparkcdc-warm-python-workers"):
        rows = spark.range(0, slots, 1, slots).mapInArrow(_import_reader_modules, "pid long").collect()
    return sorted({int(row["pid"]) for row in rows})


def _warm_up(spark: Any) -> None:
    try:
        start_python_workers(spark)
    except Exception as exc:  # noqa: BLE001 - a head start only: the first batch starts the workers instead
        log.debug("warming the Python workers did not finish: %s", exc)


def _import_reader_modules(batches: Iterator[Any]) -> Iterator[Any]:
    """In the worker: what a reader task imports (already there when Spark's daemon is sparkcdc's)."""
    import os

    import pyarrow as pa

    from .worker_daemon import preload

    preload(freeze=False)
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"pid": [os.getpid()]})
