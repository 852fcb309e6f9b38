"""``sparkcdc run --master spark://...`` on a real standalone cluster: a master and two workers
started from the venv's pyspark on 127.0.0.1 (tests/support/standalone_cluster.py).

One pipeline applies a table into a PostgreSQL mirror and a Delta table: the initial snapshot (cut
into chunks, read by tasks on both workers), then inserts, updates, a key change and deletes
streamed by a second ``--once`` run. Each mirror must equal the source, and the Spark event log must
show the snapshot's tasks on executors of both workers. The checkpoint is given relative to the
driver's working directory, as a user types it: the streaming state must still land in the one
directory the driver reads, not in an executor's work dir (docs/clusters.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ..support.processes import GroupProcess
from ..support.spark_event_log import AppLog, read_event_logs
from ..support.standalone_cluster import HOST, QUICK_JVM, StandaloneCluster, standalone_cluster
from .support import checkpoint_batches, checkpoint_offset, properties

pytestmark = pytest.mark.slow

ROWS = 12_000
CHUNK_ROWS = 2_000  # about six snapshot chunks: six tasks for two single-core executors
RUN_TIMEOUT = 240.0


def test_run_applies_on_a_standalone_cluster_with_tasks_on_both_workers(pg_cluster, db, tmp_path, unique_name):
    started = time.monotonic()
    table = f"cl_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, grp integer NOT NULL, label text, amount numeric(12,2), "
               f"updated timestamp)")
    db.execute(f"INSERT INTO {table} SELECT g, g % 17, 'row ' || g, g * 1.25, timestamp '2026-01-01' + g * interval '1 minute' "
               f"FROM generate_series(1, {ROWS}) g")
    db.execute(f"ANALYZE {table}")  # the chunk planner sizes chunks from the statistics
    mirror = f"{table}_mirror"
    db.execute(f'CREATE DATABASE "{mirror}"')
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "skipped.operations": "none", "sparkcdc.snapshot.chunk.rows": str(CHUNK_ROWS),
        # the snapshot's 12,000 changes are folded by several tasks (at least one per core of the cluster)
        "sparkcdc.apply.changes.per.task": str(CHUNK_ROWS)})
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    driver_dir, events = tmp_path / "driver", tmp_path / "events"
    driver_dir.mkdir()
    events.mkdir()
    delta = tmp_path / "delta"
    targets = [f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{mirror}", str(delta)]
    env = _driver_environment(tmp_path / "conf", events)

    with standalone_cluster(tmp_path / "cluster") as cluster:
        def run(name: str) -> None:
            argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--checkpoint", "ck", "--once",
                    "--master", cluster.master_url, "--summary", str(tmp_path / f"{name}.json")]
            for target in targets:
                argv += ["--apply-to", target]
            _run_driver(argv, driver_dir, env, tmp_path / f"{name}.log", cluster)

        run("snapshot")
        assert _summary(tmp_path / "snapshot.json")["records"] == ROWS
        _mirrors_equal(db, pg_cluster, table, mirror, delta)

        changed = _make_changes(db, table)
        run("stream")
        stream = _summary(tmp_path / "stream.json")
        assert stream["batch_ids"] == [1] and stream["records"] >= changed, f"not streamed as one batch: {stream}"
        _mirrors_equal(db, pg_cluster, table, mirror, delta)

        apps = read_event_logs(events, lambda url: _worker_id(cluster, url))
        _assert_workers_agree_with_the_rest_api(cluster, apps)
        workers = {w.worker_id for w in cluster.workers}
        snapshot_run, stream_run = apps
        assert_snapshot_tasks_on_all_workers(snapshot_run, workers)
        assert_apply_tasks_on_all_workers(apps, workers)

    checkpoint = driver_dir / "ck"
    last = checkpoint_batches(checkpoint, "commits")[-1]
    state = checkpoint / "sparkcdc-state" / f"state-{checkpoint_offset(checkpoint, last)['lsn']:020d}.json"
    assert state.is_file(), f"the streaming batch's state is not where the driver reads it: {sorted(checkpoint.rglob('*'))}"
    strays = sorted(str(p) for p in (tmp_path / "cluster").rglob("sparkcdc-state"))
    assert strays == [], "executors wrote the streaming state into their own work dirs"
    print(f"\nstandalone cluster test: {time.monotonic() - started:.1f} s; stages of the streaming run:\n{stream_run.report()}")


def assert_snapshot_tasks_on_all_workers(app: AppLog, workers: set[str]) -> None:
    """The initial snapshot (the first run's batch 0) was read by several tasks, on executors of every worker."""
    stage = app.source_stage(0)
    assert stage is not None, f"no stage of batch 0 ran the source:\n{app.report()}"
    assert stage.tasks >= 4, f"the snapshot was not cut into chunks:\n{stage.describe()}"
    assert stage.workers == workers, f"the snapshot's tasks did not run on every worker:\n{app.report()}"


#: A stage of the apply fold in executors.
FOLD_STAGE = r"sparkcdc apply: fold and stage"  # the description of apply's staging job (spark.apply.stage_task.STAGE_JOB)


def assert_apply_tasks_on_all_workers(apps: list[AppLog], workers: set[str]) -> None:
    """The apply fold runs in executors (the job ``sparkcdc.spark.apply`` describes as its staging
    job): its tasks ran on every worker."""
    folds = [s for app in apps for s in app.stages if s.matches(FOLD_STAGE)]
    assert folds, "no fold-and-stage job in the event logs: " + "\n".join(s.describe() for app in apps for s in app.stages)
    ran = set().union(*(s.workers for s in folds))
    report = "\n".join(s.describe() for s in folds)
    assert ran == workers, f"apply (fold) tasks did not run on every worker:\n{report}"


def _driver_environment(conf: Path, events: Path) -> dict[str, str]:
    """The driver's environment: a SPARK_CONF_DIR whose spark-defaults.conf logs events, and waits for
    both executors before the first job (so the snapshot's tasks can go to both)."""
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("\n".join([
        "spark.eventLog.enabled true",
        f"spark.eventLog.dir {events.as_uri()}",
        "spark.eventLog.compress false",
        "spark.scheduler.minRegisteredResourcesRatio 1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime 120s",
        "spark.executor.memory 512m",
        # short-lived JVMs on a shared machine: C1 only and a serial collector spend far less CPU on start-up
        f"spark.driver.extraJavaOptions {QUICK_JVM}",
        f"spark.executor.extraJavaOptions {QUICK_JVM}",
        f"spark.driver.host {HOST}",
    ]) + "\n")
    return {"SPARK_CONF_DIR": str(conf), "SPARK_LOCAL_IP": HOST}


def _run_driver(argv: list[str], cwd: Path, env: dict[str, str], log: Path, cluster: StandaloneCluster) -> None:
    process = GroupProcess(argv, log, env=env, cwd=cwd)
    try:
        code: int | None = process.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()  # the driver's JVM and Python workers with it
        code = None
    assert code == 0, (f"sparkcdc run exited with {code}:\n{log.read_text(errors='replace')[-6000:]}\n"
                       f"{_executor_logs(cluster)}\n{cluster.daemon_logs()}")


def _executor_logs(cluster: StandaloneCluster) -> str:
    parts = []
    for worker in cluster.workers:
        for stderr in sorted(worker.work_dir.glob("app-*/*/stderr")):
            parts.append(f"--- {stderr.relative_to(worker.work_dir.parent)}\n{stderr.read_text(errors='replace')[-3000:]}")
    return "\n".join(parts)


def _summary(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _make_changes(db: psycopg.Connection, table: str) -> int:
    """Inserts, updates, a primary-key change and deletes in several transactions; the rows they
    changed. (The summary counts more records than that when it counts Debezium's records: a delete's
    tombstone, a key change's delete, tombstone and create; the changes layout counts row changes.)"""
    rows = 0
    with db.transaction():
        rows += db.execute(f"INSERT INTO {table} SELECT g, g % 17, 'new ' || g, g * 0.5, now()::timestamp "
                           f"FROM generate_series({ROWS + 1}, {ROWS + 1000}) g").rowcount
        rows += db.execute(f"UPDATE {table} SET amount = amount + 1, label = label || '+' WHERE id % 7 = 0").rowcount
    with db.transaction():
        rows += db.execute(f"UPDATE {table} SET id = id + {10 * ROWS} WHERE id % 13 = 0 AND id <= 2000").rowcount
        rows += db.execute(f"DELETE FROM {table} WHERE id % 11 = 0").rowcount
    with db.transaction():
        rows += db.execute(f"UPDATE {table} SET grp = -grp, updated = NULL WHERE id BETWEEN 500 AND 900").rowcount
    return rows


def _mirrors_equal(db: psycopg.Connection, pg_cluster, table: str, mirror: str, delta: Path) -> None:
    checksum = f"SELECT count(*), md5(string_agg(t::text, '|' ORDER BY t.id)) FROM {table} t"
    source = db.execute(checksum).fetchone()
    with psycopg.connect(pg_cluster.conninfo(mirror), autocommit=True) as m:
        assert m.execute(checksum).fetchone() == source, "the PostgreSQL mirror differs from the source"
    from deltalake import DeltaTable

    rows = db.execute(f"SELECT * FROM {table} ORDER BY id")
    columns = [d.name for d in rows.description or ()]
    stored = sorted(tuple(r[c] for c in columns) for r in DeltaTable(str(delta / "public" / table)).to_pyarrow_table().to_pylist())
    assert stored == rows.fetchall(), "the Delta mirror differs from the source"


def _worker_id(cluster: StandaloneCluster, log_url: str) -> str | None:
    worker = cluster.worker_of_log_url(log_url)
    return None if worker is None else worker.worker_id


def _assert_workers_agree_with_the_rest_api(cluster: StandaloneCluster, apps: list[AppLog]) -> None:
    """The event log's executor -> worker mapping (by log URL) is what each worker's JSON says it ran,
    and both runs of the test are there."""
    assert len(apps) == 2, f"expected the event logs of two runs, found {[a.app_id for a in apps]}"
    ran: dict[tuple[str, str], str] = {}
    for worker in cluster.workers:
        with urllib.request.urlopen(f"{worker.webui_url}/json/", timeout=5) as response:  # noqa: S310 - local URL
            state = json.loads(response.read())
        for executor in state.get("executors", []) + state.get("finishedexecutors", []):
            ran[(str(executor["appid"]), str(executor["id"]))] = worker.worker_id
    for app in apps:
        logged = {(app.app_id, e): _worker_id(cluster, url) for e, url in app.executor_log_urls.items()}
        assert logged == {k: v for k, v in ran.items() if k[0] == app.app_id}, f"event log and workers disagree: {logged} {ran}"
