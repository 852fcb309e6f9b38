"""Notifications (``sink`` channel) against real Debezium 3.6.3: the same records, in the same order.

One execute-snapshot signal asks both connectors for an incremental snapshot of the oracle facts'
two tables (10 rows with a single key, 7 with a composite one; chunk size 3). Every notification
record both emit (the initial snapshot's SKIPPED at the start, then the incremental snapshot's
STARTED ... COMPLETED) is equal field for field: key and value schema texts verbatim, payloads with
``additional_data`` compared as maps; only the wall-clock ``timestamp`` and the random id of the
initial snapshot's notification are set aside.
"""

from __future__ import annotations

from typing import Any

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster

from ..support.notifications import create_facts_tables, expected_incremental_sequence, schema_text
from ..support.waiting import wait_until
from .differential import capture_both, json_differences, normalize
from .incremental_oracle import notifications, send_source_signal, signal_properties, wait_incremental_snapshot_done
from .oracle import DebeziumOracle, OracleRecord


def _comparable(records: list[OracleRecord], topic: str) -> list[dict[str, Any]]:
    out = []
    for record in records:
        if record.topic != topic:
            continue
        normalized = normalize(record)
        payload = normalized["value"]["payload"]
        payload["timestamp"] = "<wall clock>"
        if payload["aggregate_type"] == "Initial Snapshot":
            payload["id"] = normalized["key"]["payload"]["id"] = "<random>"
        normalized["schemas"] = (schema_text(record.raw_key or ""), schema_text(record.raw_value or ""))
        out.append(normalized)
    return out


def test_incremental_snapshot_notifications_match_debezium(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    signal, *tables = create_facts_tables(db, unique_name)
    overrides = signal_properties(chunk_size=3, signal_table=signal)
    overrides["snapshot.mode"] = "no_data"
    topic = overrides["notification.sink.topic.name"]

    def completed(records: list[OracleRecord]) -> bool:
        return any(n["id"] == "snapshot-1" and n["type"] == "COMPLETED" for n in notifications(records, topic))

    with capture_both(debezium_oracle, pg_cluster, db, unique_name, tables, **overrides) as capture:
        send_source_signal(db, "snapshot-1", "execute-snapshot", {"data-collections": tables}, signal_table=signal)
        wait_incremental_snapshot_done(capture.debezium, tables, timeout=120, signal_id="snapshot-1")
        wait_until(lambda: completed(capture.ours.records), timeout=120, what="sparkcdc's COMPLETED notification")
        theirs, ours = capture.finish()

    expected, actual = _comparable(theirs, topic), _comparable(ours, topic)
    assert [n["value"]["payload"]["type"] for n in expected] == ["SKIPPED"] + expected_incremental_sequence([4, 3])
    differences = json_differences(expected, actual)
    assert not differences, "\n".join(differences)
