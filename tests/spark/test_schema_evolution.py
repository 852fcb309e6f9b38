"""Mirrors that follow the source: a continuous ``sparkcdc run --apply-to`` while the source tables
change shape under a writer (tests/spark/evolution_workload.py has the list), killed with SIGKILL in
the middle of the sequence and started again; at the end the mirrors equal the source, column by
column, without another restart.
"""

from __future__ import annotations

import psycopg
import pytest

from ..support.waiting import wait_until
from . import evolution_workload as workload
from .support import PipelineProcess, properties

pytestmark = pytest.mark.slow

def test_postgresql_mirror_and_history_follow_every_shape_change(pg_cluster, db, tmp_path, unique_name):
    prefix = f"ev{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix)
    for suffix in ("mirror", "history"):
        db.execute(f'CREATE DATABASE "{prefix}_{suffix}"')
    base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
    targets = [(f"{base}/{prefix}_mirror", 1), (f"{base}/{prefix}_history", 2)]
    props = properties(pg_cluster, f"{prefix}_slot", [], **{
        "table.include.list": workload.include_list(prefix),
        "publication.autocreate.mode": "all_tables",  # Debezium's default: a new table is published as it is created
        "signal.data.collection": f"public.{prefix}_signal",
        "incremental.snapshot.chunk.size": "100",
    })
    run = PipelineProcess(tmp_path, props, targets)
    run.start()  # the initial snapshot is applied
    writer = workload.EvolvingWriter(db, prefix)
    middle = len(writer.steps) // 2
    writer.run(writer.steps[:middle], changes_between=60)
    run.alive()
    run.kill()  # in the middle of the sequence
    run.start()
    writer.run(writer.steps[middle:], changes_between=60)

    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as mirror, \
            psycopg.connect(pg_cluster.conninfo(f"{prefix}_history"), autocommit=True) as history:
        def problems() -> list[str]:
            run.alive()
            return workload.pg_mismatches(db, mirror, prefix) + workload.pg_mismatches(db, history, prefix, history=True)

        wait_until(lambda: not problems(), timeout=240, interval=1.0,
                   what=lambda: f"the mirrors to equal the source: {problems()}\n{run.context()}")
        # The dropped column stays in the mirror, with its values up to the drop.
        assert mirror.execute(f"SELECT count(gone) FROM {prefix}_a").fetchone()[0] > 0
    run.kill()
    log = run.log.read_text(errors="replace")
    # The volatile default's values came from an incremental snapshot the applier signalled.
    assert "were added with values no WAL record carries" in log and "an incremental snapshot of the table reads them again" in log
    assert "follows its source" in log
