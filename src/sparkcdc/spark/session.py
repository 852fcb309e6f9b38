"""The SparkSession sparkcdc runs on: local by default, any master when asked."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["make_active", "spark_session"]


def spark_session(master: str | None = None, app_name: str = "sparkcdc", extra: dict[str, str] | None = None) -> SparkSession:
    # Python workers must run this interpreter: it is the one with sparkcdc installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master or "local[*]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
    )
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    make_active(spark)
    return spark


def make_active(spark: SparkSession) -> None:
    """Make ``spark`` the JVM's active session for the calling thread.

    Spark resolves data source names through the thread-local active session; a query started from
    another thread (a CLI's worker thread, a test) would otherwise not find Python data sources
    registered on this session.
    """
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)  # type: ignore[union-attr]
