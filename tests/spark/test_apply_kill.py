"""``apply_changes`` killed with SIGKILL at random moments while a random workload runs.

Four kills (two on PostgreSQL 18: see ``kills_for``) land while the pipeline applies batches (snapshot and streaming) into a PostgreSQL
mirror (SCD1), a PostgreSQL history (SCD2), a Delta Lake mirror (SCD1) and an Iceberg history (SCD2); on 18 into the
PostgreSQL pair only, as what the lake targets do does not depend on the source's major; a final run catches up;
then the mirrors equal the source and the history has one open version per live key and no
overlapping versions — a batch applied twice would show as a duplicate version or a wrong row.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from sparkcdc.apply.targets.iceberg import IcebergTarget

from ..support.processes import GroupProcess
from ..support.waiting import wait_until
from . import apply_workload as workload
from .support import kills_for, properties

KILLS = 4
RUNNER = """
import json, sys
from sparkcdc.spark.runner import run_pipeline
spec = json.load(open(sys.argv[1]))
run_pipeline(spec["properties"], output=None, checkpoint=spec["checkpoint"], master="local[2]", once=spec["once"],
             apply_to=[tuple(t) for t in spec["targets"]], trigger_interval="200 milliseconds")
"""


def _commits(checkpoint: Path) -> int:
    folder = checkpoint / "commits"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


def _run(spec: Path, log: Path) -> GroupProcess:
    return GroupProcess([sys.executable, "-c", RUNNER, str(spec)], log)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_sigkill_while_applying(pg_cluster, pg_major, db, tmp_path, unique_name):
    kills = kills_for(pg_major, KILLS)
    prefix = f"ak{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix)
    for suffix in ("mirror", "history"):
        db.execute(f'CREATE DATABASE "{prefix}_{suffix}"')
    base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
    targets = [(f"{base}/{prefix}_mirror", 1), (f"{base}/{prefix}_history", 2)]
    lakes = pg_major == "15"  # the lake targets do not depend on the source's major: on 18 the PostgreSQL pair only
    if lakes:
        targets += [(str(tmp_path / "delta"), 1), (f"iceberg+file://{tmp_path / 'iceberg'}", 2)]
    props = properties(pg_cluster, f"{prefix}_slot", workload.tables(prefix), **{
        "skipped.operations": "none",
        "sparkcdc.max.batch.wal.bytes": "8388608",  # several batches: kills land between and inside them
    })
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "runs.log"
    spec = tmp_path / "run.json"

    def write_spec(once: bool) -> None:
        spec.write_text(json.dumps({"properties": props, "checkpoint": str(checkpoint), "targets": targets, "once": once}))

    def context() -> str:
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    counts: dict[str, int] = {}

    def write() -> None:
        with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
            counts.update(workload.run_workload(conn, prefix, 50_000))

    writer = threading.Thread(target=write, daemon=True)
    rnd = random.Random(20261122)
    write_spec(once=False)
    for kill in range(kills):
        run = _run(spec, log)
        before = _commits(checkpoint)
        wait_until(lambda run=run, before=before: _commits(checkpoint) > before or run.process.poll() is not None,
                   timeout=300, interval=0.05, what=f"a batch to commit\n{context()}")
        assert run.process.poll() is None, f"the pipeline exited:\n{context()}"
        if kill == 0:
            writer.start()  # the snapshot is applied: now the workload streams
        time.sleep(rnd.uniform(0.2, 3.0))  # a random moment while batches are being applied: the test's point
        run.kill()
        print(f"kill {kill + 1}: {_commits(checkpoint)} batches committed", flush=True)
    writer.join(600)
    assert counts.get("items truncate") == 1, "the workload did not finish"
    write_spec(once=True)
    assert _run(spec, log).wait(900) == 0, context()

    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as mirror, \
            psycopg.connect(pg_cluster.conninfo(f"{prefix}_history"), autocommit=True) as history:
        assert workload.mirror_mismatches(db, mirror, prefix) == []
        assert workload.history_problems(db, history, prefix) == []
    if not lakes:
        return
    assert workload.delta_mismatches(db, tmp_path / "delta", prefix) == []
    iceberg = IcebergTarget(f"iceberg+file://{tmp_path / 'iceberg'}")
    try:
        assert workload.iceberg_history_problems(db, iceberg.catalog(), prefix) == []
    finally:
        iceberg.close()
