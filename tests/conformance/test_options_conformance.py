"""Connector options that shape events (issue item 5), each against Debezium 3.6.3."""

from __future__ import annotations

import pytest

from .differential import run_conformance


def _two_tables(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t}_a (id int PRIMARY KEY, name varchar(20) NOT NULL, secret text, card char(16), amount numeric(10,2), note text)",
        f"CREATE TABLE {t}_b (id int PRIMARY KEY, code text NOT NULL, secret text)",
        f"INSERT INTO {t}_a VALUES (1, 'alice', 's3cret', '1234567890123456', 10.5, 'n1')",
        f"INSERT INTO {t}_b VALUES (1, 'x', 'hidden')",
    ]


def _workload(t: str) -> list[str]:
    return [
        f"INSERT INTO {t}_a VALUES (2, 'bob-the-builder', 'pw', '6543210987654321', 3.25, NULL)",
        f"UPDATE {t}_a SET note = 'n2' WHERE id = 1",
        f"INSERT INTO {t}_b VALUES (2, 'y', 'hidden2')",
        f"DELETE FROM {t}_a WHERE id = 2",
        f"BEGIN; INSERT INTO {t}_a VALUES (3, 'c', NULL, NULL, 1, NULL); INSERT INTO {t}_b VALUES (3, 'z', NULL); "
        f"INSERT INTO {t}_a VALUES (4, 'd', NULL, NULL, 2, NULL); COMMIT",
    ]


OPTIONS = {
    "column_exclude": lambda t: {"column.exclude.list": rf"public\.{t}_a\.secret,public\.{t}_b\.secret"},
    "column_include": lambda t: {"column.include.list": rf"public\.{t}_a\.(id|name),public\.{t}_b\..*"},
    "column_exclude_key_column": lambda t: {"column.exclude.list": rf"public\.{t}_a\.id"},
    "truncate": lambda t: {"column.truncate.to.5.chars": rf"public\.{t}_a\.name,public\.{t}_b\.code"},
    "mask": lambda t: {"column.mask.with.8.chars": rf"public\.{t}_a\.card", "column.mask.with.3.chars": rf"public\.{t}_b\.secret"},
    "hash_sha256": lambda t: {"column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": rf"public\.{t}_a\.(secret|card)"},
    # name: NOT NULL varchar(20), whose fallback in a delete's old row ('') is hashed too
    "hash_md5": lambda t: {"column.mask.hash.MD5.with.salt.salt": rf"public\.{t}_b\.secret,public\.{t}_a\.name"},
    # v2 digests the value's UTF-8 bytes, not its Java serialization (text, char(16) and varchar(20) columns)
    "hash_v2_sha256": lambda t: {"column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K": rf"public\.{t}_a\.(secret|card)"},
    "hash_v2_md5": lambda t: {"column.mask.hash.v2.MD5.with.salt.salt": rf"public\.{t}_a\.(card|name),public\.{t}_b\.secret"},
    "hash_v2_sha3_512": lambda t: {"column.mask.hash.v2.sha3-512.with.salt.s": rf"public\.{t}_a\.secret"},  # Java's name, any case
    "propagate_column": lambda t: {"column.propagate.source.type": rf"public\.{t}_a\.(name|amount|card|id)"},
    "propagate_datatype": lambda t: {"datatype.propagate.source.type": r".+\.VARCHAR,.+\.NUMERIC,.+\.TEXT"},
    "message_key_columns": lambda t: {"message.key.columns": rf"public\.{t}_a:name,id;public\.{t}_b:code"},
    "topic_options": lambda t: {"topic.prefix": "My-Server.v1", "topic.delimiter": "_", "topic.transaction": "txns",
                                "provide.transaction.metadata": "true"},
    "transaction_metadata": lambda t: {"provide.transaction.metadata": "true"},
    "schema_name_avro": lambda t: {"topic.prefix": "my-server", "schema.name.adjustment.mode": "avro"},
    "schema_name_avro_unicode": lambda t: {"topic.prefix": "my-server", "schema.name.adjustment.mode": "avro_unicode"},
}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_option(debezium_oracle, pg_cluster, db, unique_name: str, option: str) -> None:
    t = f"o_{option}_{len(unique_name)}_{unique_name[-3:].strip('_')}"
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=_two_tables(t), tables=[f"public.{t}_a", f"public.{t}_b"], workload=_workload(t), **OPTIONS[option](t),
    )


@pytest.mark.parametrize("mode", ["avro", "avro_unicode"])
def test_field_name_adjustment(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    t = f"fields_{mode}_{unique_name[-2:]}"
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[f'CREATE TABLE {t} (id int PRIMARY KEY, "first-name" text, "9lives" int, "ünïcode" text, "a.b" text)',
               f"INSERT INTO {t} VALUES (1, 'x', 9, 'u', 'ab')"],
        tables=[f"public.{t}"],
        workload=[f"INSERT INTO {t} VALUES (2, 'y', 8, 'v', 'cd')", f"UPDATE {t} SET \"9lives\" = 7 WHERE id = 1"],
        **{"field.name.adjustment.mode": mode},
    )


@pytest.mark.parametrize(
    "options",
    [
        {"message.prefix.include.list": "keep.*"},
        {"message.prefix.exclude.list": "drop.*,other"},
        {"binary.handling.mode": "hex"},
        {"binary.handling.mode": "base64-url-safe"},
    ],
    ids=["prefix_include", "prefix_exclude", "binary_hex", "binary_base64_url"],
)
def test_logical_message_options(debezium_oracle, pg_cluster, db, unique_name: str, options: dict) -> None:
    t = f"msg_{unique_name[-2:]}"

    def workload() -> None:
        # A transaction first: a non-transactional message reports the last commit's time, and
        # before any streamed commit that is each connector's own snapshot time.
        db.execute(f"INSERT INTO {t} VALUES (3)")
        for prefix in ("keep-1", "drop-1", "other", "keepme"):
            db.execute("SELECT pg_logical_emit_message(false, %s, %s::bytea)", (prefix, b"\x00\xff\xfe?>"))
            db.execute("SELECT pg_logical_emit_message(true, %s, 'text content')", (prefix,))
        db.execute(f"INSERT INTO {t} VALUES (2)")

    # The harness ends each capture with a logical message whose prefix both connectors must accept.
    if "message.prefix.include.list" in options:
        options = {"message.prefix.include.list": options["message.prefix.include.list"] + ",conformance-end"}
    run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[f"CREATE TABLE {t} (id int PRIMARY KEY)", f"INSERT INTO {t} VALUES (1)"],
        tables=[f"public.{t}"], workload=workload, **options,
    )


def test_heartbeats(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """Heartbeat records have Debezium's topic, key and value (their count and time depend on timing)."""
    from .differential import assert_same_records, capture_both

    t = f"hb_{unique_name[-2:]}"
    db.execute(f"CREATE TABLE {t} (id int PRIMARY KEY)")
    db.execute(f"CREATE TABLE {t}_beats (n int)")
    options = {"heartbeat.interval.ms": "200", "topic.heartbeat.prefix": "beats",
               "heartbeat.action.query": f"INSERT INTO {t}_beats VALUES (1)"}
    def beating(records: list) -> bool:
        return any(r.topic == "beats.test_server" for r in records)

    with capture_both(debezium_oracle, pg_cluster, db, unique_name, [f"public.{t}"], **options) as capture:
        db.execute(f"INSERT INTO {t} VALUES (1)")
        capture.debezium.wait_for(beating)
        capture.ours.wait_for(beating)
        debezium, ours = capture.finish()
    ours_session_beats = [r for r in ours if r.topic == "beats.test_server"]
    theirs = [r for r in debezium if r.topic == "beats.test_server"]
    assert theirs and ours_session_beats, "both connectors must emit heartbeats within the capture"
    for record in (theirs[0], ours_session_beats[0]):
        assert record.key == {"schema": {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "serverName"}],
                                         "optional": False, "name": "io.debezium.connector.common.ServerNameKey", "version": 1},
                              "payload": {"serverName": "test_server"}}
        assert record.value["schema"] == theirs[0].value["schema"]
        assert set(record.value_payload) == {"ts_ms"} and record.raw_headers == theirs[0].raw_headers
    assert db.execute(f"SELECT count(*) FROM {t}_beats").fetchone()[0] >= 2  # the action query ran for both
    assert_same_records([r for r in debezium if r.topic != "beats.test_server"], [r for r in ours if r.topic != "beats.test_server"])
