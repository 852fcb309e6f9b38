"""The SparkSession sparkcdc runs on: local by default, any master when asked."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["spark_session"]


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
    return spark
