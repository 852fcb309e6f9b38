"""Acceptance of ``apply_changes`` end to end: a real SparkSession, the session PostgreSQL cluster,
mirrors in PostgreSQL (SCD1), Delta Lake (SCD1) and Iceberg (SCD1, a local SQLite catalog) and a
history in PostgreSQL (SCD2).

The workload (tests/spark/apply_workload.py) makes 100,000 random changes over three tables after
their initial snapshot: inserts, updates (keys changed too), deletes, updates leaving a TOASTed
column unchanged under REPLICA IDENTITY DEFAULT, and a TRUNCATE.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from sparkcdc.apply.targets.iceberg import IcebergTarget
from sparkcdc.spark.runner import run_pipeline

from . import apply_workload as workload
from .support import properties

pytestmark = pytest.mark.slow


def _database(db: psycopg.Connection, name: str) -> str:
    db.execute(f'CREATE DATABASE "{name}"')
    return name


def _targets(cluster, mirror: str, history: str, delta: Path, iceberg: Path) -> list[tuple[str, int]]:
    base = f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}"
    return [(f"{base}/{mirror}", 1), (f"{base}/{history}", 2), (str(delta), 1), (f"iceberg+file://{iceberg}", 1)]


def test_random_workload_mirrors_equal_the_source(pg_cluster, db, tmp_path, unique_name):
    prefix = f"ap{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix)
    mirror, history = _database(db, f"{prefix}_mirror"), _database(db, f"{prefix}_history")
    props = properties(pg_cluster, f"{prefix}_slot", workload.tables(prefix), **{"skipped.operations": "none"})
    targets = _targets(pg_cluster, mirror, history, tmp_path / "delta", tmp_path / "iceberg")
    checkpoint = tmp_path / "checkpoint"

    first = run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=targets)
    assert first.records >= 6000  # the snapshot: 2,000 rows per table
    counts = workload.run_workload(db, prefix, 40_000)
    assert counts["items truncate"] == 1 and counts["accounts update (notes unchanged)"] > 4_000
    assert counts["accounts key change (notes unchanged)"] > 400
    second = run_pipeline(props, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=targets)
    assert second.records >= 40_000

    with psycopg.connect(pg_cluster.conninfo(mirror), autocommit=True) as m, \
            psycopg.connect(pg_cluster.conninfo(history), autocommit=True) as h:
        assert workload.mirror_mismatches(db, m, prefix) == []
        assert workload.history_problems(db, h, prefix) == []
    assert workload.delta_mismatches(db, tmp_path / "delta", prefix) == []
    target = IcebergTarget(f"iceberg+file://{tmp_path / 'iceberg'}")
    assert workload.iceberg_mismatches(db, target.catalog(), prefix) == []
    target.close()
