"""The example Declarative Pipeline (examples/pipeline) run by ``spark-pipelines run`` against the
session's PostgreSQL: its per-table streaming tables hold the source rows, typed.

``spark-pipelines`` starts a local Spark Connect server (a JVM) whose client runs the definition
files: the run ends with the pipeline's update (streaming tables are read to what is available).
Before the accumulator workaround of sparkcdc.spark.pipelines, this run ended with pyspark's
``UNKNOWN_RESPONSE ... __python_accumulator__``.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster

from ..spark.support import properties
from ..support.processes import GroupProcess
from ..support.standalone_cluster import QUICK_JVM, daemon_environment

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline"
SRC = Path(__file__).resolve().parents[2] / "src"


#: A definition file added to the example: a typed table whose query function calls table_changes
#: without ``layout``, which must not analyse the frame there (Spark refuses it in a query function).
NO_LAYOUT = """
import json, os
from pyspark import pipelines as dp
from sparkcdc.spark.views import describe_table, table_changes

_view = describe_table(json.loads(open(os.environ["SPARKCDC_CONFIG"]).read()), os.environ["SPARKCDC_TABLES"].split(",")[0])

@dp.table(name="default_layout")
def default_layout():
    return table_changes(spark.readStream.table("cdc_events"), _view)
"""


def pipeline_project(root: Path, props: dict[str, str], tables: list[str], apply_to: str) -> tuple[Path, dict[str, str]]:
    """The example copied under ``root`` with its storage there, and the environment that points it
    at ``props`` (a JSON config file), ``tables`` and the apply target ``apply_to``."""
    project = root / "pipeline"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", "spark-warehouse", "pipeline-storage"))
    spec = project / "spark-pipeline.yml"
    spec.write_text(spec.read_text().replace("file:///tmp/sparkcdc-example-pipeline/pipeline-storage",
                                             (project / "pipeline-storage").as_uri()))
    (project / "transformations" / "no_layout.py").write_text(NO_LAYOUT)
    config = root / "connector.json"
    config.write_text(json.dumps(props))
    env = daemon_environment()  # SPARK_HOME, PYSPARK_PYTHON=this interpreter, 127.0.0.1
    env.update({
        "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        "PYTHONPATH": f"{SRC}:{env.get('PYTHONPATH', '')}",
        "SPARK_SUBMIT_OPTS": QUICK_JVM,
        "SPARKCDC_CONFIG": str(config),
        "SPARKCDC_TABLES": ",".join(tables),
        "SPARKCDC_APPLY_TO": apply_to,
    })
    return project, env


def run_pipeline(project: Path, env: dict[str, str], log: Path, timeout: float = 150) -> None:
    """``spark-pipelines run`` in ``project``; fails with the log's tail unless it exits 0 in time.
    The run is a process group of its own: its Connect server JVM and Python workers end with it."""
    # A catalog that outlives the run (Hive's, a Derby metastore in the project): with Spark's default
    # in-memory catalog the next run finds the tables' directories but not the tables, and fails
    # with LOCATION_ALREADY_EXISTS.
    argv = [str(Path(sys.executable).parent / "spark-pipelines"), "--conf", "spark.sql.catalogImplementation=hive", "run"]
    run = GroupProcess(argv, log, env=env, cwd=project)
    try:
        code = run.wait(timeout)
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail(f"spark-pipelines run did not end in {timeout} s:\n{log.read_text(errors='replace')[-6000:]}")
    text = log.read_text(errors="replace")
    assert code == 0, f"spark-pipelines run exited {code}:\n{text[-6000:]}"
    assert "UNKNOWN_RESPONSE" not in text


def streaming_table(project: Path, name: str) -> list[dict[str, object]]:
    """The rows of a streaming table the run wrote (parquet under the project's spark-warehouse)."""
    directory = project / "spark-warehouse" / name
    assert directory.is_dir(), f"no table directory {directory}"
    return pq.read_table(directory).to_pylist()


def mirrored(cluster: ThrowawayCluster, database: str, table: str) -> list[tuple[object, ...]]:
    """The rows of the sink's mirror of ``table`` (public.<table> in ``database``), its columns only."""
    with psycopg.connect(cluster.conninfo(database), autocommit=True) as conn:
        columns = [r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s "
            "ORDER BY ordinal_position", (table,)).fetchall()]
        with psycopg.connect(cluster.conninfo(), autocommit=True) as source:
            wanted = [r[0] for r in source.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s "
                "ORDER BY ordinal_position", (table,)).fetchall()]
        assert set(wanted) <= set(columns), f"the mirror of {table} has columns {columns}"
        return sorted(conn.execute(f"SELECT {', '.join(wanted)} FROM public.{table}").fetchall())


def instant(value: dt.datetime) -> dt.datetime:
    """A timestamp read from Spark's parquet (INT96: an instant, read without a zone) as an aware UTC datetime."""
    value = value.to_pydatetime() if hasattr(value, "to_pydatetime") else value
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)


def test_example_pipeline_writes_typed_tables(pg_cluster: ThrowawayCluster, db: psycopg.Connection,
                                              unique_name: str, tmp_path: Path) -> None:
    customers, orders = f"{unique_name}_customers", f"{unique_name}_orders"
    db.execute(f"CREATE TABLE {customers} (id int PRIMARY KEY, name text NOT NULL, vip boolean)")
    db.execute(f"CREATE TABLE {orders} (id bigint PRIMARY KEY, customer int, amount numeric(10,2), placed timestamptz)")
    db.execute(f"INSERT INTO {customers} SELECT g, 'customer ' || g, g % 3 = 0 FROM generate_series(1, 40) g")
    db.execute(f"INSERT INTO {orders} SELECT g, g % 40 + 1, g * 1.25, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour' "
               "FROM generate_series(1, 120) g")
    tables = [f"public.{customers}", f"public.{orders}"]
    # the state location named (not /tmp's default, which an earlier test session's reports may share)
    props = properties(pg_cluster, unique_name, tables, **{"sparkcdc.state.location": str(tmp_path / "state")})
    mirror = f"{unique_name}_mirror"
    db.execute(f'CREATE DATABASE "{mirror}"')
    project, env = pipeline_project(tmp_path, props, tables,
                                    f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{mirror}")
    try:
        run_pipeline(project, env, tmp_path / "run-1.log")

        got_customers = streaming_table(project, f"public_{customers}")
        assert {r["__op"] for r in got_customers} == {"r"}
        assert sorted((r["id"], r["name"], r["vip"]) for r in got_customers) == [
            (g, f"customer {g}", g % 3 == 0) for g in range(1, 41)]
        assert sorted(streaming_table(project, "default_layout"), key=lambda r: r["id"]) == sorted(got_customers, key=lambda r: r["id"])
        assert mirrored(pg_cluster, mirror, customers) == sorted(db.execute(f"SELECT id, name, vip FROM {customers}").fetchall())
        got_orders = streaming_table(project, f"public_{orders}")
        start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        assert sorted((r["id"], r["customer"], r["amount"], instant(r["placed"])) for r in got_orders) == [
            (g, g % 40 + 1, Decimal(g) * Decimal("1.25"), start + dt.timedelta(hours=g)) for g in range(1, 121)]

        # The next run goes on from the pipeline's checkpoints: only the new changes, typed.
        db.execute(f"UPDATE {customers} SET name = 'renamed' WHERE id = 7")
        db.execute(f"DELETE FROM {orders} WHERE id = 5")
        run_pipeline(project, env, tmp_path / "run-2.log")
        changed = [r for r in streaming_table(project, f"public_{customers}") if r["__op"] != "r"]
        assert [(r["__op"], r["id"], r["name"]) for r in changed] == [("u", 7, "renamed")]
        deleted = [r for r in streaming_table(project, f"public_{orders}") if r["__op"] != "r"]
        assert [(r["__op"], r["id"]) for r in deleted] == [("d", 5)]
        assert deleted[0]["__lsn"] > changed[0]["__lsn"]
        # The sinks applied the new changes to the mirror, once (the first run's batches not again).
        for table in (customers, orders):
            assert mirrored(pg_cluster, mirror, table) == sorted(db.execute(f"SELECT * FROM {table}").fetchall())

        # What a pipeline's user gets of Debezium's metrics: the reports the source's planner and tasks
        # wrote under its state location, read with the pipeline's options (docs/declarative-pipelines.md).
        from sparkcdc.spark.metrics import MetricsCollector

        collector = MetricsCollector(props, poll_server=False)
        collector.refresh()
        figures = collector.snapshot()
        assert figures["snapshot"]["RowsScanned"] == {f"public.{customers}": 40, f"public.{orders}": 120}
        assert figures["snapshot"]["SnapshotCompleted"] is True  # marked by the second run's planner
        streaming = figures["streaming"]
        assert (streaming["TotalNumberOfCreateEventsSeen"], streaming["TotalNumberOfUpdateEventsSeen"],
                streaming["TotalNumberOfDeleteEventsSeen"]) == (0, 1, 1)
    finally:
        db.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
                   (unique_name,))
