"""A Spark standalone cluster on 127.0.0.1 for tests: one master and N workers, from the venv's pyspark.

The daemons are the JVMs ``spark-class`` starts from the pyspark wheel (its ``jars`` are a complete
Spark), each in its own process group, so that stopping a worker takes the executor JVMs it launched
with it. Workers run their executors' Python with this interpreter (``PYSPARK_PYTHON``) and inherit
this process's environment (``PYTHONPATH`` included): a cluster whose nodes all have sparkcdc
installed at the same path, which is what docs/clusters.md asks of a real one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .waiting import wait_until

__all__ = ["HOST", "QUICK_JVM", "StandaloneCluster", "free_port", "spark_home", "standalone_cluster"]

HOST = "127.0.0.1"
#: JVM options for the short-lived JVMs of a test on a machine of two cores: C1 only (no C2 compiling
#: in the background) and the serial collector (no GC threads per core).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    """The pyspark package directory: a pip-installed pyspark is a whole Spark (``bin``, ``jars``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the kernel's choice, so another test's port is not reused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Worker:
    worker_id: str  # the master's id of the worker, e.g. worker-20250101120000-127.0.0.1-40000
    webui_url: str  # http://127.0.0.1:<port>: also the prefix of its executors' log URLs
    work_dir: Path


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:<port>
    master_webui_url: str  # http://127.0.0.1:<port>
    workers: tuple[Worker, ...]
    logs: Path  # the daemons' stdout/stderr, one file each

    def state(self) -> dict[str, Any]:
        """The master's JSON view (workers, applications)."""
        return _get_json(f"{self.master_webui_url}/json/")

    def worker_of_log_url(self, url: str) -> Worker | None:
        """The worker whose web UI serves an executor's log URL (how an executor is tied to its worker
        when every worker has the same host)."""
        for worker in self.workers:
            if url.startswith(worker.webui_url + "/"):
                return worker
        return None

    def daemon_logs(self) -> str:
        """Every daemon's log, for an assertion's message."""
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}" for path in sorted(self.logs.glob("*.log")))


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a local http URL we built
        return json.loads(response.read())


class _Daemon:
    """One ``spark-class`` JVM in its own process group."""

    def __init__(self, argv: list[str], env: Mapping[str, str], log: Path) -> None:
        self.name = log.stem
        self.log = log
        with open(log, "ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=dict(env), start_new_session=True)

    def check_alive(self) -> None:
        code = self.process.poll()
        if code is not None:
            raise AssertionError(f"the Spark {self.name} exited with {code} before the cluster was up:\n"
                                 f"{self.log.read_text(errors='replace')[-4000:]}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the group (the daemon's shutdown hooks stop its executors), SIGKILL if it lingers;
        returns once no process of the group is left."""
        group = self.process.pid
        _signal_group(group, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(group, signal.SIGKILL)
        self.process.wait(timeout)
        wait_until(lambda: not _group_alive(group), timeout=timeout, what=f"process group {group} ({self.name}) to be gone")


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        pass


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def daemon_environment(base: Mapping[str, str] | None = None, python: str | None = sys.executable) -> dict[str, str]:
    """The daemons' environment: this process's (so executors see the same PYTHONPATH) unless
    ``base`` replaces it, Spark's home and ``python`` as the workers' Python (None: no
    PYSPARK_PYTHON), everything bound to 127.0.0.1, small daemon heaps (they only schedule)."""
    env = dict(os.environ if base is None else base)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_PUBLIC_DNS": HOST,
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
    })
    if python is None:
        env.pop("PYSPARK_PYTHON", None)
    else:
        env["PYSPARK_PYTHON"] = python
    env.pop("SPARK_CONF_DIR", None)  # no spark-defaults.conf of the caller in the daemons
    env.pop("SPARK_ENV_LOADED", None)
    return env


@contextmanager
def standalone_cluster(root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 90.0,
                       base_env: Mapping[str, str] | None = None, python: str | None = sys.executable) -> Iterator[StandaloneCluster]:
    """A master and ``workers`` workers on 127.0.0.1, up once the master lists them all ALIVE; every
    JVM (daemons and the executors they launched) is gone when the block ends. ``base_env`` and
    ``python``: see :func:`daemon_environment` (a cluster whose nodes lack the driver's Python)."""
    root.mkdir(parents=True, exist_ok=True)
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = daemon_environment(base_env, python)
    with ExitStack() as stack:
        master_port, master_ui = free_port(), free_port()
        master = _Daemon([spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                          "--port", str(master_port), "--webui-port", str(master_ui)], env, logs / "master.log")
        stack.callback(master.stop)
        master_url, master_webui = f"spark://{HOST}:{master_port}", f"http://{HOST}:{master_ui}"
        daemons = [master]
        work_dirs: dict[str, Path] = {}  # a worker's web UI URL -> its work dir
        for index in range(workers):
            work_dir, webui_port = root / f"worker-{index}", free_port()
            work_dir.mkdir(exist_ok=True)
            work_dirs[f"http://{HOST}:{webui_port}"] = work_dir
            worker = _Daemon([spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", HOST,
                              "--cores", str(cores), "--memory", memory, "--webui-port", str(webui_port),
                              "--work-dir", str(work_dir)], env, logs / f"worker-{index}.log")
            stack.callback(worker.stop)  # stopped before the master (ExitStack unwinds in reverse)
            daemons.append(worker)

        def alive_workers() -> list[dict[str, Any]] | None:
            for daemon in daemons:
                daemon.check_alive()
            try:
                state = _get_json(f"{master_webui}/json/")
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                return None  # the master's web UI is not up yet
            alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
            return alive if len(alive) == workers else None

        listed = wait_until(alive_workers, timeout=timeout, interval=0.25, what=f"{workers} ALIVE workers at {master_webui}")
        described = tuple(Worker(str(item["id"]), str(item["webuiaddress"]).rstrip("/"),
                                 work_dirs[str(item["webuiaddress"]).rstrip("/")]) for item in listed)
        yield StandaloneCluster(master_url, master_webui, described, logs)
