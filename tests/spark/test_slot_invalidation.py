"""A slot the server invalidates while ``sparkcdc run`` is down (dedicated clusters).

PostgreSQL 15: the slot falls further behind than ``max_slot_wal_keep_size`` (1 MB) and a checkpoint
removes its WAL (``wal_status`` lost; the server gives no reason before 17). PostgreSQL 18: the
slot stays unused longer than ``idle_replication_slot_timeout`` (seconds, minimum 1) and a checkpoint
invalidates it (``invalidation_reason`` idle_timeout). Either way the next run fails naming the slot,
the reason and the setting; with ``snapshot.mode=when_needed`` it takes a new snapshot and the output
holds every row, those written while the run was down among them.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster, find_postgres_bindir
from sparkcdc.spark.runner import PipelineError

from ..support.pg18 import pg18_bindir
from ..support.waiting import wait_until
from .support import output_lines, payload, properties, run_once


def _invalidate_by_wal(db: psycopg.Connection, slot: str) -> None:
    def lost() -> bool:
        db.execute("INSERT INTO filler VALUES (1)")  # some WAL, so that the switch starts a new segment
        db.execute("SELECT pg_switch_wal()")
        db.execute("CHECKPOINT")
        return db.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()[0] == "lost"

    wait_until(lost, timeout=60, interval=0.05, what="the slot's WAL to be removed")


def _invalidate_by_idleness(db: psycopg.Connection, slot: str) -> None:
    db.execute("ALTER SYSTEM SET idle_replication_slot_timeout = '1s'")
    db.execute("SELECT pg_reload_conf()")

    def idle() -> bool:
        db.execute("CHECKPOINT")  # idle slots are invalidated by checkpoints
        row = db.execute("SELECT invalidation_reason FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
        return row[0] == "idle_timeout"

    wait_until(idle, timeout=60, interval=0.2, what="the slot to be invalidated for idleness")


CASES = {
    "15-wal_removed": (find_postgres_bindir, {"max_slot_wal_keep_size": "1MB"}, _invalidate_by_wal,
                       ["wal_status=lost", "max_slot_wal_keep_size", "1MB"]),
    "18-idle_timeout": (pg18_bindir, {}, _invalidate_by_idleness,
                        ["invalidation_reason=idle_timeout", "idle_replication_slot_timeout", "1s"]),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", list(CASES))
def test_an_invalidated_slot_fails_clearly_and_when_needed_takes_a_new_snapshot(spark, tmp_path: Path, case: str) -> None:
    bindir_of, settings, invalidate, expected = CASES[case]
    bindir = bindir_of()
    if bindir is None:
        pytest.skip("no PostgreSQL 18 binaries (embedded-postgres, or SPARKCDC_PG18_BINDIR)")
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    with ThrowawayCluster(bindir=bindir, settings=settings) as cluster, \
            psycopg.connect(cluster.conninfo(), autocommit=True) as db:
        db.execute("CREATE TABLE t (id int PRIMARY KEY)")
        db.execute("CREATE TABLE filler (v int)")
        db.execute("INSERT INTO t SELECT g FROM generate_series(1, 5) g")
        props = properties(cluster, "invalidated", ["public.t"])
        run_once(props, output, checkpoint)  # the snapshot
        db.execute("INSERT INTO t SELECT g FROM generate_series(6, 8) g")
        run_once(props, output, checkpoint)  # streamed: the checkpoint is past the snapshot

        db.execute("INSERT INTO t SELECT g FROM generate_series(9, 12) g")  # while the run is down
        invalidate(db, "invalidated")
        with pytest.raises(PipelineError) as failure:
            run_once(props, output, checkpoint)
        text = str(failure.value)
        for word in ["SlotInvalidatedError", "slot 'invalidated'", "was invalidated by the server", "snapshot.mode=when_needed",
                     *expected]:
            assert word in text, f"{word!r} not in: {text[-1500:]}"

        db.execute("ALTER SYSTEM RESET ALL")  # the new slot is not invalidated in turn
        db.execute("SELECT pg_reload_conf()")
        run_once({**props, "snapshot.mode": "when_needed"}, output, checkpoint)
        changes = [change for line in output_lines(output) if (change := payload(line))]
        assert sorted({c["after"]["id"] for c in changes}) == list(range(1, 13)), "every row is in the output"
        resnapshot = sorted(c["after"]["id"] for c in changes[-12:] if c["op"] == "r")
        assert resnapshot == list(range(1, 13)), "the new snapshot holds the rows written while the run was down"
        row = db.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'invalidated'").fetchone()
        assert row is not None and row[0] != "lost", "a new slot replaced the invalidated one"


def test_each_invalidation_reason_names_its_setting() -> None:
    from sparkcdc.postgres.slots import SlotState, invalidation_explained

    def slot(reason: str | None) -> SlotState:
        return SlotState("s", "pgoutput", "logical", "postgres", False, False, None, None, 0, False, "lost", reason)

    assert "max_slot_wal_keep_size" in invalidation_explained(slot("wal_removed"))
    assert "hot_standby_feedback" in invalidation_explained(slot("rows_removed"))
    assert "wal_level" in invalidation_explained(slot("wal_level_insufficient"))
    assert invalidation_explained(slot("something_new")) == "invalidation_reason=something_new"
    assert slot(None).invalidated and not SlotState("s", None, "logical", None, False, False, None, 1, 1, False, "reserved").invalidated
