"""Adding a table to a running capture (docs/signals.md, "Adding a table"), as a test.

The steps a user takes: the pipeline mirrors ``orders`` into PostgreSQL and Delta; ``customers``
already holds rows the pipeline never saw. The user adds ``customers`` to ``table.include.list``,
restarts from the same checkpoint (the filtered publication gains the table), and signals an
incremental snapshot of it. ``orders`` keeps streaming from where it was (no second snapshot of it);
``customers`` is mirrored from the snapshot's reads and the changes streamed since the restart.
A blocking snapshot of ``customers`` afterwards leaves ``orders`` as it is in the mirrors.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from sparkcdc.spark.runner import run_pipeline

from .support import properties

pytestmark = pytest.mark.slow


def _rows(conn: psycopg.Connection, table: str) -> list[tuple]:
    return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


def _delta_rows(root: Path, table: str) -> list[tuple]:
    from deltalake import DeltaTable

    stored = DeltaTable(str(root / "public" / table)).to_pyarrow_table().to_pylist()
    return sorted(tuple(row.values()) for row in stored)


def test_add_a_table_signal_its_snapshot_and_mirror_it(pg_cluster, db, tmp_path, unique_name) -> None:
    prefix = f"at{abs(hash(unique_name)) % 10**6}"
    orders, customers, signal = f"{prefix}_orders", f"{prefix}_customers", f"{prefix}_signal"
    db.execute(f"CREATE TABLE {signal} (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    db.execute(f"CREATE TABLE {orders} (id int PRIMARY KEY, amount int)")
    db.execute(f"CREATE TABLE {customers} (id int PRIMARY KEY, name text, tier int)")
    db.execute(f"INSERT INTO {orders} SELECT g, g * 10 FROM generate_series(1, 500) g")
    db.execute(f"INSERT INTO {customers} SELECT g, 'c' || g, g % 3 FROM generate_series(1, 2500) g")
    mirror = f"{prefix}_mirror"
    db.execute(f'CREATE DATABASE "{mirror}"')
    targets = [(f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{mirror}", 1), (str(tmp_path / "delta"), 1)]
    checkpoint = tmp_path / "checkpoint"
    common = {"signal.data.collection": f"public.{signal}", "incremental.snapshot.chunk.size": "1000"}

    # 1. Capturing orders only (initial snapshot, then streaming).
    before = properties(pg_cluster, prefix, [f"public.{orders}"], **common)
    run_pipeline(before, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=targets)
    db.execute(f"UPDATE {orders} SET amount = amount + 1 WHERE id <= 100")
    db.execute(f"UPDATE {customers} SET tier = 9 WHERE id <= 50")  # not captured yet: never streamed

    # 2. customers added to table.include.list; the run restarts from the same checkpoint. Changes made
    #    from now on are streamed; the rows it holds already come from the signalled snapshot.
    after = properties(pg_cluster, prefix, [f"public.{orders}", f"public.{customers}"], **common)
    run_pipeline(after, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=targets)
    db.execute(f"INSERT INTO {signal} VALUES ('add-customers', 'execute-snapshot', %s)",
               (json.dumps({"data-collections": [f"public.{customers}"], "type": "incremental"}),))
    db.execute(f"UPDATE {customers} SET name = name || '*' WHERE id BETWEEN 40 AND 60")
    db.execute(f"DELETE FROM {customers} WHERE id BETWEEN 2000 AND 2100")
    db.execute(f"UPDATE {orders} SET amount = 0 WHERE id > 450")
    result = run_pipeline(after, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=targets)
    assert result.records >= 2500 - 101

    _assert_mirrored(pg_cluster, db, mirror, tmp_path / "delta", (orders, customers))

    # 3. A blocking snapshot of customers later on: its rows update that table only (an initial
    #    snapshot's rows would be the image of every table, emptying orders in the mirrors).
    db.execute(f"INSERT INTO {signal} VALUES ('again-customers', 'execute-snapshot', %s)",
               (json.dumps({"data-collections": [f"public.{customers}"], "type": "blocking"}),))
    db.execute(f"UPDATE {customers} SET tier = 7 WHERE id BETWEEN 100 AND 120")
    db.execute(f"UPDATE {orders} SET amount = -1 WHERE id = 1")
    run_pipeline(after, output=None, checkpoint=checkpoint, once=True, master="local[2]", apply_to=targets)
    _assert_mirrored(pg_cluster, db, mirror, tmp_path / "delta", (orders, customers))


def _assert_mirrored(pg_cluster, db, mirror: str, delta: Path, tables: tuple[str, ...]) -> None:
    with psycopg.connect(pg_cluster.conninfo(mirror), autocommit=True) as m:
        for table in tables:
            assert _rows(m, f"public.{table}") == _rows(db, table), f"the PostgreSQL mirror of {table} differs"
    for table in tables:
        assert _delta_rows(delta, table) == _rows(db, table), f"the Delta mirror of {table} differs"
