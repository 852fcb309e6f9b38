"""The SparkSession sparkcdc runs on: local by default, any master when asked, or a Spark Connect server.

A Spark Connect session (``remote``: ``sc://host:port``) is a client: there is no JVM, SparkContext or
py4j gateway in this process. What sparkcdc does through those (log level, the thread's active
session, the default parallelism, job descriptions) takes another path on it, here; see
docs/spark-connect.md for what runs where.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["default_parallelism", "is_connect", "job_description", "make_active", "spark_session"]

#: Session settings sparkcdc wants; on Spark Connect they are the client session's runtime settings
#: (a server's own settings, such as its web UI, are the server's business).
_SESSION_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
}
#: Settings of the application Spark starts here (a Connect server has started its own).
_APPLICATION_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.python.worker.reuse": "true",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
}


def spark_session(master: str | None = None, app_name: str = "sparkcdc", extra: dict[str, str] | None = None, *,
                  remote: str | None = None) -> SparkSession:
    """A classic session on ``master`` (default ``local[*]``), or with ``remote`` a Spark Connect
    session on that server (``sc://host:port[/;param=value...]``); not both."""
    if remote is not None:
        if master is not None:
            raise ValueError(f"a Spark Connect session ({remote}) runs on its server's master: give no master ({master})")
        return _connect_session(remote, app_name, extra)
    # Python workers must run this interpreter: it is the one with sparkcdc installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master or "local[*]").appName(app_name)
    for key, value in {**_APPLICATION_SETTINGS, **_SESSION_SETTINGS, **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    make_active(spark)
    return spark


def _connect_session(remote: str, app_name: str, extra: dict[str, str] | None) -> SparkSession:
    """A new Spark Connect session: its settings are this client's, not the server's other sessions'.

    The server's Python workers (its driver's and executors') run the source's reader and the
    ``foreachBatch`` functions: sparkcdc must be installed there, which this process cannot do.
    """
    from ..errors import PipelineError

    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:  # grpc, protobuf, pandas...: pyspark names the missing one
        raise PipelineError(f"this Python cannot be a Spark Connect client ({exc}); install pyspark's connect extra "
                            "(pyspark[connect]), which sparkcdc's dependencies pin") from None
    builder: Any = SparkSession.builder.remote(remote)
    spark = builder.create()
    for key, value in {**_SESSION_SETTINGS, **(extra or {})}.items():
        try:
            spark.conf.set(key, value)
        except Exception as exc:  # noqa: BLE001 - Spark Connect's AnalysisException, named below
            spark.stop()
            from ..errors import ConfigurationError

            raise ConfigurationError(f"a Spark Connect session sets only runtime (SQL) settings; this one is the server's "
                                     f"application's, set where the server is started ({_first_line(exc)})", prop=key) from None
    return spark


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` (a session) is a Spark Connect client, without importing Spark Connect's
    modules (they need grpc) when it is not one."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def make_active(spark: SparkSession) -> None:
    """Make ``spark`` the JVM's active session for the calling thread.

    Spark resolves data source names through the thread-local active session; a query started from
    another thread (a CLI's worker thread, a test) would otherwise not find Python data sources
    registered on this session. A Spark Connect client has no JVM: its server resolves names in the
    session each request names, so there is nothing to do.
    """
    if is_connect(spark):
        return
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)  # type: ignore[union-attr]


def default_parallelism(spark: Any) -> int:
    """The scheduler's default parallelism (the cores of the executors, in practice).

    A Spark Connect client has no SparkContext to ask: there it is ``spark.default.parallelism`` when
    set, else the partitions of a range read without a partition count (Spark cuts a leaf into the
    default parallelism), found by a small job.
    """
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    from pyspark.sql import functions as F

    partitions = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p"))  # not inside an aggregate: nondeterministic
    row = partitions.agg(F.countDistinct("p").alias("n")).first()
    return max(1, int(row["n"])) if row is not None else 1


@contextmanager
def job_description(spark: Any, description: str, tag: str) -> Iterator[None]:
    """Jobs started in the block are described as ``description`` (the UI and the event log show it);
    the thread's description before is restored. A Spark Connect client cannot set a job's
    description: its jobs carry the tag ``tag`` instead (letters, digits and dashes)."""
    if is_connect(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    context = spark.sparkContext
    before = context.getLocalProperty("spark.job.description")
    context.setJobDescription(description)
    try:
        yield
    finally:
        context.setJobDescription(before)
