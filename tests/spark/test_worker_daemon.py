"""The task workers come from sparkcdc's daemon (``spark.python.daemon.module``), with the reader's
modules imported before the fork: a task finds them loaded without importing them itself."""

from __future__ import annotations

import sys

from sparkcdc.spark.launch.worker_daemon import PRELOADED, preload


def _worker_view(_: object) -> tuple[str, bool, bool]:
    import os

    with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
        parent = handle.read().replace(b"\0", b" ").decode()
    return parent, "sparkcdc.engine.snapshot_rendered" in sys.modules, "sparkcdc.spark.outputs.topic_files.task_files" in sys.modules


def test_task_workers_are_forked_from_the_preloading_daemon(spark) -> None:  # noqa: ANN001 - the session fixture
    views = spark.sparkContext.parallelize(range(2), 2).map(_worker_view).collect()
    for parent, rendered, files in views:
        assert "sparkcdc.spark.launch.worker_daemon" in parent, parent
        assert rendered and files


def test_preload_skips_what_cannot_be_imported() -> None:
    loaded = preload(("json", "sparkcdc_no_such_module"))
    assert loaded == ["json"]
    assert "sparkcdc.spark.source" in PRELOADED and "pyspark.worker" in PRELOADED
