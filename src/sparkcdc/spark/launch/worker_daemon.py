"""The Python daemon Spark forks its task workers from (``spark.python.daemon.module``), with the
modules a ``postgres-cdc`` reader task uses already imported.

Why: Spark's daemon (``pyspark.daemon``) forks one worker per task slot and each worker imports
``pyspark.worker`` and then everything the task's code needs, after the fork, every worker on its
own. Measured (a snapshot with ``sparkcdc run --once``, two task slots): the first chunk started
reading 0.8 s after its worker was forked, the second 1.6 s after (both importing at once on two
cores shared with the JVM), on the critical path of every batch a fresh worker serves. Imported once
here, before the fork, the workers inherit them (copy-on-write pages, frozen out of the cyclic
collector's sight).

Only what a reader task imports anyway is loaded, and a module that is missing (``zstandard`` where
no topic file is compressed) is skipped: the worker imports it, or fails, as it would have. Spark
uses this module for its task workers only; its data source planning workers keep Spark's daemon.
"""

from __future__ import annotations

import gc
import importlib

__all__ = ["PRELOADED", "preload"]

#: What a reader task (``sparkcdc.spark.source.read_partition``) imports, in import order.
PRELOADED = (
    "pyspark.worker",
    "pyspark.sql.worker.plan_data_source_read",
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.csv",
    "numpy",
    "pandas",  # pyarrow imports it at its first array (0.2 s): once here, not in every worker
    "psycopg",
    "orjson",
    "zstandard",
    "sparkcdc.debezium.config",
    "sparkcdc.engine.work",
    "sparkcdc.engine.snapshot_rendered",
    "sparkcdc.engine.batch_reader",
    "sparkcdc.spark.source",
    "sparkcdc.spark.outputs.topic_files.task_files",
    # the changes layout's readers (an apply's source) and apply's stage tasks
    "sparkcdc.engine.snapshot_reader",
    "sparkcdc.spark.outputs.changes.blocks",
    "sparkcdc.spark.apply",
)


def preload(modules: tuple[str, ...] = PRELOADED, *, freeze: bool = True) -> list[str]:
    """Import ``modules``, skipping those that cannot be imported; the names imported. ``freeze``:
    move what is loaded out of the cyclic collector's sight (before forking workers)."""
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        loaded.append(name)
    if freeze:
        gc.collect()
        gc.freeze()  # the forked workers do not copy these objects' pages by collecting them
    return loaded


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
