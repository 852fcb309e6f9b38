"""``sparkcdc run`` under a concurrent writer while PostgreSQL crashes (immediate shutdown) and comes back.

The run restarts its streaming query from the checkpoint by itself (``errors.max.retries``,
``retriable.restart.connector.wait.ms``); its topic files then replay onto empty tables equal to the
source, with no record twice. With the restarts used up it stops with exit code 1, naming the
property and the cause.
"""

from __future__ import annotations

import json
import random
import signal
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster

from ..support.processes import GroupProcess
from ..support.waiting import wait_until
from .support import output_lines, payload, properties

TABLES = ("accounts", "notes")


def _run(props: dict[str, str], tmp_path: Path, log: Path, *extra: str) -> GroupProcess:
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return GroupProcess([sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--output", str(tmp_path / "out"),
                         "--checkpoint", str(tmp_path / "checkpoint"), "--master", "local[2]",
                         "--summary", str(tmp_path / "summary.json"), *extra], log)


class Writer(threading.Thread):
    """Inserts, updates and deletes in small transactions; reconnects while the server is down."""

    def __init__(self, cluster: ThrowawayCluster) -> None:
        super().__init__(daemon=True)
        self.cluster, self.stop, self.next_id, self.failures = cluster, threading.Event(), 1, 0
        self.rng = random.Random(20261123)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with psycopg.connect(self.cluster.conninfo(), autocommit=True, connect_timeout=5) as conn:
                    while not self.stop.wait(0.01):  # paced: a few hundred changes a second
                        with conn.transaction():
                            for _ in range(5):
                                self._change(conn)
            except psycopg.OperationalError:
                self.failures += 1  # the server went away: connect again once it is back
                self.stop.wait(0.1)

    def _change(self, conn: psycopg.Connection) -> None:
        table = self.rng.choice(TABLES)
        kind = self.rng.random()
        if kind < 0.5 or self.next_id < 20:
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s) ON CONFLICT DO NOTHING", (self.next_id, "new"))
            self.next_id += 1
        elif kind < 0.8:
            conn.execute(f"UPDATE {table} SET v = %s WHERE id = %s", (f"v{self.rng.random():.6f}", self.rng.randrange(1, self.next_id)))
        else:
            conn.execute(f"DELETE FROM {table} WHERE id = %s", (self.rng.randrange(1, self.next_id),))


def _log(log: Path) -> str:
    return log.read_text(errors="replace") if log.exists() else ""


def _committed(output: Path, checkpoint: Path, marker: int) -> bool:
    """The marker row is in the output, and Spark has committed the batch that wrote it."""
    for path in (output / "srv.public.accounts").glob("part-*.jsonl"):
        for raw in path.read_text(encoding="utf-8").split("\n")[:-1]:
            change = payload(json.loads(raw))
            # the first marker may land in the snapshot (op "r") when Spark starts slower than the insert
            if change and change["op"] in ("r", "c") and change["after"]["id"] == marker:
                batch = int(path.name.split("-")[1])  # part-<batch>-<n>.jsonl
                return (checkpoint / "commits" / str(batch)).exists()
    return False


def _replay(lines: list[dict[str, Any]], conn: psycopg.Connection) -> None:
    """The change events, in (commit LSN, LSN, ordinal) order, onto empty copies of the tables."""
    for line in lines:
        change = payload(line)
        if change is None:
            continue  # a tombstone
        table = line["topic"].rsplit(".", 1)[1]
        if change["op"] in ("r", "c", "u"):
            after = change["after"]
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
                         (after["id"], after["v"]))
        elif change["op"] == "d":
            conn.execute(f"DELETE FROM {table} WHERE id = %s", (change["before"]["id"],))


def _rows(conn: psycopg.Connection, table: str) -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT id, v FROM {table} ORDER BY id").fetchall()


def assert_replays_to(server: Any, lines: list[dict[str, Any]], what: str = "the source") -> None:
    """No insert twice, and ``lines`` replayed onto empty copies of TABLES (in a ``replay`` database
    of ``server``: anything with ``conninfo(dbname)``) equal the tables on ``server``, which the
    writer changed. For the runs that outlive a failover or a standby's promotion."""
    inserts = Counter((line["topic"], change["after"]["id"]) for line in lines
                      if (change := payload(line)) is not None and change["op"] == "c")
    twice = [key for key, n in inserts.items() if n > 1]
    assert not twice, f"inserts written twice: {twice[:5]}"
    with psycopg.connect(server.conninfo(), autocommit=True) as source, \
            psycopg.connect(server.conninfo("replay"), autocommit=True) as replay:
        for table in TABLES:
            replay.execute(f"DROP TABLE IF EXISTS {table}")
            replay.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        _replay(lines, replay)
        for table in TABLES:
            expected = _rows(source, table)
            assert len(expected) > 100, "the writer changed the table"
            assert _rows(replay, table) == expected, f"{table}: the replayed output differs from {what}"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("mirror", [False, True], ids=["topic-files", "and-applied"])
def test_run_survives_two_immediate_shutdowns_and_replays_exactly(tmp_path: Path, mirror: bool) -> None:
    """With ``mirror``, the run also applies the changes to a database of the same server, which
    goes away with it: the restarted query opens its target again."""
    output, log = tmp_path / "out", tmp_path / "run.log"
    with ThrowawayCluster() as cluster:
        with psycopg.connect(cluster.conninfo(), autocommit=True) as db:
            for table in TABLES:
                db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
                db.execute(f"INSERT INTO {table} SELECT g, 'snapshot' FROM generate_series(-100, -1) g")
            db.execute("CREATE DATABASE replay")
            db.execute("CREATE DATABASE mirror")
        props = properties(cluster, "restarts", [f"public.{t}" for t in TABLES], **{
            "retriable.restart.connector.wait.ms": "500",
            "slot.retry.delay.ms": "200",
        })
        apply = ["--apply-to", cluster.url("mirror")] if mirror else []
        run = _run(props, tmp_path, log, *apply)
        writer = Writer(cluster)
        markers = iter(range(-1000, -1100, -1))  # ids the writer never uses

        def caught_up() -> None:
            """A fresh insert is in a committed batch: the run streams again and has read all before it."""
            marker = next(markers)
            wait_until(lambda: _connect_and_insert(cluster, marker), timeout=60, what="the server to accept the marker")
            wait_until(lambda: _committed(output, tmp_path / "checkpoint", marker) or run.process.poll() is not None,
                       timeout=300,
                       interval=0.2, what=f"marker {marker} in the output\n{_log(log)[-3000:]}")
            assert run.process.poll() is None, f"sparkcdc run exited:\n{_log(log)[-3000:]}"

        try:
            caught_up()  # snapshot done, streaming
            writer.start()
            first_restarts = []  # the index of each crash's first restart among the run's restart lines
            for crash in (1, 2):
                restarts_before = _log(log).count("restarting:")
                first_restarts.append(restarts_before)
                cluster.stop(mode="immediate")
                wait_until(lambda before=restarts_before: _log(log).count("restarting:") > before
                           or run.process.poll() is not None,
                           timeout=120, interval=0.1, what=f"the run to notice crash {crash}\n{_log(log)[-3000:]}")
                assert run.process.poll() is None, f"sparkcdc run exited:\n{_log(log)[-3000:]}"
                cluster.start()
                caught_up()
            failures_seen = writer.failures
            writer.stop.set()
            writer.join(60)
            caught_up()
            run.process.send_signal(signal.SIGTERM)  # the way an operator stops it: after the batch in flight
            assert run.wait(120) == 0, _log(log)[-3000:]
        finally:
            writer.stop.set()
            run.kill()

        assert failures_seen >= 2, "the writer must have run into both crashes"
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert summary["restarts"] >= 2 and summary["stopped_by_signal"], summary
        restart_lines = [line for line in _log(log).splitlines() if line.startswith("restarting:")]
        # records flowed between the crashes: each crash's first restart counts from 1 again, as Debezium's
        assert [restart_lines[i].endswith("restart 1") for i in first_restarts] == [True, True], restart_lines
        assert "retriable.restart.connector.wait.ms" in restart_lines[0]

        lines = output_lines(output)
        positions = Counter((line["commit_lsn"], line["lsn"], line["ordinal"]) for line in lines)
        twice = [position for position, n in positions.items() if n > 1]
        assert not twice, f"records written twice across the restarts: {twice[:5]}"
        with psycopg.connect(cluster.conninfo(), autocommit=True) as source, \
                psycopg.connect(cluster.conninfo(dbname="replay"), autocommit=True) as replay:
            for table in TABLES:
                replay.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
            _replay(lines, replay)
            for table in TABLES:
                expected = _rows(source, table)
                assert len(expected) > 100, "the writer changed the table"
                assert _rows(replay, table) == expected, f"{table}: the replayed output differs from the source"
            if mirror:
                with psycopg.connect(cluster.conninfo(dbname="mirror"), autocommit=True) as applied:
                    for table in TABLES:
                        assert _rows(applied, table) == _rows(source, table), f"{table}: the mirror differs"


def _connect_and_insert(cluster: ThrowawayCluster, marker: int) -> bool:
    try:
        with psycopg.connect(cluster.conninfo(), autocommit=True, connect_timeout=5) as db:
            db.execute("INSERT INTO accounts VALUES (%s, 'marker')", (marker,))
        return True
    except psycopg.OperationalError:
        return False  # still starting up


@pytest.mark.timeout(600)
def test_run_stops_clearly_when_the_restarts_are_used_up(tmp_path: Path) -> None:
    output, log = tmp_path / "out", tmp_path / "run.log"
    with ThrowawayCluster() as cluster:
        with psycopg.connect(cluster.conninfo(), autocommit=True) as db:
            db.execute("CREATE TABLE accounts (id int PRIMARY KEY, v text)")
            db.execute("INSERT INTO accounts VALUES (1, 'snapshot')")
        props = properties(cluster, "giving_up", ["public.accounts"], **{
            "errors.max.retries": "1",
            "retriable.restart.connector.wait.ms": "200",
            "slot.retry.delay.ms": "100",
            "slot.max.retries": "1",
        })
        run = _run(props, tmp_path, log)
        try:
            wait_until(lambda: output_lines(output) or run.process.poll() is not None, timeout=300, interval=0.2,
                       what=f"the snapshot in the output\n{_log(log)[-3000:]}")
            assert run.process.poll() is None, _log(log)[-3000:]
            cluster.stop(mode="immediate")  # and kept down
            code = run.wait(300)
        finally:
            run.kill()
    text = _log(log)
    assert code == 1, text[-3000:]
    assert text.count("restarting:") == 1, text[-3000:]
    (failure,) = [line for line in text.splitlines() if line.startswith("error:")]
    assert "errors.max.retries=1" in failure and "psycopg" in failure, failure
