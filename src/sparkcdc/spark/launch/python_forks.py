"""Spark's Python processes forked from a pre-imported server, in a local-mode session sparkcdc launches.

Why: in local mode Spark starts its Python processes (a data source's planners, the streaming
source runner, the task workers' daemon) one at a time under one lock, and each imports pyspark
and sparkcdc before it answers; before a snapshot's first task, that was 2.5-3 s of one core's
imports in a row while the other core idled (docs/performance.md, "The fork server"). The fork
server (:mod:`sparkcdc.spark.launch.fork_server`) imports them once, beside the driver JVM's launch, and
forks each of those processes ready-made; Spark is given a launcher
(:mod:`sparkcdc.spark.launch.fork_launcher`) as the Python workers' interpreter, which stands for the
forked process as Spark's own child.

Only where it cannot change what runs: a driver JVM sparkcdc launches (not spark-submit's, not a
session the caller started), a local master (``local``, ``local[N]``, ``local[*]``: the executor is
this machine's driver JVM; never ``local-cluster`` or a cluster), and the workers' interpreter being
this one (neither ``PYSPARK_PYTHON`` nor ``spark.pyspark.python`` naming another). A request the
server cannot serve exactly (an interpreter setting that differs, the server gone) runs the real
interpreter. ``SPARKCDC_PYTHON_FORKS=off`` turns it off.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...environment import switch

__all__ = ["SWITCH", "ForkServer", "is_local_master", "launcher_source", "start_for_launch", "start_fork_server",
           "use_fork_server"]

log = logging.getLogger(__name__)

#: Set to ``off`` (or ``0``, ``false``, ``no``) to start Spark's Python processes the usual way.
SWITCH = "SPARKCDC_PYTHON_FORKS"
#: A socket path longer than this does not fit ``sockaddr_un``.
_SOCKET_PATH_LIMIT = 100
#: The kernel reads this much of a ``#!`` line.
_SHEBANG_LIMIT = 250
#: The file descriptor the server finds its listening socket at (its own standard streams are 0-2).
_LISTENER_FD = 3


@dataclass
class ForkServer:
    """A fork server (its process id, and the write end of its lifeline: the server ends once this
    process has closed it, at its exit) and the launcher that Spark is to run as its Python."""

    directory: Path
    launcher: str
    pid: int
    lifeline: int
    ended: bool = False

    @property
    def running(self) -> bool:
        if not self.ended:
            try:
                self.ended = os.waitpid(self.pid, os.WNOHANG)[0] != 0
            except ChildProcessError:
                self.ended = True
        return not self.ended


_server: ForkServer | None = None


def is_local_master(master: str | None) -> bool:
    """``local``, ``local[N]``, ``local[*]`` or ``local[N,F]``: the executor is the driver's JVM."""
    return master is not None and (master == "local" or master.startswith("local["))


def launcher_source(socket_path: str, python: str) -> str:
    """The launcher script: :mod:`sparkcdc.spark.launch.fork_launcher` behind its ``#!`` line, then its call."""
    source = Path(__file__).with_name("fork_launcher.py").read_text(encoding="utf-8")
    return f"#!{python} -IS\n{source}\nmain({socket_path!r}, {python!r})\n"


def start_fork_server(master: str | None, python: str = sys.executable) -> ForkServer | None:
    """The fork server for a session whose master is ``master`` (as far as known before the JVM's
    launch), started if it is not running yet: None when it does not apply (see the module's
    docstring) or cannot start here."""
    global _server
    if not switch(SWITCH) or not is_local_master(master) or not os.path.isabs(python):
        return None
    if _server is not None and _server.running:
        return _server
    directory = Path(tempfile.mkdtemp(prefix="sparkcdc-python-"))
    socket_path, launcher = str(directory / "server"), str(directory / "python")
    source = launcher_source(socket_path, python)
    if len(socket_path) > _SOCKET_PATH_LIMIT or len(source.partition("\n")[0]) > _SHEBANG_LIMIT or " " in python:
        log.info("Spark's Python processes start the usual way: the paths %s and %s are too long or have spaces",
                 socket_path, python)
        shutil.rmtree(directory, ignore_errors=True)
        return None
    Path(launcher).write_text(source, encoding="utf-8")
    os.chmod(launcher, 0o700)
    env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}  # PySpark's for its workers
    # Spawned rather than a subprocess.Popen: the server outlives this process's interpreter by
    # design (until its last child ends), which a Popen would report as a leak at exit.
    lifeline_in, lifeline = os.pipe()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(socket_path)
        listener.listen(128)
        try:
            pid = os.posix_spawn(python, [python, "-m", "sparkcdc.spark.launch.fork_server", str(_LISTENER_FD)], env,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, lifeline_in, 0),
                                               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                               (os.POSIX_SPAWN_DUP2, listener.fileno(), _LISTENER_FD)],
                                 setpgroup=0)
        except OSError as exc:
            log.info("Spark's Python processes start the usual way: the fork server did not start (%s)", exc)
            os.close(lifeline)
            shutil.rmtree(directory, ignore_errors=True)
            return None
        finally:
            os.close(lifeline_in)
    _server = ForkServer(directory, launcher, pid, lifeline)
    return _server


def use_fork_server(sc: Any, server: ForkServer | None, python: str = sys.executable) -> bool:
    """Have the SparkContext ``sc`` start its Python processes through ``server``, if it applies to
    the context as it came up (a local master, this interpreter as the workers'); whether it does."""
    if server is None or not server.running or not is_local_master(sc.master) or sc.pythonExec != python:
        return False
    sc.pythonExec = server.launcher
    return True


def start_for_launch(master: str | None, settings: Mapping[str, str], defaults: Mapping[str, str]) -> ForkServer | None:
    """:func:`start_fork_server` for a driver JVM about to be launched with ``--master`` ``master``,
    ``--conf`` ``settings`` and ``spark-defaults.conf`` ``defaults``: only if the session it makes is
    to be local (Spark's default master: ``local[*]``) with this interpreter as the workers'."""
    configured = {**defaults, **settings}
    workers_python = configured.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
    if workers_python != sys.executable:
        return None
    return start_fork_server(master or configured.get("spark.master") or "local[*]")
