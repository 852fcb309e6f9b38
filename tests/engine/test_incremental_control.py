"""Controlling a running incremental snapshot through the signal table, and signals that are wrong.

Through LocalConnector: the Spark source's own planner and reader (see engine/connector.py), so what
holds here holds for ``sparkcdc run``; these tests need many batches and run them in-process.

* pause-snapshot: no chunk is read while paused, and the stream goes on; resume-snapshot: the
  snapshot continues where it stopped and completes.
* stop-snapshot of one table: its reads stop, the other table's complete.
* bad signals (unknown type, malformed JSON, a table not captured, an invalid pattern, a filter that
  is not SQL) are logged with what is wrong and change nothing else: the stream goes on, no change
  is lost, and a good signal afterwards works.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from sparkcdc.engine.connector import LocalConnector
from sparkcdc.postgres import drop_slot, get_slot

from ..support.incremental import KEYS, create_tables, local_config, local_events, reads_twice, replay, send_signal, table_rows
from ..support.waiting import wait_until

ROWS_A, ROWS_B = 120, 90  # chunks of 20: 6 + 5 batches
CHUNK = 20


@pytest.fixture
def name(db, unique_name):
    create_tables(db, unique_name, rows_a=ROWS_A, rows_b=ROWS_B)
    yield unique_name
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')


class Run:
    """A LocalConnector and everything it emitted so far."""

    def __init__(self, connector: LocalConnector, name: str) -> None:
        self.connector = connector
        self.name = name
        self.out: list[Any] = []

    def until(self, condition: Callable[[], object], what: str) -> None:
        wait_until(lambda: self.out.extend(self.connector.poll(0.1)) or condition(), timeout=60, what=what)

    def events(self, table: str) -> list[dict[str, Any] | None]:
        return local_events(self.out, self.name, table)

    def reads(self, table: str) -> int:
        return sum(1 for e in self.events(table) if e is not None and e["op"] == "r")

    @property
    def state(self) -> dict[str, Any] | None:
        """The incremental snapshot in the offset of the last batch consumed (None: none runs)."""
        offset = self.connector._offset
        return None if offset is None else offset.get("incremental")

    def notifications(self) -> list[tuple[str, str, dict[str, str]]]:
        return [(n.aggregate_type, n.type, n.additional_data) for n in self.connector.planner.notifier.recent]

    def changed(self, db, marker: str) -> None:
        """Change a row of each table, and wait until the stream brings both changes."""
        db.execute(f"UPDATE {self.name}_a SET v = %s WHERE id = 3", (marker,))
        db.execute(f"UPDATE {self.name}_b SET v = -7 WHERE k1 = 1 AND k2 = 'k1'")
        self.until(lambda: any(e is not None and e["op"] == "u" and e["after"]["v"] == marker for e in self.events("a")),
                   f"the stream to bring the change {marker!r}")

    def check_replay(self, db) -> None:
        for table, keys in KEYS.items():
            events = self.events(table)
            assert not reads_twice(events, keys), f"{self.name}_{table}: a row read twice"
            assert replay(events, keys) == table_rows(db, f"{self.name}_{table}", keys)


@pytest.fixture
def run(pg_cluster, name, tmp_path):
    with LocalConnector(local_config(pg_cluster, name, tmp_path, chunk_size=CHUNK)) as connector:
        connector.poll(0.2)  # the slot exists: signals from now on reach the stream
        yield Run(connector, name)


def errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def both(name: str) -> dict[str, Any]:
    return {"data-collections": [f"public.{name}_a", f"public.{name}_b"]}


def test_pause_stops_the_chunks_not_the_stream_and_resume_completes(db, name, run) -> None:
    send_signal(db, name, "snap", "execute-snapshot", both(name))
    run.until(lambda: run.reads("a") >= 2 * CHUNK, "two chunks of the first table")
    send_signal(db, name, "pause", "pause-snapshot")
    run.until(lambda: run.state is not None and run.state["paused"] and run.state["chunk"] is None, "the pause")
    paused_at = run.reads("a"), run.reads("b")
    for n in range(3):  # batches go on streaming while paused; none carries a chunk
        run.changed(db, f"paused-{n}")
        assert run.state is not None and run.state["paused"] and run.state["chunk"] is None
    assert (run.reads("a"), run.reads("b")) == paused_at and paused_at[0] < ROWS_A

    send_signal(db, name, "resume", "resume-snapshot")
    run.until(lambda: run.state is None and run.reads("b") > 0, "the resumed snapshot to complete")
    assert run.reads("a") == ROWS_A and run.reads("b") == ROWS_B
    kinds = [kind for aggregate, kind, _ in run.notifications() if aggregate == "Incremental Snapshot"]
    assert kinds[0] == "STARTED" and kinds[-1] == "COMPLETED" and kinds.index("PAUSED") < kinds.index("RESUMED")
    run.check_replay(db)


def test_stop_of_one_table_stops_its_reads_and_the_other_completes(db, name, run) -> None:
    send_signal(db, name, "snap", "execute-snapshot", both(name))
    run.until(lambda: run.reads("a") >= 2 * CHUNK, "two chunks of the first table")
    send_signal(db, name, "stop", "stop-snapshot", {"data-collections": [f"public.{name}_a"], "type": "incremental"})
    run.until(lambda: run.state is None and run.reads("b") > 0, "the snapshot of the other table to complete")
    stopped_at = run.reads("a")
    assert 2 * CHUNK <= stopped_at < ROWS_A and run.reads("b") == ROWS_B
    # The stopped table's reads all come before the other table's first.
    order = [r.topic.rsplit("_", 1)[1] for r in run.out if r.value is not None and json.loads(r.value)["op"] == "r"]
    assert order == ["a"] * stopped_at + ["b"] * ROWS_B
    run.changed(db, "after-stop")  # and the stream goes on
    assert run.reads("a") == stopped_at
    aborted = [data for aggregate, kind, data in run.notifications() if kind == "ABORTED"]
    assert aborted == [{"data_collections": f"public.{name}_a", "connector_name": "srv"}]


def test_bad_signals_are_logged_and_change_nothing_else(db, name, run, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="sparkcdc")
    bad = {
        "unknown": ("explode", {"data-collections": [f"public.{name}_a"]}),
        "malformed": ("execute-snapshot", '{"data-collections": ["public.x"'),
        "uncaptured": ("execute-snapshot", {"data-collections": [f"public.{name}_signal", "public.nosuch"]}),
        "pattern": ("execute-snapshot", {"data-collections": [f"public.{name}_a"],
                                         "additional-conditions": [{"data-collection": "public.(", "filter": "id > 1"}]}),
        "filter": ("execute-snapshot", {"data-collections": [f"public.{name}_a"],
                                        "additional-conditions": [{"data-collection": f"public.{name}_a", "filter": "id >>> banana ("}]}),
    }
    for n, (signal_id, (kind, data)) in enumerate(bad.items()):
        send_signal(db, name, signal_id, kind, data)
        run.until(lambda n=n: len(errors(caplog)) > n, f"signal {signal_id!r} to be acted on")
        run.changed(db, f"after-{signal_id}")  # the stream goes on after each, with the change in it
        assert run.state is None and run.reads("a") == run.reads("b") == 0
        assert len([e for e in run.events("a") if e is not None and e["op"] == "u"]) == n + 1
    messages = "\n".join(errors(caplog))
    assert "signal 'unknown' (explode, from the source channel): unknown signal type 'explode'" in messages
    assert "signal 'malformed' (execute-snapshot, from the source channel): its data is not valid JSON" in messages
    assert f"none of the data collections ['public.{name}_signal', 'public.nosuch'] is a captured table" in messages
    assert "data collection 'public.(' is not a valid regular expression" in messages
    assert f"table public.{name}_a cannot be snapshotted: syntax error" in messages
    failed = {data["signal_id"] for aggregate, kind, data in run.notifications() if aggregate == "Signal" and kind == "ERROR"}
    assert failed == {"unknown", "malformed", "uncaptured", "pattern"}

    send_signal(db, name, "good", "execute-snapshot", both(name))
    run.until(lambda: run.state is None and run.reads("b") == ROWS_B, "the good signal's snapshot")
    assert run.reads("a") == ROWS_A
    run.check_replay(db)


def test_a_log_signal_writes_its_message_to_the_log_and_nothing_else(db, name, run, caplog) -> None:
    caplog.set_level(logging.INFO, logger="sparkcdc.engine.incremental_planner")
    send_signal(db, name, "hello-1", "log", {"message": "hello from the operator"})
    run.until(lambda: any("hello from the operator" in r.getMessage() for r in caplog.records), "the log signal")
    logged = [r for r in caplog.records if "hello from the operator" in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelno == logging.INFO and "signal hello-1 (log)" in logged[0].getMessage()
    run.changed(db, "after-log")  # acted on once: later batches do not log it again
    assert len([r for r in caplog.records if "hello from the operator" in r.getMessage()]) == 1
    assert run.state is None and run.reads("a") == 0
