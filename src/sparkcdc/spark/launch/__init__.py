"""Starting Spark for sparkcdc: the driver JVM, Spark's Python processes, the session.

The rest of sparkcdc starts a session through one entry, :func:`session`::

    from sparkcdc.spark import launch

    spark = launch.session("local[2]", extra={"spark.driver.memory": "2g"})

Behind it: the session itself (:mod:`.spark_session`: local by default, any master, spark-submit's
or a Spark Connect server's), the driver JVM's flags (:mod:`.driver_jvm`, :mod:`.class_archive`,
whose archive :mod:`.archive_training` makes, :mod:`.spark_defaults`), Spark's Python processes
forked ready-made (:mod:`.python_forks` starts :mod:`.fork_server`, which :mod:`.fork_launcher`
talks to), the task workers' daemon (:mod:`.worker_daemon`) and the workers started beside a
query's start (:mod:`.warm_workers`).

This package's ``__init__`` imports nothing: Spark's Python processes run some of its modules by
name (``python -m sparkcdc.spark.launch.fork_server``, ``spark.python.daemon.module`` =
``sparkcdc.spark.launch.worker_daemon``), and those must not pay for PySpark's driver side or a
session's machinery. :func:`session` imports :mod:`.spark_session` when it is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["session"]


def session(master: str | None = None, app_name: str = "sparkcdc", extra: Mapping[str, str] | None = None, *,
            remote: str | None = None) -> SparkSession:
    """The SparkSession to run on: :func:`.spark_session.spark_session` (see there).

    ``master`` (``--master``) when given, else spark-submit's, ``spark-defaults.conf``'s or Spark's
    own default; ``extra`` (``--conf``) wins over everything; ``remote`` (``sc://host:port``) makes
    a Spark Connect session on that server instead. A session that already exists in this process is
    reused."""
    from .spark_session import spark_session

    return spark_session(master, app_name, extra, remote=remote)
