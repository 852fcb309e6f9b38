"""Mirrors that follow the source: a continuous ``sparkcdc run --apply-to`` while the source tables
change shape under a writer (tests/spark/evolution_workload.py has the list), killed with SIGKILL in
the middle of the sequence and started again; at the end the mirrors equal the source, column by
column, without another restart. Per target: PostgreSQL, Delta Lake and Iceberg, each as a mirror
(SCD1) and a history (SCD2) in the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.postgres import drop_slot

from ..support.waiting import wait_until
from . import evolution_workload as workload
from .support import PipelineProcess, properties

pytestmark = pytest.mark.slow


class _Postgres:
    """Two databases of the session cluster: the mirror and the history."""

    def __init__(self, pg_cluster: Any, db: psycopg.Connection, prefix: str, tmp_path: Path) -> None:
        self.cluster, self.prefix = pg_cluster, prefix
        for suffix in ("mirror", "history"):
            db.execute(f'CREATE DATABASE "{prefix}_{suffix}"')
        base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
        self.targets = [(f"{base}/{prefix}_mirror", 1), (f"{base}/{prefix}_history", 2)]

    def problems(self, db: psycopg.Connection) -> list[str]:
        with psycopg.connect(self.cluster.conninfo(f"{self.prefix}_mirror"), autocommit=True) as mirror, \
                psycopg.connect(self.cluster.conninfo(f"{self.prefix}_history"), autocommit=True) as history:
            return workload.pg_mismatches(db, mirror, self.prefix) + workload.pg_mismatches(db, history, self.prefix, history=True)

    def dropped_column_values(self) -> int:
        with psycopg.connect(self.cluster.conninfo(f"{self.prefix}_mirror"), autocommit=True) as mirror:
            return int(mirror.execute(f"SELECT count(gone) FROM {self.prefix}_a").fetchone()[0])


class _Delta:
    """Two Delta Lake roots: the mirror and the history."""

    def __init__(self, pg_cluster: Any, db: psycopg.Connection, prefix: str, tmp_path: Path) -> None:
        self.prefix, self.roots = prefix, (tmp_path / "delta-mirror", tmp_path / "delta-history")
        self.targets = [(str(self.roots[0]), 1), (str(self.roots[1]), 2)]

    def read(self, root: Path) -> Callable[[str], list[dict[str, Any]]]:
        from deltalake import DeltaTable

        def rows(table: str) -> list[dict[str, Any]]:
            path = root.joinpath(*table.split("."))
            return DeltaTable(str(path)).to_pyarrow_table().to_pylist() if path.exists() else []
        return rows

    def problems(self, db: psycopg.Connection) -> list[str]:
        return (workload.lake_mismatches(db, self.read(self.roots[0]), self.prefix)
                + workload.lake_mismatches(db, self.read(self.roots[1]), self.prefix, history=True))

    def dropped_column_values(self) -> int:
        return sum(row["gone"] is not None for row in self.read(self.roots[0])(f"public.{self.prefix}_a"))


class _Iceberg:
    """Two Iceberg warehouses (local catalogs): the mirror and the history."""

    def __init__(self, pg_cluster: Any, db: psycopg.Connection, prefix: str, tmp_path: Path) -> None:
        self.prefix, self.locations = prefix, (f"iceberg+file://{tmp_path / 'ice-mirror'}", f"iceberg+file://{tmp_path / 'ice-history'}")
        self.targets = [(self.locations[0], 1), (self.locations[1], 2)]

    def read(self, location: str) -> Callable[[str], list[dict[str, Any]]]:
        from sparkcdc.apply.targets.iceberg import IcebergTarget

        def rows(table: str) -> list[dict[str, Any]]:
            target = IcebergTarget(location)
            try:
                catalog = target.catalog()
                return catalog.load_table(table).scan().to_arrow().to_pylist() if catalog.table_exists(table) else []
            finally:
                target.close()
        return rows

    def problems(self, db: psycopg.Connection) -> list[str]:
        return (workload.lake_mismatches(db, self.read(self.locations[0]), self.prefix)
                + workload.lake_mismatches(db, self.read(self.locations[1]), self.prefix, history=True))

    def dropped_column_values(self) -> int:
        return sum(row["gone"] is not None for row in self.read(self.locations[0])(f"public.{self.prefix}_a"))


@pytest.mark.parametrize("kind", [_Postgres, _Delta, _Iceberg], ids=["postgresql", "delta", "iceberg"])
def test_mirror_and_history_follow_every_shape_change(pg_cluster, db, tmp_path, unique_name, kind):
    prefix = f"ev{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix)
    stores = kind(pg_cluster, db, prefix, tmp_path)
    props = properties(pg_cluster, f"{prefix}_slot", [], **{
        "table.include.list": workload.include_list(prefix),
        "publication.autocreate.mode": "all_tables",  # Debezium's default: a new table is published as it is created
        "signal.data.collection": f"public.{prefix}_signal",
        "incremental.snapshot.chunk.size": "100",
    })
    try:
        _follow_the_shape_changes(db, prefix, stores, props, tmp_path)
    finally:
        # An all-tables publication left on the session cluster makes every table published, and a
        # table of another test with REPLICA IDENTITY NOTHING then refuses updates: drop it, with the
        # slot, so that the order of the test modules (and of xdist's workers) does not matter.
        db.execute(f"DROP PUBLICATION IF EXISTS {props['publication.name']}")
        drop_slot(db, props["slot.name"], wait=30)


def _follow_the_shape_changes(db: psycopg.Connection, prefix: str, stores: Any, props: dict[str, str], tmp_path: Path) -> None:
    with PipelineProcess(tmp_path, props, stores.targets) as run:
        run.start()  # the initial snapshot is applied
        writer = workload.EvolvingWriter(db, prefix)
        middle = len(writer.steps) // 2
        writer.run(writer.steps[:middle], changes_between=60)
        run.alive()
        run.kill()  # in the middle of the sequence
        run.start()
        writer.run(writer.steps[middle:], changes_between=60)

        def problems() -> list[str]:
            run.alive()
            return stores.problems(db)

        wait_until(lambda: not problems(), timeout=300, interval=1.0,
                   what=lambda: f"the mirrors to equal the source: {problems()}\n{run.context()}")
        assert stores.dropped_column_values() > 0  # the dropped column stays, with its values up to the drop
    log = run.log.read_text(errors="replace")
    # The volatile default's values came from an incremental snapshot the applier signalled.
    assert "were added with values no WAL record carries" in log and "an incremental snapshot of the table reads them again" in log
    assert "follows its source" in log
