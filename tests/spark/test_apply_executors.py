"""``apply_changes`` folds in the executors: the driver plans and commits, executors move data.

* Only small answers reach the driver: the census, the count of the tables big enough to split,
  and one summary row per partition; no change row is collected (``toArrow``, ``collect``…) and the
  fold runs in the Python workers, not in the driver's process. A big table's batch is split by key
  (the snapshot's image too: keys none of its partitions holds are removed), one with a truncate
  or with a primary-key change lacking a TOASTed column is folded whole.
* A task attempt that staged and then failed is not applied, its retry is, once; the staging is
  empty afterwards (Spark retries tasks only with ``local[N,F]``: a process of its own).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

from sparkcdc.spark.apply import ChangeApplier
from sparkcdc.spark.apply.census import CENSUS_SCHEMA
from sparkcdc.spark.apply.stage_task import SUMMARY
from sparkcdc.spark.source.options import options_for

from . import apply_workload as workload
from .support import properties

pytestmark = pytest.mark.slow

_DRIVER_READS = ("collect", "toArrow", "toPandas", "take", "head", "first", "tail", "toLocalIterator")


class DriverReads:
    """Every read of rows into the driver's Python: which method, the frame's columns, how many rows."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...], int]] = []
        self.summaries: list[list[Any]] = []  # per collect of the summaries: one batch of one applier

    def spy(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in _DRIVER_READS:
            original = getattr(ClassicDataFrame, name)

            def read(frame: Any, *args: Any, __original: Any = original, __name: str = name, **kwargs: Any) -> Any:
                result = __original(frame, *args, **kwargs)
                rows = result.num_rows if hasattr(result, "num_rows") else len(result) if hasattr(result, "__len__") else -1
                self.calls.append((__name, tuple(frame.columns), rows))
                if __name == "collect" and tuple(frame.columns) == tuple(SUMMARY.names):
                    self.summaries.append(list(result))
                return result

            monkeypatch.setattr(ClassicDataFrame, name, read)


def _run(spark: Any, props: dict[str, str], checkpoint: Path, on_batch: Any) -> None:
    options = options_for({**props, "sparkcdc.state.location": str(checkpoint / "sparkcdc-state")})
    frame = spark.readStream.format("postgres-cdc").options(**options).load()
    query = (frame.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(300) is not False, "the availableNow query did not finish"
    assert query.exception() is None, query.exception()


def _parts_by_table(summaries: list[Any]) -> dict[str, list[Any]]:
    """One batch's staged parts of each table."""
    found: dict[str, list[Any]] = {}
    for row in summaries:
        found.setdefault(row["target"], []).append(pickle.loads(row["part"]))
    return found


@pytest.mark.parametrize("layout", ["columns", "changes"])
def test_the_fold_runs_in_executors_and_only_summaries_reach_the_driver(spark, pg_cluster, db, tmp_path, unique_name,
                                                                         monkeypatch, layout):
    """On the ``columns`` layout a counting job over the typed changes finds which tables must be
    folded whole; on the ``changes`` layout the census reads it from the block headers (no such job)."""
    prefix = f"ex{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix, rows=1500)
    for name in (f"{prefix}_mirror", f"{prefix}_history"):
        db.execute(f'CREATE DATABASE "{name}"')
    base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
    checkpoint = tmp_path / "checkpoint"
    props = properties(pg_cluster, f"{prefix}_slot", workload.tables(prefix),
                       **{"skipped.operations": "none", "sparkcdc.output.layout": layout, "sparkcdc.snapshot.chunk.rows": 400})
    appliers = [ChangeApplier(f"{base}/{prefix}_{name}", props, pipeline_id=str(checkpoint), all_tables=True,
                              defaults={"stored_as_scd_type": scd}, events_per_partition=400)
                for name, scd in (("mirror", 1), ("history", 2))]
    reads = DriverReads()

    def apply_all(batch: Any, batch_id: int) -> None:
        for applier in appliers:
            applier(batch, batch_id)

    reads.spy(monkeypatch)
    _run(spark, props, checkpoint, apply_all)  # the initial snapshot: 1,500 rows a table, in chunks of about 400
    snapshot = [_parts_by_table(rows) for rows in reads.summaries]
    reads.summaries.clear()
    counts = workload.run_workload(db, prefix, 4000, seed=5)  # a TRUNCATE of items included
    assert counts["items truncate"] == 1 and counts["accounts key change (notes unchanged)"] > 10
    _run(spark, props, checkpoint, apply_all)  # one batch (the source's default size)
    streamed = [_parts_by_table(rows) for rows in reads.summaries]
    monkeypatch.undo()

    assert not [call for call in reads.calls if call[0] != "collect"], reads.calls  # no toArrow, no toPandas…
    kinds = {columns for _, columns, _ in reads.calls}
    census = tuple(CENSUS_SCHEMA.names)  # a summary per partition and table
    if layout == "changes":  # the block headers' counts: no counting job
        assert kinds <= {census, tuple(SUMMARY.names)}, kinds
    else:
        assert kinds <= {census, ("events", "truncates", "lacking", "target"), tuple(SUMMARY.names)}, kinds
    assert sum(rows for _, _, rows in reads.calls) < 120  # a few per table and batch; 10,000 changes were applied
    parts = [part for found in (*snapshot, *streamed) for table in found.values() for part in table]
    assert parts and all(part.worker not in (None, os.getpid()) for part in parts)  # folded in the Python workers
    accounts, items, links = workload.tables(prefix)
    # On the changes layout the image's blocks of a table whose every codec has an Arrow kernel are
    # typed by the stage task itself ("type"); accounts' numeric balance is typed by Spark SQL.
    typed_here = {(table, "type" in dict(part.seconds)) for found in snapshot for table, table_parts in found.items()
                  for part in table_parts}
    if layout == "changes":
        assert typed_here == {(accounts, False), (items, True), (links, True)}, typed_here
    else:
        assert typed_here == {(accounts, False), (items, False), (links, False)}, typed_here
    streamed_parts = [part for found in streamed for table in found.values() for part in table]
    assert all(dict(part.seconds).keys() == {"read", "fold", "stage"} for part in streamed_parts)
    assert len(snapshot) == 2 and len(streamed) == 2  # one batch each, two appliers
    for found in snapshot:
        for table in (accounts, items, links):  # the image, folded in the chunks' tasks that read it (no shuffle by key)
            assert len(found[table]) > 1 and sum(part.events for part in found[table]) == 1500
    for found in streamed:
        assert len(found[accounts]) == 1  # key changes lacking the TOASTed notes: whole
        assert len(found[items]) == 1  # the truncate: whole
        assert len(found[links]) > 1  # split by key
        changes = sum(v for k, v in counts.items() if k.startswith("links")) + counts["links key change"]  # a delete and a create
        assert sum(part.events for part in found[links]) == changes

    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as m, \
            psycopg.connect(pg_cluster.conninfo(f"{prefix}_history"), autocommit=True) as h:
        assert workload.mirror_mismatches(db, m, prefix) == []
        assert workload.history_problems(db, h, prefix) == []
    for applier in appliers:
        applier.close()


@pytest.mark.timeout(900)
def test_a_task_that_failed_after_staging_is_applied_once(pg_cluster, db, tmp_path, unique_name):
    prefix = f"rt{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix, rows=400)
    db.execute(f'CREATE DATABASE "{prefix}_history"')
    base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
    markers, checkpoint, delta = tmp_path / "failed-attempts", tmp_path / "checkpoint", tmp_path / "delta"
    markers.mkdir()
    props = properties(pg_cluster, f"{prefix}_slot", workload.tables(prefix), **{"skipped.operations": "none"})
    spec = tmp_path / "run.json"
    spec.write_text(json.dumps({"properties": props, "checkpoint": str(checkpoint), "markers": str(markers),
                                "targets": [(f"{base}/{prefix}_history", 2), (str(delta), 1)], "events_per_partition": 150}))
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([str(Path(root) / "src"), root, env.get("PYTHONPATH", "")])

    def run() -> None:
        done = subprocess.run([sys.executable, "-m", "tests.spark.apply_retry", str(spec)], env=env, cwd=root,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]

    run()  # the snapshot
    failed_snapshot = len(list(markers.iterdir()))
    workload.run_workload(db, prefix, 1500, seed=9, truncate_at=None)
    run()
    assert failed_snapshot >= 6 and len(list(markers.iterdir())) > failed_snapshot  # every task's first attempt died

    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_history"), autocommit=True) as h:
        assert workload.history_problems(db, h, prefix) == []  # a version staged twice would show as a duplicate
        stages = [r[0] for r in h.execute("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                                          " WHERE n.nspname = 'sparkcdc' AND c.relname LIKE '%%__stage_%%'").fetchall()]
        assert len(stages) == 3
        assert all(h.execute(f'SELECT count(*) FROM sparkcdc."{name}"').fetchone() == (0,) for name in stages)
    assert workload.delta_mismatches(db, delta, prefix) == []
    assert list((delta / "_sparkcdc_staging").rglob("*.parquet")) == []


def test_the_fold_task_size_is_a_property() -> None:
    """``sparkcdc.apply.changes.per.task`` among the properties sets the applier's split; a bad value names itself."""
    from sparkcdc.errors import ConfigurationError
    from sparkcdc.spark.apply import ChangeApplier

    base = {"database.hostname": "localhost", "database.user": "u", "database.dbname": "db", "topic.prefix": "srv"}
    applier = ChangeApplier("postgresql://u@localhost/db", {**base, "sparkcdc.apply.changes.per.task": "7"},
                            pipeline_id="p", all_tables=True)
    assert applier.events_per_partition == 7
    assert ChangeApplier("postgresql://u@localhost/db", base, pipeline_id="p", all_tables=True).events_per_partition == 200_000
    with pytest.raises(ConfigurationError, match="sparkcdc.apply.changes.per.task"):
        ChangeApplier("postgresql://u@localhost/db", {**base, "sparkcdc.apply.changes.per.task": "0"}, pipeline_id="p",
                      all_tables=True)


def test_a_value_no_arrow_kernel_takes_is_typed_by_spark_sql(spark, pg_cluster, db, tmp_path, unique_name, caplog, monkeypatch):
    """An image's blocks are typed by the stage task's Arrow kernels, which take only the layouts
    they type exactly: a ZonedTimestamp past the year 9999 (``+10000-…``) is refused, and the batch
    is staged again typed by Spark SQL (a warning names the column and the value); the mirror holds
    what the source holds."""
    prefix = f"far{abs(hash(unique_name)) % 10**6}"
    db.execute(f"CREATE TABLE {prefix}_stamps (id bigint PRIMARY KEY, at timestamptz, n int)")
    db.execute(f"INSERT INTO {prefix}_stamps SELECT i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second', i"
               f" FROM generate_series(1, 1200) AS i")
    db.execute(f"UPDATE {prefix}_stamps SET at = timestamptz '10000-01-01 00:00:00+00' WHERE id = 777")
    db.execute(f'CREATE DATABASE "{prefix}_mirror"')
    mirror = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{prefix}_mirror"
    checkpoint = tmp_path / "checkpoint"
    props = properties(pg_cluster, f"{prefix}_slot", [f"public.{prefix}_stamps"],
                       **{"sparkcdc.output.layout": "changes", "sparkcdc.snapshot.chunk.rows": 300})
    applier = ChangeApplier(mirror, props, pipeline_id=str(checkpoint), all_tables=True, events_per_partition=300)
    reads = DriverReads()
    reads.spy(monkeypatch)
    with caplog.at_level("WARNING", logger="sparkcdc.spark.apply"):
        _run(spark, props, checkpoint, applier)
    monkeypatch.undo()
    applier.close()
    refusals = [r.getMessage() for r in caplog.records if "Arrow kernel refused" in r.getMessage()]
    assert len(refusals) == 1 and "column at" in refusals[0] and "+10000-01-01T00:00:00" in refusals[0], refusals
    refused = [rows for rows in reads.summaries if any(row["refused"] for row in rows)]
    assert len(refused) == 1, "the refusal is one task's answer in the typed attempt's summaries"
    parts = [part for rows in reads.summaries if rows not in refused for table in _parts_by_table(rows).values() for part in table]
    assert len(parts) >= 4 and not any("type" in dict(part.seconds) for part in parts)  # typed by Spark SQL
    assert sum(part.events for part in parts) == 1200
    query = f"SELECT id, at::text, n FROM {prefix}_stamps ORDER BY id"  # (Python's datetime stops at 9999)
    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as m:
        mirrored = m.execute(query).fetchall()
    assert mirrored == db.execute(query).fetchall() and mirrored[776][1].startswith("10000-01-01")
