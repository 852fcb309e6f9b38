"""A Spark user's own ``foreachBatch`` over a micro-batch that holds a table before and after its
shape changed (a rename, a column added with a default, a widened type): ``batch_changes`` gives
every row in the merged view, in order, and ``table_changes`` with the view ``describe_table``
gives now reads the older rows into it by column identity."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.postgres import drop_slot
from sparkcdc.spark.source.options import options_for
from sparkcdc.spark.views import batch_changes, describe_table, table_changes

from .support import properties

pytestmark = pytest.mark.slow


def test_a_batch_of_two_versions_reads_as_one_merged_view(spark: Any, db: Any, pg_cluster: Any, tmp_path: Path, unique_name: str) -> None:
    table = f"vv_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id integer PRIMARY KEY, v varchar(10), n integer, p numeric(8,2))")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{
        "snapshot.mode": "no_data", "sparkcdc.output.layout": "changes",
        "sparkcdc.state.location": str(tmp_path / "state")})
    frame = spark.readStream.format("postgres-cdc").options(**options_for(props)).load()
    merged: list[dict[str, Any]] = []
    now: list[dict[str, Any]] = []

    def on_batch(batch: Any, _batch_id: int) -> None:
        merged.extend(row.asDict() for row in batch_changes(batch, f"public.{table}", props).collect())
        now.extend(row.asDict() for row in table_changes(batch, describe_table(props, table)).collect())

    try:
        spark_query = frame.writeStream.foreachBatch(lambda b, i: None).option("checkpointLocation", str(tmp_path / "ck")) \
            .trigger(availableNow=True).start()
        spark_query.awaitTermination()  # the slot exists from here on
        db.execute(f"INSERT INTO {table} VALUES (1, 'a', 1, 1.50)")
        db.execute(f"ALTER TABLE {table} RENAME COLUMN v TO w")
        db.execute(f"ALTER TABLE {table} ALTER COLUMN n TYPE bigint, ALTER COLUMN p TYPE numeric(12,4)")
        # (after the rewrite the type change made: a rewrite writes a fast default's value into the rows,
        # and PostgreSQL forgets it; docs/schema-evolution.md says what the applier does then)
        db.execute(f"ALTER TABLE {table} ADD COLUMN x integer NOT NULL DEFAULT 9")
        db.execute(f"INSERT INTO {table} VALUES (2, 'b', 5000000000, 2.1234, 5)")
        db.execute(f"UPDATE {table} SET n = 10 WHERE id = 1")
        query = frame.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(tmp_path / "ck")) \
            .trigger(availableNow=True).start()
        query.awaitTermination()
        assert query.exception() is None, query.exception()
    finally:
        drop_slot(db, unique_name, wait=30)

    def data(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        ordered = sorted(rows, key=lambda r: (r["__commit_lsn"], r["__lsn"], r["__ordinal"]))
        return [(r["__op"], r["id"], r["w"], r["n"], r["p"], r["x"]) for r in ordered]

    expected = [("c", 1, "a", 1, Decimal("1.5000"), 9), ("c", 2, "b", 5000000000, Decimal("2.1234"), 5),
                ("u", 1, "a", 10, Decimal("1.5000"), 9)]
    assert data(merged) == expected
    assert "v" not in merged[0]  # renamed: one column, under its new name
    # The view of the catalog now reads the older row by identity too (its raw values cast to the newer
    # type), except a value its version reads another way (a decimal of another scale): null there.
    assert data(now) == [(op, key, w, n, p if op != "c" or key != 1 else None, x) for op, key, w, n, p, x in expected]
