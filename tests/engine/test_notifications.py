"""Notifications through the ``sink`` channel: Debezium's records, in the output, exactly once.

Through the one driver and reader (LocalConnector) against the real server: an incremental snapshot
of two small tables (as in the oracle facts, §2/§5: 10 and 7 rows, chunk size 3) and an initial
snapshot. A batch's notifications live in its end offset, so reading a batch again (as Spark does
after a failure) emits the very same records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.connector import LocalConnector
from sparkcdc.engine.core.notifications import INITIAL_SNAPSHOT, Notification, NotificationPiece, notification_pieces
from sparkcdc.engine.core.offsets import SourceOffset
from sparkcdc.engine.work import read_work
from sparkcdc.postgres import drop_slot, get_slot

from ..support.notifications import assert_debezium_shape, create_facts_tables, expected_incremental_sequence, incremental_types
from ..support.waiting import wait_until
from .test_incremental_snapshot import _config as incremental_config

TOPIC = "srv.notifications"


def _config(pg_cluster, name: str, tmp_path: Path, **extra: str) -> ConnectorConfig:
    """test_incremental_snapshot's configuration with the facts' chunk size, schemas, and the sink channel."""
    return incremental_config(pg_cluster, name, tmp_path, **{
        "incremental.snapshot.chunk.size": "3", "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
        "notification.enabled.channels": "sink,log", "notification.sink.topic.name": TOPIC, **extra})


@pytest.fixture
def tables(db, unique_name):
    create_facts_tables(db, unique_name)
    yield unique_name
    if get_slot(db, unique_name) is not None:
        drop_slot(db, unique_name, wait=30)
    db.execute(f'DROP PUBLICATION IF EXISTS "{unique_name}"')


def _recording(connector: LocalConnector) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (start, end) of a batch the connector's planner plans."""
    batches: list[tuple[dict[str, Any], dict[str, Any]]] = []
    plan = connector.planner.latest_offset

    def latest_offset(start: dict[str, Any]) -> dict[str, Any]:
        end = plan(start)
        if end != start:
            batches.append((start, end))
        return end

    connector.planner.latest_offset = latest_offset  # type: ignore[method-assign]
    return batches


def _notifications(records) -> list[dict[str, Any]]:
    return [assert_debezium_shape(r.key.decode(), r.value.decode(), r.headers) for r in records if r.topic == TOPIC]


def test_an_incremental_snapshot_notifies_as_debezium_once_per_notification(db, pg_cluster, tables, tmp_path) -> None:
    name = tables
    a, b = f"public.{name}_a", f"public.{name}_b"
    out: list = []
    with LocalConnector(_config(pg_cluster, name, tmp_path, **{"snapshot.mode": "no_data"})) as connector:
        batches = _recording(connector)
        out.extend(connector.poll(0.2))  # the query start's notification (SKIPPED) may come in this first poll
        db.execute(f"INSERT INTO {name}_signal VALUES ('sig-1', 'execute-snapshot', %s)", (json.dumps({"data-collections": [a, b]}),))
        wait_until(lambda: out.extend(connector.poll(0.2)) or "COMPLETED" in incremental_types(_notifications(out), "sig-1"),
                   timeout=60, what="the incremental snapshot's COMPLETED notification")

        # A batch read again emits the same notifications, byte for byte, from its end offset.
        emitted = [(r.key, r.value) for r in out if r.topic == TOPIC]
        replayed = [(r.key, r.value) for start, end in batches for piece in connector.planner.partitions(start, end)
                    if isinstance(piece, NotificationPiece) for batch in read_work(connector.config, piece, run_id="x")
                    for r in batch.records()]
        assert replayed == emitted

    payloads = _notifications(out)
    assert len({json.dumps(p, sort_keys=True) for p in payloads}) == len(payloads), "a notification was emitted twice"
    positions = [(r.commit_lsn, r.lsn, r.ordinal) for r in out if r.topic == TOPIC]
    assert positions == sorted(set(positions)), "positions increase in the order notifications were made"
    assert [(p["aggregate_type"], p["type"], p["additional_data"]) for p in payloads[:1]] == [
        (INITIAL_SNAPSHOT, "SKIPPED", {"connector_name": "srv"})]  # no_data: at the start, as Debezium
    assert incremental_types(payloads, "sig-1") == expected_incremental_sequence([4, 3])
    mine = {kind: [p["additional_data"] for p in payloads if p["id"] == "sig-1" and p["type"] == kind]
            for kind in ("STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED")}
    assert mine["STARTED"] == [{"connector_name": "srv", "data_collections": f"{a},{b}"}]
    assert [(d["current_collection_in_progress"], d["data_collections"], d["maximum_key"], d["last_processed_key"])
            for d in mine["IN_PROGRESS"]] == (
        [(a, f"{a},{b}", "10", key) for key in ("3", "6", "9", "10")] + [(b, b, "10,q", key) for key in ("2,a", "4,m", "10,q")])
    assert all(d["connector_name"] == "srv" for d in mine["IN_PROGRESS"])
    assert mine["TABLE_SCAN_COMPLETED"] == [
        {"connector_name": "srv", "data_collections": f"{a},{b}", "scanned_collection": a, "total_rows_scanned": "10", "status": "SUCCEEDED"},
        {"connector_name": "srv", "data_collections": b, "scanned_collection": b, "total_rows_scanned": "7", "status": "SUCCEEDED"}]
    assert mine["COMPLETED"] == [{"connector_name": "srv"}]

    # Debezium's order: a chunk's IN_PROGRESS before its reads, a table's TABLE_SCAN_COMPLETED after them.
    order = [("N", json.loads(r.value)["payload"]["type"]) if r.topic == TOPIC else ("r", r.topic.rsplit("_", 1)[-1])
             for r in out if r.topic == TOPIC or (r.value is not None and json.loads(r.value)["payload"]["op"] == "r")]
    reads_of = {table: [i for i, item in enumerate(order) if item == ("r", table)] for table in ("a", "b")}
    progress = [i for i, item in enumerate(order) if item == ("N", "IN_PROGRESS")]
    scans = [i for i, item in enumerate(order) if item == ("N", "TABLE_SCAN_COMPLETED")]
    assert len(reads_of["a"]) == 10 and len(reads_of["b"]) == 7
    assert progress[0] < reads_of["a"][0] and scans[0] > reads_of["a"][-1] and progress[4] < reads_of["b"][0] < scans[1]


def test_an_initial_snapshot_notifies_started_before_its_rows_and_completed_after(db, pg_cluster, tables, tmp_path) -> None:
    name = tables
    config = _config(pg_cluster, name, tmp_path, **{"snapshot.mode": "initial"})
    out: list = []
    with LocalConnector(config) as connector:
        wait_until(lambda: out.extend(connector.poll(0.2)) or not connector.snapshot_pending and len(_notifications(out)) >= 2,
                   timeout=60, what="the initial snapshot")
    kinds = [("N", json.loads(r.value)["payload"]["type"]) if r.topic == TOPIC else ("r", r.topic) for r in out]
    assert kinds[0] == ("N", "STARTED") and kinds[-1] == ("N", "COMPLETED") and len(kinds) == 2 + 17
    payloads = _notifications(out)
    assert {p["aggregate_type"] for p in payloads} == {INITIAL_SNAPSHOT}
    assert all(p["additional_data"] == {"connector_name": "srv"} for p in payloads)
    assert payloads[0]["id"] != payloads[1]["id"], "a fresh id per notification, as Debezium"



def test_a_batch_offset_carries_its_notifications_beside_its_position() -> None:
    started, completed = (Notification(f"n{i}", INITIAL_SNAPSHOT, kind, {"connector_name": "srv"}, 1795544391749 + i)
                          for i, kind in enumerate(("STARTED", "COMPLETED")))
    start = SourceOffset("slot", "db", 4096, notified=5)
    end = start.at(8192).emitting((started, completed), start)
    again = SourceOffset.from_dict(end.to_dict())
    assert (again.notifications, again.notified, again.first_notification) == ((started, completed), 7, 5)
    assert end == SourceOffset("slot", "db", 8192), "notifications are no part of the position"
    later = end.at(9000).emitting((), end)
    assert "notifications" not in later.to_dict() and later.notified == 7, "the numbering goes on past batches without any"
    pieces = notification_pieces(TOPIC, 4096, again.notifications, again.first_notification, ["chunk-1", "chunk-2"])
    assert [p if isinstance(p, str) else [n["type"] for n in p.notifications] for p in pieces] == [
        ["STARTED"], "chunk-1", "chunk-2", ["COMPLETED"]]
    assert [(p.commit_lsn, p.first_number) for p in pieces if isinstance(p, NotificationPiece)] == [(4096, 5), (4096, 6)]
    assert notification_pieces(None, 4096, (started,), 0, ["chunk-1"]) == ["chunk-1"], "no sink channel, no records"
