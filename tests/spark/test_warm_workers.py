"""``sparkcdc run`` starts the executors' Python workers beside the query's start (warm_workers)."""

from __future__ import annotations

import os
import sys
from typing import Any

from sparkcdc.spark.launch.warm_workers import start_python_workers, warm_python_workers


def _worker_pids(batches: Any) -> Any:
    import os as _os

    import pyarrow as pa

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"pid": [_os.getpid()], "loaded": ["sparkcdc.spark.outputs.changes.blocks" in sys.modules]})


def test_the_started_workers_have_the_reader_modules_and_stay_for_the_next_tasks(spark) -> None:
    started = start_python_workers(spark)
    assert started and os.getpid() not in started  # Python workers of the executors, not this driver
    for pid in started:
        os.kill(pid, 0)  # still alive after the job: idle, for the next tasks (spark.python.worker.reuse)
    slots = spark.sparkContext.defaultParallelism
    rows = spark.range(0, slots, 1, slots).mapInArrow(_worker_pids, "pid long, loaded boolean").collect()
    assert all(row["loaded"] for row in rows)  # the daemon preloaded the changes layout's reader


def test_the_warm_up_runs_in_a_thread_and_not_on_spark_connect(spark) -> None:
    thread = warm_python_workers(spark)
    assert thread is not None and thread.daemon
    thread.join(120)
    assert not thread.is_alive()

    class ConnectLike:
        pass

    ConnectLike.__module__ = "pyspark.sql.connect.session"
    assert warm_python_workers(ConnectLike()) is None
