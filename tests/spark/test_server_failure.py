"""PostgreSQL stopped with an immediate shutdown while the query streams, with restarts turned off
(``errors.max.retries=0``); tests/spark/test_server_restart.py covers the restarts."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.spark.runner import PipelineError, run_pipeline

from ..support.waiting import wait_until
from .support import output_lines, payload, properties, run_once


def test_query_fails_clearly_and_a_restart_loses_nothing(spark, tmp_path: Path) -> None:
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    with ThrowawayCluster() as cluster:
        with psycopg.connect(cluster.conninfo(), autocommit=True) as db:
            db.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        props = properties(cluster, "crash", ["public.t"], **{"snapshot.mode": "no_data", "errors.max.retries": "0"})
        result: dict[str, object] = {}

        def run() -> None:
            try:
                result["summary"] = run_pipeline(props, output=output, checkpoint=checkpoint, master="local[2]",
                                                 trigger_interval="200 milliseconds")
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                result["error"] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        def slot_created(db: psycopg.Connection) -> bool:
            if "error" in result:
                raise AssertionError(f"the query failed: {result['error']}")
            return db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'crash'").fetchone() is not None

        with psycopg.connect(cluster.conninfo(), autocommit=True) as db:
            wait_until(lambda: slot_created(db), timeout=120, what="the slot")
            for i in range(20):
                db.execute("INSERT INTO t VALUES (%s, 'before')", (i,))
        wait_until(lambda: len(output_lines(output)) >= 20, timeout=120, what="the first changes")

        cluster.stop(mode="immediate")
        thread.join(180)
        assert not thread.is_alive(), "the query must stop when PostgreSQL is gone"
        error = result.get("error")
        assert isinstance(error, PipelineError), result
        assert any(word in str(error).lower() for word in ("connection", "server", "terminat")), str(error)

        cluster.start()
        with psycopg.connect(cluster.conninfo(), autocommit=True) as db:
            for i in range(20, 40):
                db.execute("INSERT INTO t VALUES (%s, 'after')", (i,))
        run_once(props, output, checkpoint)
        ids = [payload(line)["after"]["id"] for line in output_lines(output) if payload(line) and payload(line)["op"] == "c"]
        assert ids == list(range(40)), "every change exactly once across the crash"


@pytest.mark.parametrize("bad", [{"snapshot.mode": "sometimes"}, {"database.port": "port"}, {"slot.name": "Bad-Name"}])
def test_invalid_configuration_fails_before_touching_the_database(spark, pg_cluster, db, unique_name, tmp_path, bad) -> None:
    from sparkcdc.errors import ConfigurationError

    props = properties(pg_cluster, unique_name, ["public.nothing"], **bad)
    before = db.execute("SELECT count(*) FROM pg_replication_slots").fetchone()
    with pytest.raises(ConfigurationError, match=list(bad)[0].replace(".", r"\.")):
        run_pipeline(props, output=tmp_path / "o", checkpoint=tmp_path / "c", once=True)
    assert db.execute("SELECT count(*) FROM pg_replication_slots").fetchone() == before
    assert not (tmp_path / "c").exists()
