"""The SparkSession sparkcdc runs on: local by default, any master when asked, spark-submit's when
submitted, or a Spark Connect server's.

Spark's own configuration comes first: what spark-submit was given (``--master``, ``--conf``), what
``spark-defaults.conf`` says, and what the caller passes as ``extra`` (``sparkcdc run --conf``) are
kept; sparkcdc's defaults (no web UI, four shuffle partitions...) only fill what none of them set.

A Spark Connect session (``remote``: ``sc://host:port``) is a client: there is no JVM, SparkContext or
py4j gateway in this process. What sparkcdc does through those (log level, the thread's active
session, the default parallelism, job descriptions) takes another path on it, here and in
:mod:`sparkcdc.spark.running_session`; see docs/spark-connect.md for what runs where.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from pyspark import SparkConf
from pyspark.core.context import SparkContext
from pyspark.sql import SparkSession

from ...errors import ConfigurationError
from ..running_session import is_connect
from .driver_jvm import launch_driver_jvm
from .python_forks import start_for_launch, use_fork_server
from .spark_defaults import spark_defaults

__all__ = ["DEFAULTS", "make_active", "spark_session", "submitted"]

log = logging.getLogger(__name__)

#: What sparkcdc sets where nobody else did.
DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.python.worker.reuse": "true",
    # Task workers forked with the reader's modules already imported (see sparkcdc.spark.launch.worker_daemon).
    "spark.python.daemon.module": "sparkcdc.spark.launch.worker_daemon",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
}
#: Of those, what a Spark Connect session sets on itself (the others are the server application's).
_SESSION_DEFAULTS = ("spark.sql.shuffle.partitions",)


def submitted() -> bool:
    """This Python driver was started by ``spark-submit`` (its JVM is already up and configured)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ and SparkContext._active_spark_context is None


def spark_session(master: str | None = None, app_name: str = "sparkcdc", extra: Mapping[str, str] | None = None, *,
                  remote: str | None = None) -> SparkSession:
    """The session to run on; with ``remote`` a new Spark Connect session on that server
    (``sc://host:port[/;param=value...]``), not with a master.

    ``master`` (``--master``) is set only when given: otherwise spark-submit's, ``spark-defaults.conf``'s
    or Spark's own default (``local[*]``) applies. ``extra`` (``--conf``) wins over everything. A
    session that already exists in this process is reused: only ``extra``'s runtime SQL settings can
    still apply to it, and a warning names those that did not.
    """
    extra = dict(extra or {})
    if remote is not None:
        if master is not None:
            raise ConfigurationError(f"a Spark Connect session ({remote}) runs on its server's master: give no master ({master})",
                                     prop="--master")
        return _connect_session(remote, extra)
    existing = SparkSession._instantiatedSession
    if existing is not None and existing._sc._jsc is not None:
        builder = SparkSession.builder
        if master:
            builder = builder.master(master)
        for key, value in extra.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        _warn_unapplied(spark, extra)
    else:
        spark = _new_session(master, app_name, extra)
    spark.sparkContext.setLogLevel("WARN")
    make_active(spark)
    return spark


def _new_session(master: str | None, app_name: str, extra: dict[str, str]) -> SparkSession:
    # Python workers must run an interpreter with sparkcdc installed: this one, unless the caller
    # (PYSPARK_PYTHON, spark.pyspark.python) names another, e.g. a packed environment's.
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    was_submitted = submitted()
    # The JVM starts with ``extra`` (settings such as spark.driver.memory only count at its start)
    # and sparkcdc's driver flags (driver_jvm.py); under spark-submit it is already running with
    # spark-submit's settings.
    forks = None
    if was_submitted or SparkContext._gateway is not None:
        SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(extra.items())))
    else:
        # Spark's Python processes forked ready-made, in a local session (python_forks.py): the
        # server imports beside the JVM's launch.
        forks = start_for_launch(master, extra, spark_defaults())
        launch_driver_jvm(extra)
    configured = dict(SparkConf().getAll())  # the JVM's: spark-submit's, spark-defaults.conf's, extra
    configured.update(extra)
    if was_submitted and master and master != configured.get("spark.master"):
        raise ConfigurationError(f"spark-submit chose the master {configured.get('spark.master')!r}: give the master "
                                 "to spark-submit only (its --master), not to sparkcdc run", prop="--master")
    builder = SparkSession.builder
    if master:
        builder = builder.master(master)
    if "spark.app.name" not in extra and not (was_submitted and _named_by_user(configured.get("spark.app.name"))):
        builder = builder.appName(app_name)
    for key, value in DEFAULTS.items():
        if key not in configured:
            builder = builder.config(key, value)
    for key, value in extra.items():
        builder = builder.config(key, value)
    _python_for_workers(configured)
    spark = builder.getOrCreate()
    use_fork_server(spark.sparkContext, forks)
    return spark


def _connect_session(remote: str, extra: Mapping[str, str]) -> SparkSession:
    """A new Spark Connect session: its settings are this client's, not the server's other sessions'.

    The server's Python workers (its driver's and executors') run the source's reader and the
    ``foreachBatch`` functions: sparkcdc must be installed there, which this process cannot do.
    """
    from ...errors import PipelineError

    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:  # grpc, protobuf, pandas...: pyspark names the missing one
        raise PipelineError(f"this Python cannot be a Spark Connect client ({exc}); install pyspark's connect extra "
                            "(pyspark[connect]), which sparkcdc's dependencies pin") from None
    builder: Any = SparkSession.builder.remote(remote)
    spark = builder.create()
    for key, value in {**{key: DEFAULTS[key] for key in _SESSION_DEFAULTS}, **extra}.items():
        try:
            spark.conf.set(key, value)
        except Exception as exc:  # noqa: BLE001 - Spark Connect's AnalysisException, named below
            spark.stop()
            raise ConfigurationError(f"a Spark Connect session sets only runtime (SQL) settings; this one is the server's "
                                     f"application's, set where the server is started ({_first_line(exc)})", prop=key) from None
    return spark


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _named_by_user(name: str | None) -> bool:
    """spark-submit names an application after its script unless told ``--name``."""
    return bool(name) and not str(name).endswith(".py")


def _python_for_workers(configured: Mapping[str, str]) -> None:
    """``spark.pyspark.python`` as spark-submit applies it, for a driver started by plain ``python``.

    PySpark takes the Python workers' interpreter from ``PYSPARK_PYTHON`` only (spark-submit sets
    it from the setting before it starts the driver's Python), so the setting becomes that variable.
    """
    python = configured.get("spark.pyspark.python")
    if python:
        _check_on_the_driver(python)
        os.environ["PYSPARK_PYTHON"] = python


def _check_on_the_driver(python: str) -> None:
    """A Python data source's planning runs in Python processes of the driver, started with the very
    interpreter path the executors get (PySpark gives a data source one ``pythonExec``): a relative
    path such as ``./environment/bin/python`` must exist in the driver's working directory too.
    Refused here with what to do, rather than as a Java IOException when the query starts."""
    if os.path.isabs(python) or os.sep not in python or os.path.exists(python):
        return
    raise ConfigurationError(
        f"{python!r} does not exist in the driver's working directory {os.getcwd()}, and the driver's Python "
        "processes (the postgres-cdc source's planning) run this same path: unpack the environment there too "
        "(mkdir environment && tar -xzf ENV.tar.gz -C environment), or link a Python environment that has "
        "sparkcdc (ln -s \"$VIRTUAL_ENV\" environment); see docs/clusters.md", prop="spark.pyspark.python")


def _warn_unapplied(spark: SparkSession, extra: Mapping[str, str]) -> None:
    """Name the settings an existing session kept its own value for: all but runtime SQL settings
    (Spark copies the others into the session's SQL configuration, where they change nothing)."""
    context = spark.sparkContext.getConf()
    unapplied = sorted(key for key, value in extra.items()
                       if not spark.conf.isModifiable(key) and context.get(key, None) != value)
    if unapplied:
        log.warning("not applied, the SparkSession of this process already exists and keeps its own value "
                    "(only runtime SQL settings apply to it): %s", ", ".join(unapplied))


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
