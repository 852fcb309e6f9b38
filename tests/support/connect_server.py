"""A Spark Connect server on 127.0.0.1 for tests, started from the venv's pyspark.

The pyspark wheel ships the server (``jars/spark-connect_2.13-*.jar``); ``spark-submit`` runs its
main class, ``org.apache.spark.sql.connect.service.SparkConnectServer``, in the foreground (what
``sbin/start-connect-server.sh --wait`` does, without the daemon script's pid files under
``SPARK_HOME``). The server is one JVM in a process group of its own, with a ``local[N]`` master:
its driver plans the ``postgres-cdc`` batches and its Python workers (this interpreter, with this
process's ``PYTHONPATH``, so sparkcdc is importable there) read the slot and run the
``foreachBatch`` functions. Stopping it takes every Python worker of the group with it.
"""

from __future__ import annotations

import os
import signal
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .standalone_cluster import HOST, _Daemon, daemon_environment, free_port, spark_home
from .waiting import ConditionTimeout, wait_until

__all__ = ["CONNECT_SERVER_CLASS", "ConnectServer", "client_session", "connect_server"]

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass(frozen=True)
class ConnectServer:
    url: str  # sc://127.0.0.1:<port>
    port: int
    log: Path  # the server's stdout and stderr

    def log_tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def connect_server(root: Path, *, master: str = "local[2]", python: str | None = None,
                   timeout: float = 120.0) -> Iterator[ConnectServer]:
    """A Spark Connect server bound to 127.0.0.1 on a free port, up once it accepts connections and
    has logged that it started; it and every process it started are gone when the block ends.
    ``python``: the server's ``PYSPARK_PYTHON`` (default: this interpreter)."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = root / "connect-server.log"
    argv = [
        str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS, "--name", "sparkcdc-tests-connect",
        "--master", master,
        "--conf", f"spark.connect.grpc.binding.address={HOST}", "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
        "--conf", "spark.python.worker.reuse=true", "--conf", f"spark.local.dir={root / 'local'}",
    ]
    env = daemon_environment()  # C1 only, serial GC (QUICK_JVM), bound to 127.0.0.1
    # spark-submit runs the server as a daemon (SPARK_DAEMON_MEMORY), but it is also the driver of the
    # queries: Spark refuses a driver heap under 450 MiB.
    env["SPARK_DAEMON_MEMORY"] = "1g"
    if python is not None:
        env["PYSPARK_PYTHON"] = python
    # Every process the server starts inherits this: PySpark's worker daemons put themselves in
    # process groups of their own, so stopping the server's group does not reach them.
    env["SPARKCDC_TEST_CONNECT_SERVER"] = uuid.uuid4().hex
    marker = f"SPARKCDC_TEST_CONNECT_SERVER={env['SPARKCDC_TEST_CONNECT_SERVER']}"
    server = _Daemon(argv, env, log)
    try:
        def up() -> bool:
            server.check_alive()
            return _accepts(port) and "Spark Connect server started at" in log.read_text(errors="replace")

        wait_until(up, timeout=timeout, interval=0.1, what=f"the Spark Connect server on {HOST}:{port} (log: {log})")
        yield ConnectServer(f"sc://{HOST}:{port}", port, log)
    finally:
        server.stop()
        _reap(marker)


def _processes_with(marker: str) -> list[int]:
    """The processes whose environment holds ``marker`` (``NAME=value``)."""
    found, entry = [], marker.encode()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if entry in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(int(proc.name))
            except OSError:  # gone meanwhile, or not ours
                continue
    return found


def _reap(marker: str, patience: float = 15.0) -> None:
    """Wait for the server's stray processes (worker daemons exit once the JVM closed their pipe);
    SIGKILL what is left after ``patience`` seconds, and wait until none is."""
    try:
        wait_until(lambda: not _processes_with(marker), timeout=patience, interval=0.1, what="the server's workers to exit")
    except ConditionTimeout:
        for pid in _processes_with(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_until(lambda: not _processes_with(marker), timeout=patience, interval=0.1, what="the server's killed workers to be gone")


#: What a Spark Connect session sets in this process's environment and leaves there: while it is
#: set, pyspark's functions build Connect columns and ``SparkSession.builder`` builds Connect
#: sessions, which would break the classic session of every test that runs afterwards.
_CONNECT_MODE_VARIABLES = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")


@contextmanager
def client_session(url: str) -> Iterator[object]:
    """A Spark Connect client session on ``url`` with ``postgres-cdc`` registered; stopped at the end
    of the block, and this process back in classic mode."""
    from sparkcdc.spark import launch
    from sparkcdc.spark.source import register

    before = {name: os.environ.get(name) for name in _CONNECT_MODE_VARIABLES}
    session = launch.session(remote=url)
    try:
        register(session)
        yield session
    finally:
        try:
            session.stop()
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
