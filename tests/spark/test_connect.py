"""sparkcdc from a Spark Connect client: a real Connect server started from the venv's pyspark on
127.0.0.1 (tests/support/connect_server.py), one per test session.

From a client session: the ``postgres-cdc`` source streams a snapshot and then changes into the
topic files sink, into a typed view (``table_changes``, written by Spark's parquet sink) and, through
``apply_changes`` reading the ``changes`` layout, into a PostgreSQL mirror. Then ``sparkcdc run --remote`` does the same as a user
runs it: topic files, a PostgreSQL and a Delta mirror, each compared with the source table.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_CONFIG, app
from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.connect_run import observe_records, observed_records
from sparkcdc.spark.runner import run_pipeline

from ..support.processes import GroupProcess
from ..support.standalone_cluster import free_port
from ..support.waiting import wait_until
from .support import output_lines, payload, properties
from .test_metrics_run import Scraper

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 180.0


def _make_table(db: psycopg.Connection, table: str) -> None:
    db.execute(f"CREATE TABLE {table} (id integer PRIMARY KEY, label text, amount numeric(10,2))")
    db.execute(f"INSERT INTO {table} SELECT g, 'row ' || g, g * 1.25 FROM generate_series(1, 4) g")


def _change(db: psycopg.Connection, table: str) -> None:
    """One insert, one update, one delete: what each output must show after the snapshot."""
    db.execute(f"INSERT INTO {table} VALUES (5, 'five', 5.5)")
    db.execute(f"UPDATE {table} SET label = 'two!', amount = 20.25 WHERE id = 2")
    db.execute(f"DELETE FROM {table} WHERE id = 3")


def _source_rows(db: psycopg.Connection, table: str) -> list[tuple[Any, ...]]:
    return db.execute(f"SELECT id, label, amount FROM {table} ORDER BY id").fetchall()


def _mirror_rows(cluster: Any, database: str, table: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(cluster.conninfo(database), autocommit=True) as mirror:
        return mirror.execute(f"SELECT id, label, amount FROM public.{table} ORDER BY id").fetchall()


def _run_available_now(writer: Any, checkpoint: Path) -> list[int]:
    """Start a query (availableNow) and wait for its end; its failure fails the test. The records its
    batches counted (``sparkcdc run``'s observed metric, when the frame observes it)."""
    query = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        query.awaitTermination(RUN_TIMEOUT)
        assert not query.isActive, f"the query did not end within {RUN_TIMEOUT} s"
    finally:
        query.stop()
    assert query.exception() is None, str(query.exception())
    return [observed_records(p) for p in query.recentProgress]


def test_source_views_topic_files_and_apply_from_a_connect_client(connect_spark, pg_cluster, db, tmp_path, unique_name):
    from sparkcdc.spark import views
    from sparkcdc.spark.apply import apply_changes
    from sparkcdc.spark.outputs.topic_files.batch_writer import topic_files_writer
    from sparkcdc.spark.running_session import default_parallelism
    from sparkcdc.spark.source.options import options_for

    spark = connect_spark
    table = f"cx_{unique_name}"
    _make_table(db, table)
    mirror = f"{table}_mirror"
    db.execute(f'CREATE DATABASE "{mirror}"')
    # One slot per query: each reads the table's snapshot, then its changes.
    files_props, view_props, apply_props = (properties(pg_cluster, f"{unique_name}_{kind}", [f"public.{table}"])
                                            for kind in ("f", "v", "a"))
    view = views.describe_table(view_props, table)  # the catalog, read by the client
    out, typed = tmp_path / "topics", tmp_path / "typed"

    def source(props: dict[str, str]) -> Any:
        return spark.readStream.format("postgres-cdc").options(**options_for(props)).load()

    def run_all() -> list[list[int]]:
        # As `run --output` does: the reader's tasks write the topic files (on the server's side), the
        # writer publishes them; the records counted by what the runner observes on Connect.
        files = source({**files_props, "sparkcdc.output.layout": "topic_files", "sparkcdc.output.topic.files": str(out)})
        written = _run_available_now(topic_files_writer(observe_records(files, "topic_files"), out), tmp_path / "ck-files")
        frame = source(view_props)
        changes = views.table_changes(frame, view, layout="columns")
        # The layout given, building the view analysed nothing: no round trip to the server, whose
        # analysis of a postgres-cdc read runs the source's Python for its schema.
        assert frame._cached_schema is None and changes._cached_schema is None
        _run_available_now(changes.writeStream.format("parquet").option("path", str(typed)), tmp_path / "ck-view")
        mirror_url = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{mirror}"
        # The changes layout (typed blocks, decoded by mapInArrow on the server), as `run --apply-to` reads it.
        typed_blocks = observe_records(source({**apply_props, "sparkcdc.output.layout": "changes"}), "changes")
        applied = _run_available_now(apply_changes(typed_blocks, mirror_url, properties=apply_props,
                                                   checkpoint_location=tmp_path / "ck-apply"), tmp_path / "ck-apply")
        return [written, applied]

    assert run_all() == [[4], [4]]  # the snapshot: four records, four row changes
    assert _mirror_rows(pg_cluster, mirror, table) == _source_rows(db, table)
    # What apply splits a big table's batch into, asked without a SparkContext: the server's local[2].
    assert default_parallelism(spark) == 2
    _change(db, table)
    # The changes since: c, u, d and the delete's tombstone are records; the row changes are three.
    assert run_all() == [[4], [3]]

    events = [payload(line) for line in output_lines(out) if line["topic"] == f"srv.public.{table}"]
    seen = [(e["op"], (e["after"] or e["before"])["id"]) for e in events if e is not None]
    assert seen == [("r", 1), ("r", 2), ("r", 3), ("r", 4), ("c", 5), ("u", 2), ("d", 3)], seen
    assert events[5]["after"]["label"] == "two!"

    rows = spark.read.parquet(str(typed)).orderBy("__commit_lsn", "__lsn", "__ordinal").collect()
    assert [(r["__op"], r["id"]) for r in rows] == [(op, key) for op, key in seen if op == "r"] + [("c", 5), ("u", 2), ("d", 3)]
    update = rows[5]
    assert (update["label"], update["amount"]) == ("two!", Decimal("20.25")), "the typed view's values are not the row's"
    fields = dict(spark.read.parquet(str(typed)).dtypes)
    assert (fields["id"], fields["label"], fields["amount"]) == ("int", "string", "decimal(10,2)")

    assert _mirror_rows(pg_cluster, mirror, table) == _source_rows(db, table)


def test_a_setting_of_the_servers_application_is_refused_naming_it(connect_server, monkeypatch):
    from sparkcdc.spark import launch

    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):  # the session's process-wide mode, undone after
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(ConfigurationError, match=r"^spark\.executor\.memory: a Spark Connect session sets only runtime"):
        launch.session(remote=connect_server.url, extra={"spark.sql.shuffle.partitions": "3", "spark.executor.memory": "2g"})


def test_run_remote_writes_topic_files_and_mirrors(connect_server, pg_cluster, db, tmp_path, unique_name):
    """Two runs: the snapshot (``--once``), then a long-running one serving ``--metrics-port``,
    scraped until the streamed changes show, and stopped with SIGTERM. The client reads the metric
    reports the server's planner and tasks wrote under the state location (one file system here),
    and each summary shows what the server's appliers applied."""
    table = f"cr_{unique_name}"
    _make_table(db, table)
    mirror = f"{table}_mirror"
    db.execute(f'CREATE DATABASE "{mirror}"')
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties(pg_cluster, unique_name, [f"public.{table}"]).items()))
    out, delta = tmp_path / "out", tmp_path / "delta"
    targets = [f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}/{mirror}", str(delta)]
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--checkpoint", str(tmp_path / "ck"),
            "--remote", connect_server.url, "--output", str(out)]
    for target in targets:
        argv += ["--apply-to", target]

    summary = tmp_path / "snapshot.json"
    done = subprocess.run([*argv, "--once", "--summary", str(summary)], capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=tmp_path)
    assert done.returncode == 0, f"sparkcdc run --remote failed:\n{done.stderr[-6000:]}\n{connect_server.log_tail()}"
    snapshot = json.loads(summary.read_text())
    assert snapshot["records"] == 4  # counted on the server, reported by the query's observed metrics
    # applied by the server's Python, brought back to the client (docs/spark-connect.md)
    assert _applied(snapshot) == {"postgresql": 4, "delta": 4}, snapshot["applied"]
    assert all(seconds.get("commit", 0) > 0 for seconds in snapshot["apply_seconds"].values()), snapshot["apply_seconds"]
    _mirrors_equal(db, pg_cluster, table, mirror, delta)

    port = free_port()
    summary = tmp_path / "stream.json"
    run = GroupProcess([*argv, "--metrics-port", str(port), "--summary", str(summary)], tmp_path / "stream.log", cwd=tmp_path)
    scrape = Scraper(port, "srv")
    try:
        _change(db, table)

        def streamed() -> dict | None:
            if run.process.poll() is not None:
                raise AssertionError(f"sparkcdc run --remote ended: {(tmp_path / 'stream.log').read_text()[-6000:]}")
            samples = scrape.samples()
            done = samples and scrape.value(samples, "TotalNumberOfEventsSeen", "streaming") == 3.0
            return samples if done else None

        samples = wait_until(streamed, timeout=RUN_TIMEOUT, interval=0.2, what="the three changes in /metrics")
        expected = {("TotalNumberOfCreateEventsSeen", "streaming"): 1.0, ("TotalNumberOfUpdateEventsSeen", "streaming"): 1.0,
                    ("TotalNumberOfDeleteEventsSeen", "streaming"): 1.0, ("NumberOfCommittedTransactions", "streaming"): 3.0,
                    ("Connected", "streaming"): 1.0,
                    # the first run's snapshot, from its reports
                    ("SnapshotCompleted", "snapshot"): 1.0, ("TotalTableCount", "snapshot"): 1.0,
                    ("RemainingTableCount", "snapshot"): 0.0, ("TotalNumberOfEventsSeen", "snapshot"): 4.0}
        assert {key: scrape.value(samples, *key) for key in expected} == expected
        assert scrape.value(samples, "RowsScanned", "snapshot", table=f"public.{table}") == 4.0
        # once Spark committed a batch, the client knows it reads the reports (it warns when it does not)
        extras = wait_until(lambda: (e := scrape.attributes()["sparkcdc"])["metric_reports_found"] is not None and e,
                            timeout=RUN_TIMEOUT, what="the collector's check of the reports")
        assert extras["metric_reports_found"] is True and extras["last_committed_batch_id"] >= 1
    finally:
        if run.process.poll() is None:
            run.process.send_signal(signal.SIGTERM)
            try:
                run.wait(RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                run.kill()
        else:
            run.log.close()
    assert run.process.returncode == 0, (tmp_path / "stream.log").read_text()[-6000:]
    stream = json.loads(summary.read_text())
    assert stream["records"] == 4 and stream["stopped_by_signal"]  # c, u, d and the delete's tombstone
    assert _applied(stream) == {"postgresql": 3, "delta": 3}, stream["applied"]
    _mirrors_equal(db, pg_cluster, table, mirror, delta)

    events = [payload(line) for line in output_lines(out) if line["topic"] == f"srv.public.{table}"]
    assert [e["op"] for e in events if e is not None] == ["r", "r", "r", "r", "c", "u", "d"]
    # The topic files hold each source row's last image: replayed, they give the table.
    image: dict[int, dict[str, Any]] = {}
    for event in events:
        if event is None:
            continue
        if event["op"] == "d":
            image.pop(event["before"]["id"])
        else:
            image[event["after"]["id"]] = event["after"]
    assert sorted((r["id"], r["label"]) for r in image.values()) == [(i, label) for i, label, _ in _source_rows(db, table)]


def _applied(summary: dict[str, Any]) -> dict[str, int]:
    """The events applied per kind of target (PostgreSQL, Delta), summed over its tables."""
    return {("postgresql" if name.startswith("postgres") else "delta"): sum(tables.values())
            for name, tables in summary["applied"].items()}


def _mirrors_equal(db: psycopg.Connection, pg_cluster: Any, table: str, mirror: str, delta: Path) -> None:
    source = _source_rows(db, table)
    assert _mirror_rows(pg_cluster, mirror, table) == source, "the PostgreSQL mirror differs from the source"
    from deltalake import DeltaTable

    stored = sorted(tuple(r[c] for c in ("id", "label", "amount"))
                    for r in DeltaTable(str(delta / "public" / table)).to_pyarrow_table().to_pylist())
    assert stored == source, "the Delta mirror differs from the source"


def test_master_and_remote_are_refused_together(tmp_path):
    config = tmp_path / "c.properties"
    config.write_text("database.hostname=203.0.113.1\ndatabase.user=u\ndatabase.dbname=d\ntopic.prefix=p\n")
    result = CliRunner().invoke(app, ["run", str(config), "--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "o"),
                                      "--master", "local[2]", "--remote", "sc://127.0.0.1:15002"])
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "--master and --remote exclude each other" in result.output
    with pytest.raises(ConfigurationError, match="remote: a Spark master"):
        run_pipeline({"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"},
                     output=tmp_path / "o", checkpoint=tmp_path / "ck", master="local[2]", remote="sc://127.0.0.1:15002")


def test_a_server_without_sparkcdc_is_named_with_what_to_install():
    """What the server answers when its Python lacks sparkcdc (seen with a server whose
    PYSPARK_PYTHON shadows it; starting a second server here would double the module's time)."""
    from sparkcdc.spark.connect_run import server_lacks

    answer = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent call last):\n"
              "  File \"/srv/sparkcdc/__init__.py\", line 1, in <module>\nModuleNotFoundError: No module named 'sparkcdc'\n"
              " SQLSTATE: 38000\n\nJVM stacktrace:\norg.apache.spark.sql.AnalysisException")
    message = server_lacks(answer)
    assert message is not None and "cannot import 'sparkcdc'" in message and "PYSPARK_PYTHON" in message
    assert server_lacks("ModuleNotFoundError: No module named 'deltalake'") is not None
    assert server_lacks("[PYTHON_DATA_SOURCE_ERROR] connection refused") is None
