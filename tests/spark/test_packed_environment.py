"""docs/clusters.md's packed-environment recipe on a real standalone cluster whose nodes lack sparkcdc.

The workers (tests/support/standalone_cluster.py) start with a bare environment: no PYTHONPATH, no
PYSPARK_PYTHON, no PATH entry of the driver's venv. An environment built for the test
(tests/support/packed_environment.py: a new venv with real copies of what executors import, checked
to hold no pointer back to the driver's venv or source tree) is packed by venv-pack and shipped by
``sparkcdc run --conf spark.archives=<env>.tar.gz#environment --conf
spark.pyspark.python=./environment/bin/python``. One running pipeline's initial snapshot, cut into
chunks, and then a streamed update must come out in the topic files (SIGTERM ends it); and every Python process the executors
started must have run ``./environment/bin/python`` of the archive unpacked in the worker's work dir,
importing ``sparkcdc`` from there (a ``.pth`` probe in the environment reports each interpreter start
in the executor's stderr). Then, on the same cluster, the recipe's spark-submit form: ``spark-submit
--archives <env>.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python "$(sparkcdc
submit-script)" run ... --once`` reads the table's snapshot again (on a slot of its own), with
executors that ran the archive's Python too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.packed_environment import build_environment, pack, pointers_out
from ..support.processes import GroupProcess
from ..support.standalone_cluster import HOST, QUICK_JVM, StandaloneCluster, spark_home, standalone_cluster
from ..support.waiting import wait_until
from .support import output_lines, properties

pytestmark = pytest.mark.slow

ROWS = 2_000
RUN_TIMEOUT = 180.0
PROBE_LINE = re.compile(r"^sparkcdc-probe executable=(\S+) prefix=(\S+) sparkcdc=(\S+)$", re.MULTILINE)


@pytest.fixture(scope="session")
def packed_environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive, built once per test session."""
    import sparkcdc

    root = tmp_path_factory.mktemp("packed")
    venv = build_environment(root / "sparkcdc-env")
    forbidden = [Path(sys.prefix), Path(sparkcdc.__file__).resolve().parent.parent]
    assert pointers_out(venv, forbidden) == [], "the environment points back at the driver's files"
    return pack(venv, root / "sparkcdc-env.tar.gz")


def _bare_environment(root: Path) -> dict[str, str]:
    """What a node without sparkcdc has: no PYTHONPATH or PYSPARK_PYTHON, no PATH entry of the driver's venv."""
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {k: os.environ[k] for k in ("HOME", "JAVA_HOME", "LANG", "LC_ALL", "TMPDIR", "USER") if k in os.environ}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    local = root / "local"
    local.mkdir(parents=True, exist_ok=True)
    env["SPARK_LOCAL_DIRS"] = str(local)  # the executors' scratch space (where Spark fetches the archive)
    return env


def test_executors_run_the_packed_environment(packed_environment: Path, pg_cluster, db, tmp_path: Path, unique_name: str) -> None:
    started = time.monotonic()
    table = f"pk_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, label text, amount numeric(12,2))")
    db.execute(f"INSERT INTO {table} SELECT g, 'row ' || g, g * 1.25 FROM generate_series(1, {ROWS}) g")
    db.execute(f"ANALYZE {table}")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{"sparkcdc.snapshot.chunk.rows": "500"})
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    driver_dir, output = tmp_path / "driver", tmp_path / "out"
    driver_dir.mkdir()
    # The source's planning runs in Python processes of the driver with the executors' interpreter
    # path (./environment/bin/python): in the driver's directory it leads to the driver's own venv.
    (driver_dir / "environment").symlink_to(sys.prefix, target_is_directory=True)

    # a small shared machine; both executors registered before the first job
    small = ["--conf", "spark.executor.memory=512m", "--conf", f"spark.driver.host={HOST}",
             "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}", "--conf", f"spark.executor.extraJavaOptions={QUICK_JVM}",
             "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
             "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=120s"]
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--checkpoint", "ck", "--output", str(output),
            "--summary", str(tmp_path / "summary.json"),
            # the recipe
            "--conf", f"spark.archives={packed_environment}#environment",
            "--conf", "spark.pyspark.python=./environment/bin/python", *small]
    submit_config = tmp_path / "submit.properties"  # the same table, read again on a slot of its own
    submit_props = properties(pg_cluster, f"{unique_name}_s", [f"public.{table}"], **{"sparkcdc.snapshot.chunk.rows": "500"})
    submit_config.write_text("".join(f"{k}={v}\n" for k, v in submit_props.items()))
    topic = f"srv.public.{table}"

    def ops() -> list[str]:
        return [json.loads(line["value"])["payload"]["op"] for line in output_lines(output) if line["topic"] == topic]

    log = tmp_path / "run.log"
    with standalone_cluster(tmp_path / "cluster", base_env=_bare_environment(tmp_path / "cluster"), python=None) as cluster:
        # One long-running pipeline (no --once): the snapshot, then a streamed change, then SIGTERM.
        process = GroupProcess([*argv, "--master", cluster.master_url], log, env={"SPARK_LOCAL_IP": HOST}, cwd=driver_dir)
        try:
            def running(what: str, count: Callable[[list[str]], bool]) -> Callable[[], bool]:
                def check() -> bool:
                    if process.process.poll() is not None:
                        raise AssertionError(f"sparkcdc run ended with {process.process.returncode} before {what}:\n"
                                             f"{_failure_report(log, cluster)}")
                    return count(ops()) if output.is_dir() else False
                return check

            wait_until(running("the snapshot", lambda o: o.count("r") == ROWS), timeout=RUN_TIMEOUT, interval=0.5,
                       what="the snapshot's records in the topic files")
            db.execute(f"UPDATE {table} SET amount = amount + 1 WHERE id <= 10")
            wait_until(running("the update", lambda o: o.count("u") == 10), timeout=RUN_TIMEOUT, interval=0.5,
                       what="the streamed updates in the topic files")
            process.process.send_signal(signal.SIGTERM)
            code = process.wait(RUN_TIMEOUT)
        except BaseException:
            process.kill()
            raise
        assert code == 0, _failure_report(log, cluster)
        probes = _probes(cluster)
        try:
            submitted = _spark_submit_run(packed_environment, cluster, small, submit_config, driver_dir, table)
        finally:
            db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
                       (submit_props["slot.name"],))

    assert ops().count("r") == ROWS and ops().count("u") == 10
    assert json.loads((tmp_path / "summary.json").read_text())["records"] == ROWS + 10

    _check_probes(probes, cluster)
    _check_probes(submitted, cluster)
    for unpacked in (tmp_path / "cluster").glob("worker-*/app-*/*/environment"):  # 300 MB each, else kept by pytest
        shutil.rmtree(unpacked)
    print(f"\npacked environment test: {time.monotonic() - started:.1f} s, {len(probes)} + {len(submitted)} Python starts "
          "on the executors")


def _spark_submit_run(packed_environment: Path, cluster: StandaloneCluster, small: list[str], config: Path, driver_dir: Path,
                      table: str) -> list[tuple]:
    """docs/clusters.md's spark-submit form of the recipe, ``--once``: the table's snapshot in the
    topic files and the summary; the probes of the executors of this application."""
    output, summary = driver_dir.parent / "out-submit", driver_dir.parent / "summary-submit.json"
    before = {app.name for worker in cluster.workers for app in worker.work_dir.glob("app-*")}
    script = subprocess.run([sys.executable, "-m", "sparkcdc.cli", "submit-script"], check=True, capture_output=True,
                            text=True).stdout.strip()
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url,
            "--archives", f"{packed_environment}#environment", "--conf", "spark.pyspark.python=./environment/bin/python", *small,
            script, "run", str(config), "--checkpoint", "ck-submit", "--output", str(output), "--once", "--summary", str(summary)]
    log = driver_dir.parent / "submit.log"
    process = GroupProcess(argv, log, env={"SPARK_LOCAL_IP": HOST}, cwd=driver_dir)
    try:
        code = process.wait(RUN_TIMEOUT)
    except BaseException:
        process.kill()
        raise
    assert code == 0, _failure_report(log, cluster)
    ops = [json.loads(line["value"])["payload"]["op"] for line in output_lines(output) if line["topic"] == f"srv.public.{table}"]
    assert ops == ["r"] * ROWS
    assert json.loads(summary.read_text())["records"] == ROWS
    found = [probe for probe in _probes(cluster) if probe[1].parent.name not in before]
    assert found, f"the spark-submit run started no Python on the executors:\n{_failure_report(log, cluster)}"
    return found


def _check_probes(probes: list[tuple], cluster: StandaloneCluster) -> None:
    """Every executor's Python was the archive's, with sparkcdc from there, on both workers."""
    workers_seen = set()
    for worker, executor_dir, executable, prefix, origin in probes:
        environment = executor_dir / "environment"
        assert Path(executable) == environment / "bin" / "python", f"an executor ran {executable}, not the archive's python"
        assert Path(prefix) == environment
        assert Path(origin) == environment / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / "sparkcdc" / "__init__.py"
        assert Path(os.path.realpath(origin)).is_relative_to(Path(os.path.realpath(worker.work_dir))), origin  # no link out
        workers_seen.add(worker.worker_id)
    assert workers_seen == {w.worker_id for w in cluster.workers}, f"Python ran on the executors of {workers_seen} only: {probes}"


def _probes(cluster: StandaloneCluster) -> list[tuple]:
    """Every probe line of every executor's stderr: (worker, executor dir, executable, prefix, sparkcdc's origin)."""
    found = []
    for worker in cluster.workers:
        for stderr in sorted(worker.work_dir.glob("app-*/*/stderr")):
            for match in PROBE_LINE.finditer(stderr.read_text(errors="replace")):
                found.append((worker, stderr.parent, *match.groups()))
    return found


def _failure_report(log: Path, cluster: StandaloneCluster) -> str:
    executors = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-3000:]}"
                          for w in cluster.workers for p in sorted(w.work_dir.glob("app-*/*/stderr")))
    return f"{log.read_text(errors='replace')[-6000:]}\n{executors}\n{cluster.daemon_logs()}"
