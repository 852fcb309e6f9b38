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

:func:`begin_session` starts the same work in a thread, for a caller with other work before it needs
the session (``sparkcdc run`` imports its runner, which is the database driver, the outputs and the
engine, while the driver JVM boots): the next :func:`session` call with the same arguments takes it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["begin_session", "session"]


class _Start(threading.Thread):
    """A session being made in the background, and what it came to (the session, or the error)."""

    def __init__(self, arguments: tuple[Any, ...]) -> None:
        super().__init__(name="sparkcdc-session-start", daemon=True)
        self.arguments = arguments
        self.made: SparkSession | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        from .spark_session import spark_session

        master, app_name, extra, remote = self.arguments
        try:
            self.made = spark_session(master, app_name, dict(extra), remote=remote)
        except BaseException as exc:  # noqa: BLE001 - handed to the session() call that takes this start
            self.error = exc


_started: _Start | None = None


def _arguments(master: str | None, app_name: str, extra: Mapping[str, str] | None, remote: str | None) -> tuple[Any, ...]:
    return master, app_name, tuple(sorted((extra or {}).items())), remote


def begin_session(master: str | None = None, app_name: str = "sparkcdc", extra: Mapping[str, str] | None = None, *,
                  remote: str | None = None) -> None:
    """Start making :func:`session`'s session now, in a thread; the next :func:`session` call with
    the same arguments waits for it (and raises what it raised). Nothing starts when a start is
    already under way."""
    global _started
    if _started is None:
        _started = _Start(_arguments(master, app_name, extra, remote))
        _started.start()


def session(master: str | None = None, app_name: str = "sparkcdc", extra: Mapping[str, str] | None = None, *,
            remote: str | None = None) -> SparkSession:
    """The SparkSession to run on: :func:`.spark_session.spark_session` (see there).

    ``master`` (``--master``) when given, else spark-submit's, ``spark-defaults.conf``'s or Spark's
    own default; ``extra`` (``--conf``) wins over everything; ``remote`` (``sc://host:port``) makes
    a Spark Connect session on that server instead. A session that already exists in this process is
    reused (one :func:`begin_session` started too: when its arguments differ, only ``extra``'s
    runtime SQL settings still apply, and a warning names the others)."""
    global _started
    from .spark_session import make_active, spark_session

    start, _started = _started, None
    if start is not None:
        start.join()
        if start.error is not None:
            raise start.error
        if start.arguments == _arguments(master, app_name, extra, remote) and start.made is not None:
            make_active(start.made)  # the active session is the thread's own: this thread's now
            return start.made
    return spark_session(master, app_name, extra, remote=remote)
