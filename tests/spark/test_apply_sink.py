"""The ``sparkcdc-apply`` sink (sparkcdc.spark.sinks.apply_sink) in a plain streaming query: one
table's typed changes applied to a Delta mirror, the executors folding and staging, the driver's
commit applying and recording each micro-batch. (In a Declarative Pipeline it is run by
tests/pipelines/test_example_pipeline.py, into PostgreSQL.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.spark.sinks.apply_sink import APPLY_SINK_FORMAT, apply_input, apply_sink_options, register_apply_sink
from sparkcdc.spark.source.options import options_for
from sparkcdc.spark.views import describe_table, table_changes

from .support import properties

pytestmark = pytest.mark.slow


def _apply_once(spark: Any, props: dict[str, str], table: str, target: Path, checkpoint: Path) -> None:
    """One availableNow run: the source, the table's typed changes, the sink."""
    register_apply_sink(spark)
    view = describe_table(props, table)
    source = spark.readStream.format("postgres-cdc").options(
        **options_for({**props, "sparkcdc.state.location": str(checkpoint / "sparkcdc-state")})).load()
    query = (apply_input(table_changes(source, view, layout="columns")).writeStream.format(APPLY_SINK_FORMAT)
             .options(**apply_sink_options(str(target), table, props, pipeline_id=str(checkpoint)))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def _mirror(target: Path, table: str) -> list[tuple[Any, ...]]:
    from deltalake import DeltaTable

    schema, name = table.split(".")
    return sorted((r["id"], r["name"], r["notes"]) for r in DeltaTable(str(target / schema / name)).to_pyarrow_table().to_pylist())


def test_sink_applies_a_table_to_delta_exactly_once(spark: Any, pg_cluster: Any, db: psycopg.Connection, unique_name: str,
                                                    tmp_path: Path) -> None:
    table = f"public.{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, notes text)")
    # notes: TOASTed (incompressible, over 2 kB), so an update that leaves it alone streams a placeholder
    db.execute(f"INSERT INTO {table} SELECT g, 'row ' || g, (SELECT string_agg(md5(g::text || i::text), '') "
               "FROM generate_series(1, 400) i) FROM generate_series(1, 30) g")
    toast = db.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = %s::regclass", (table,)).fetchone()[0]
    assert db.execute(f"SELECT count(*) FROM {toast}").fetchone()[0] > 0  # stored out of line: updates carry placeholders
    props = properties(pg_cluster, unique_name, [table])
    target, checkpoint = tmp_path / "delta", tmp_path / "checkpoint"

    def source() -> list[tuple[Any, ...]]:
        return sorted(db.execute(f"SELECT id, name, notes FROM {table}").fetchall())

    stale = f"{unique_name}_stale"
    try:
        # A target an earlier pipeline left (its own slot and pipeline id) with a row the source has lost since.
        db.execute(f"INSERT INTO {table} VALUES (99, 'stale', 'gone before the snapshot')")
        _apply_once(spark, properties(pg_cluster, stale, [table]), table, target, tmp_path / "stale-checkpoint")
        assert 99 in [row[0] for row in _mirror(target, table)]
        db.execute(f"DELETE FROM {table} WHERE id = 99")
        # The initial snapshot's batch is the table's image, as with apply_changes: the stale row goes.
        _apply_once(spark, props, table, target, checkpoint)
        assert _mirror(target, table) == source()

        db.execute(f"UPDATE {table} SET name = 'renamed' WHERE id <= 5")   # notes unchanged: a TOAST placeholder
        db.execute(f"DELETE FROM {table} WHERE id BETWEEN 10 AND 12")
        db.execute(f"INSERT INTO {table} VALUES (31, 'new', 'short')")
        _apply_once(spark, props, table, target, checkpoint)
        assert _mirror(target, table) == source()
        assert len(source()) == 28
    finally:
        db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ANY(%s) AND NOT active",
                   ([unique_name, stale],))
