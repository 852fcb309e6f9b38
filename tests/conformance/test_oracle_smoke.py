"""The Debezium oracle works: real Debezium captures a snapshot and every kind of streamed change.

These tests pin what the oracle hands back (topics, ops, keys, headers, record order), which is also
what docs/debezium-oracle-notes.md records verbatim.
"""

from __future__ import annotations

import base64

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster

from .oracle import DebeziumOracle, OracleError, OracleRecord, OracleSession, debezium_properties

PREFIX = "test_server"
TX_TOPIC = f"{PREFIX}.transaction"
MESSAGE_TOPIC = f"{PREFIX}.message"
CONTEXT_HEADERS = [
    "__debezium.context.connectorLogicalName",
    "__debezium.context.taskId",
    "__debezium.context.connectorName",
    "__debezium.context.runId",
]


def _tx_status(record: OracleRecord) -> str | None:
    return record.value_payload["status"] if record.topic == TX_TOPIC else None


def _transaction(session: OracleSession, xid: int, timeout: float = 60) -> list[OracleRecord]:
    """The records of transaction ``xid``, its BEGIN through its END (ids are ``"<xid>:<lsn>"``)."""

    def of_xid(record: OracleRecord) -> bool:
        return _tx_status(record) is not None and record.key_payload["id"].startswith(f"{xid}:")

    records = session.wait_for(lambda rs: any(of_xid(r) and _tx_status(r) == "END" for r in rs), timeout=timeout)
    begin = next(i for i, r in enumerate(records) if of_xid(r) and _tx_status(r) == "BEGIN")
    end = next(i for i, r in enumerate(records) if of_xid(r) and _tx_status(r) == "END")
    return records[begin : end + 1]


def _commit(db: psycopg.Connection, *statements: str) -> int:
    """Run ``statements`` in one transaction; returns its (32-bit) xid."""
    with db.transaction():
        for statement in statements:
            db.execute(statement)
        row = db.execute("SELECT pg_current_xact_id()::text::bigint % 4294967296").fetchone()
    assert row is not None
    return int(row[0])


def _shape(records: list[OracleRecord]) -> list[tuple[str, str | None, object]]:
    """(topic, op / BEGIN / END / tombstone, key payload) per record."""
    shape = []
    for r in records:
        kind = _tx_status(r) or ("tombstone" if r.is_tombstone else r.op)
        shape.append((r.topic, kind, None if r.topic == TX_TOPIC else r.key_payload))
    return shape


def test_snapshot_and_every_streamed_operation(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    table = unique_name
    topic = f"{PREFIX}.public.{table}"
    db.execute(f"CREATE TABLE {table} (id SERIAL PRIMARY KEY, email VARCHAR(255) NOT NULL, note TEXT)")
    db.execute(f"INSERT INTO {table} (email, note) VALUES ('a@example.com', 'first'), ('b@example.com', NULL)")
    props = debezium_properties(
        pg_cluster,
        slot=unique_name,
        publication=unique_name,
        tables=[f"public.{table}"],
        **{"provide.transaction.metadata": "true", "skipped.operations": "none"},
    )

    with debezium_oracle.run(props) as session:
        session.wait_streaming()

        # Snapshot: one "r" per row, no transaction records, the last one marked "last".
        snapshot = session.records
        assert _shape(snapshot) == [(topic, "r", {"id": 1}), (topic, "r", {"id": 2})]
        assert [r.value_payload["source"]["snapshot"] for r in snapshot] == ["first", "last"]
        assert snapshot[1].value_payload["after"] == {"id": 2, "email": "b@example.com", "note": None}
        assert snapshot[0].value_payload["before"] is None
        assert snapshot[0].value_payload["transaction"] is None
        assert snapshot[0].header_names == CONTEXT_HEADERS
        assert snapshot[0].header("__debezium.context.connectorLogicalName") == {
            "schema": {"type": "string", "optional": False},
            "payload": PREFIX,
        }
        assert snapshot[0].key["schema"]["name"] == f"{topic}.Key"
        assert snapshot[0].value["schema"]["name"] == f"{topic}.Envelope"

        # INSERT
        xid = _commit(db, f"INSERT INTO {table} (email, note) VALUES ('c@example.com', 'streamed')")
        tx = _transaction(session, xid)
        assert _shape(tx) == [(TX_TOPIC, "BEGIN", None), (topic, "c", {"id": 3}), (TX_TOPIC, "END", None)]
        created = tx[1].value_payload
        assert created["after"] == {"id": 3, "email": "c@example.com", "note": "streamed"}
        assert created["source"]["snapshot"] == "false" and created["source"]["txId"] == xid
        assert created["transaction"]["id"] == tx[0].value_payload["id"]
        assert tx[1].header_names == CONTEXT_HEADERS
        assert tx[2].value_payload["event_count"] == 1
        assert tx[2].value_payload["data_collections"] == [{"data_collection": f"public.{table}", "event_count": 1}]
        assert tx[0].headers == [] and tx[2].headers == []

        # UPDATE (default replica identity: no "before")
        xid = _commit(db, f"UPDATE {table} SET note = 'changed' WHERE id = 1")
        tx = _transaction(session, xid)
        assert _shape(tx) == [(TX_TOPIC, "BEGIN", None), (topic, "u", {"id": 1}), (TX_TOPIC, "END", None)]
        assert tx[1].value_payload["before"] is None
        assert tx[1].value_payload["after"] == {"id": 1, "email": "a@example.com", "note": "changed"}

        # UPDATE of the primary key: delete (old key) + tombstone (old key) + create (new key).
        xid = _commit(db, f"UPDATE {table} SET id = 10 WHERE id = 2")
        tx = _transaction(session, xid)
        assert _shape(tx) == [
            (TX_TOPIC, "BEGIN", None),
            (topic, "d", {"id": 2}),
            (topic, "tombstone", {"id": 2}),
            (topic, "c", {"id": 10}),
            (TX_TOPIC, "END", None),
        ]
        delete, tombstone, create = tx[1:4]
        assert delete.header_names == ["__debezium.newkey", *CONTEXT_HEADERS]
        assert tombstone.header_names == ["__debezium.newkey", *CONTEXT_HEADERS]
        assert create.header_names == ["__debezium.oldkey", *CONTEXT_HEADERS]
        # The key headers are the other record's key, envelope and all.
        assert delete.header("__debezium.newkey") == create.key
        assert tombstone.header("__debezium.newkey") == create.key
        assert create.header("__debezium.oldkey") == delete.key
        assert delete.value_payload["after"] is None
        assert create.value_payload["after"] == {"id": 10, "email": "b@example.com", "note": None}
        assert tx[-1].value_payload["event_count"] == 2

        # DELETE: delete + tombstone. "before" holds the key only; NOT NULL text comes as "".
        xid = _commit(db, f"DELETE FROM {table} WHERE id = 10")
        tx = _transaction(session, xid)
        assert _shape(tx) == [
            (TX_TOPIC, "BEGIN", None),
            (topic, "d", {"id": 10}),
            (topic, "tombstone", {"id": 10}),
            (TX_TOPIC, "END", None),
        ]
        assert tx[1].value_payload["before"] == {"id": 10, "email": "", "note": None}
        assert tx[2].raw_value is None and tx[2].value is None
        assert tx[2].header_names == CONTEXT_HEADERS

        # TRUNCATE (skipped.operations=none): op "t", null key, no before/after.
        xid = _commit(db, f"TRUNCATE {table}")
        tx = _transaction(session, xid)
        assert _shape(tx) == [(TX_TOPIC, "BEGIN", None), (topic, "t", None), (TX_TOPIC, "END", None)]
        assert tx[1].raw_key is None
        assert tx[1].value_payload["before"] is None and tx[1].value_payload["after"] is None
        assert tx[1].header_names == CONTEXT_HEADERS

        # Transactional logical message: inside BEGIN/END, on <prefix>.message, no headers.
        xid = _commit(db, f"SELECT pg_logical_emit_message(true, '{unique_name}', 'tx content')")
        tx = _transaction(session, xid)
        assert _shape(tx) == [(TX_TOPIC, "BEGIN", None), (MESSAGE_TOPIC, "m", {"prefix": unique_name}), (TX_TOPIC, "END", None)]
        message = tx[1]
        assert message.headers == []
        assert message.value_payload["message"] == {"prefix": unique_name, "content": base64.b64encode(b"tx content").decode()}
        assert message.value_payload["source"]["txId"] == xid
        assert message.value_payload["transaction"] is not None
        assert "before" not in message.value_payload and "after" not in message.value_payload

        # Non-transactional logical message: no transaction, no BEGIN/END around it.
        db.execute(f"SELECT pg_logical_emit_message(false, '{unique_name}', 'non-tx content')")
        xid = _commit(db, f"INSERT INTO {table} (email) VALUES ('marker@example.com')")
        marker_tx = _transaction(session, xid)
        records = session.records
        position = next(i for i, r in enumerate(records) if r is marker_tx[0])
        assert _shape(records[position - 1 : position]) == [(MESSAGE_TOPIC, "m", {"prefix": unique_name})]
        non_tx = records[position - 1].value_payload
        assert non_tx["message"]["content"] == base64.b64encode(b"non-tx content").decode()
        assert non_tx["transaction"] is None and non_tx["source"]["txId"] is None
        # Right before it: the END of the transactional message's transaction.
        assert _tx_status(records[position - 2]) == "END"

    assert session.timings["stop"] < 30


# (id, REAL literal, DOUBLE PRECISION literal) -> the exact JSON text of "after".
FLOAT_CASES = [
    (1, "'NaN'", "'NaN'", '{"id":1,"r":"NaN","d":"NaN"}'),
    (2, "'Infinity'", "'Infinity'", '{"id":2,"r":"Infinity","d":"Infinity"}'),
    (3, "'-Infinity'", "'-Infinity'", '{"id":3,"r":"-Infinity","d":"-Infinity"}'),
    (4, "0.1", "0.1", '{"id":4,"r":0.1,"d":0.1}'),
    (5, "100", "100", '{"id":5,"r":100.0,"d":100.0}'),
    (6, "'-0'", "'-0'", '{"id":6,"r":-0.0,"d":-0.0}'),
    (7, "0.001", "0.0001", '{"id":7,"r":0.001,"d":1.0E-4}'),
    (8, "1234567", "10000000", '{"id":8,"r":1234567.0,"d":1.0E7}'),
    (9, "16777217", "12345678.9", '{"id":9,"r":1.6777216E7,"d":1.23456789E7}'),
    (10, "3.4028235e38", "1e300", '{"id":10,"r":3.4028235E38,"d":1.0E300}'),
    (11, "1e-45", "1e-7", '{"id":11,"r":1.4E-45,"d":1.0E-7}'),
]


def test_float_rendering_nan_infinities_and_java_number_format(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    """NaN and the infinities become JSON strings; finite floats print as Java's Float/Double.toString."""
    table = unique_name
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, r REAL, d DOUBLE PRECISION)")
    snapshot_cases, streamed_cases = FLOAT_CASES[:6], FLOAT_CASES[6:]
    db.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, {r}, {d})" for i, r, d, _ in snapshot_cases))
    props = debezium_properties(pg_cluster, slot=unique_name, publication=unique_name, tables=[f"public.{table}"])
    with debezium_oracle.run(props) as session:
        session.wait_streaming()
        db.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, {r}, {d})" for i, r, d, _ in streamed_cases))
        records = session.wait_for(lambda rs: sum(r.op == "c" for r in rs) == len(streamed_cases))

    assert [r.op for r in records] == ["r"] * len(snapshot_cases) + ["c"] * len(streamed_cases)
    for record, (_, _, _, after) in zip(records, FLOAT_CASES, strict=True):
        assert f',"payload":{{"before":null,"after":{after},' in record.raw_value
    assert records[0].value_payload["after"] == {"id": 1, "r": "NaN", "d": "NaN"}
    fields = records[0].value["schema"]["fields"][1]["fields"]
    assert [(f["field"], f["type"]) for f in fields] == [("id", "int32"), ("r", "float"), ("d", "double")]


def test_keys_without_primary_key(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    """A unique index stands in for a missing primary key (even with REPLICA IDENTITY DEFAULT); no index: null key."""
    unique, indexed, keyless = f"{unique_name}_uq", f"{unique_name}_ri", f"{unique_name}_nk"
    for table in (unique, indexed, keyless):
        db.execute(f"CREATE TABLE {table} (code text NOT NULL, val int)")
    db.execute(f"CREATE UNIQUE INDEX {unique}_code ON {unique} (code)")
    db.execute(f"CREATE UNIQUE INDEX {indexed}_code ON {indexed} (code)")
    db.execute(f"ALTER TABLE {indexed} REPLICA IDENTITY USING INDEX {indexed}_code")
    db.execute(f"ALTER TABLE {keyless} REPLICA IDENTITY FULL")
    for table in (unique, indexed, keyless):
        db.execute(f"INSERT INTO {table} VALUES ('a', 1)")
    props = debezium_properties(
        pg_cluster, slot=unique_name, publication=unique_name, tables=[f"public.{t}" for t in (unique, indexed, keyless)]
    )
    with debezium_oracle.run(props) as session:
        session.wait_streaming()
        snapshot = session.records
        db.execute(f"DELETE FROM {indexed} WHERE code = 'a'")
        db.execute(f"DELETE FROM {keyless} WHERE code = 'a'")
        records = session.wait_for(lambda rs: sum(r.is_tombstone for r in rs) == 2)

    assert _shape(snapshot) == [
        (f"{PREFIX}.public.{unique}", "r", {"code": "a"}),
        (f"{PREFIX}.public.{indexed}", "r", {"code": "a"}),
        (f"{PREFIX}.public.{keyless}", "r", None),
    ]
    assert snapshot[0].key["schema"] == {
        "type": "struct",
        "fields": [{"type": "string", "optional": False, "field": "code"}],
        "optional": False,
        "name": f"{PREFIX}.public.{unique}.Key",
    }
    assert snapshot[2].raw_key is None
    streamed = records[len(snapshot) :]
    assert _shape(streamed) == [
        (f"{PREFIX}.public.{indexed}", "d", {"code": "a"}),
        (f"{PREFIX}.public.{indexed}", "tombstone", {"code": "a"}),
        (f"{PREFIX}.public.{keyless}", "d", None),
        (f"{PREFIX}.public.{keyless}", "tombstone", None),
    ]
    assert streamed[0].value_payload["before"] == {"code": "a", "val": None}  # replica identity index: key columns only
    assert streamed[2].value_payload["before"] == {"code": "a", "val": 1}  # replica identity full


def test_engine_failure_is_raised_with_debeziums_message(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    props = debezium_properties(
        pg_cluster, slot=unique_name, publication=unique_name, tables=["public.nothing"], **{"snapshot.mode": "bogus"}
    )
    with pytest.raises(OracleError, match="The 'snapshot.mode' value is invalid"):
        with debezium_oracle.run(props) as session:
            session.wait_streaming()


def test_engine_dying_while_streaming_is_raised_from_wait_for(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    table = unique_name
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    props = debezium_properties(pg_cluster, slot=unique_name, publication=unique_name, tables=[f"public.{table}"])
    with pytest.raises(OracleError, match="An exception occurred in the change event producer"):
        with debezium_oracle.run(props) as session:
            session.wait_streaming()
            db.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = %s", (unique_name,))
            session.wait_for(lambda records: False, timeout=60)
    assert db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (unique_name,)).fetchone() is None


def test_slot_and_publication_are_gone_afterwards_and_no_data_snapshot_streams(
    pg_cluster: ThrowawayCluster, db: psycopg.Connection, unique_name: str, debezium_oracle: DebeziumOracle
) -> None:
    table = unique_name
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} VALUES (1)")
    props = debezium_properties(
        pg_cluster, slot=unique_name, publication=unique_name, tables=[f"public.{table}"], **{"snapshot.mode": "no_data"}
    )
    with debezium_oracle.run(props) as session:
        session.wait_streaming()
        assert db.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (unique_name,)).fetchone() == (True,)
        assert session.records == []
        db.execute(f"INSERT INTO {table} VALUES (2)")
        records = session.wait_for(lambda rs: len(rs) == 1)
        assert _shape(records) == [(f"{PREFIX}.public.{table}", "c", {"id": 2})]
    assert db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (unique_name,)).fetchone() is None
    assert db.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (unique_name,)).fetchone() is None
