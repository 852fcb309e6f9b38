"""``value.converter=io.debezium.converters.CloudEventsConverter`` (issue 28 item 4) against Debezium 3.6.3.

Both connectors run the same properties; Debezium's embedded engine reads the converter as
``value.converter.class`` (``debezium_properties`` copies ``value.converter`` there). Every record is
compared: the key and headers as JsonConverter writes them, the value as a CloudEvent (or null: a
record that is not a change event). Fields that legitimately differ are blanked, and only these:

* ``iodebeziumversion``: ``source.version``, sparkcdc's own (docs/conformance.md);
* for snapshot rows, ``id`` (it holds ``lsn``, ``txId`` and ``sequence``), ``time`` (``source.ts_ms``)
  and the ``iodebezium`` attributes of those source fields: each connector snapshots through its own
  slot, in its own transaction, at its own time. Streamed rows keep every attribute, ``id`` and
  ``time`` included (the commit's time, the same WAL positions for both).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .differential import END_PREFIX, by_topic, run_conformance, run_conformance_through_spark
from .oracle import SNAPSHOT_MARKERS, OracleRecord

CLOUDEVENTS = "io.debezium.converters.CloudEventsConverter"
_SNAPSHOT_ATTRIBUTES = ("id", "time", "iodebeziumtsms", "iodebeziumtsus", "iodebeziumtsns", "iodebeziumtxId", "iodebeziumlsn",
                        "iodebeziumsequence")


def _is_end(record: OracleRecord) -> bool:
    """The closing message's record: its value is null under CloudEvents, its key stays JSON."""
    return record.topic.endswith(".message") and record.key_payload == {"prefix": END_PREFIX}


def _blank(event: dict[str, Any]) -> None:
    for name in _SNAPSHOT_ATTRIBUTES:
        if name in event:
            event[name] = "<snapshot>"


def _cloudevents(snapshot_keys: frozenset[int] = frozenset()):
    """The normalizer: see the module's docstring. Without extension attributes a snapshot row is
    told by its key (``snapshot_keys``: the rows the set-up inserted, which the workload leaves alone)."""

    def normalize(record: dict[str, Any]) -> dict[str, Any]:
        event = record["value"]
        if not isinstance(event, dict) or "specversion" not in event:
            return record
        if "iodebeziumversion" in event:
            event["iodebeziumversion"] = "<version>"
            if event.get("iodebeziumsnapshot") in SNAPSHOT_MARKERS:
                _blank(event)
        elif record["key"] and record["key"]["payload"].get("id") in snapshot_keys:
            _blank(event)
        return record

    return normalize


_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_BLANKED = re.compile(rf'"({"|".join(_SNAPSHOT_ATTRIBUTES)})":({_JSON_STRING}|null)')
_VERSION = re.compile(rf'"iodebeziumversion":{_JSON_STRING}')


def _assert_same_bytes(debezium: list[OracleRecord], ours: list[OracleRecord], snapshot_keys: frozenset[int] = frozenset()) -> None:
    """Beyond the parsed comparison of run_conformance: each value's text is Debezium's byte for byte
    (attribute order and number spelling included), the blanked attributes of the docstring aside."""
    for topic, theirs in by_topic(debezium).items():
        for expected, actual in zip(theirs, by_topic(ours)[topic], strict=True):
            texts = [expected.raw_value, actual.raw_value]
            if texts[0] is None or texts[1] is None:
                assert texts[0] == texts[1], topic
                continue
            snapshot = (expected.value.get("iodebeziumsnapshot") in SNAPSHOT_MARKERS
                        or (expected.key or {}).get("payload", {}).get("id") in snapshot_keys)
            texts = [_VERSION.sub('"iodebeziumversion":"<version>"', text) for text in texts]
            if snapshot:
                texts = [_BLANKED.sub(lambda match: f'"{match.group(1)}":"<snapshot>"', text) for text in texts]
            assert texts[0] == texts[1], f"{topic}: {expected}\n  Debezium: {texts[0]}\n  sparkcdc: {texts[1]}"


def _table(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t} (id int PRIMARY KEY, name text NOT NULL, amount numeric(10,2), score double precision DEFAULT 1.5, "
        f"flag boolean, at timestamptz, doc jsonb, raw bytea, tags text[], d int DEFAULT 5)",
        f"INSERT INTO {t} VALUES (1, 'alice', 10.5, 2.25, true, '2024-02-29 12:34:56.789+01', '{{\"a\": [1, 2]}}', '\\x0102', "
        f"'{{x,y}}', NULL)",
        f"INSERT INTO {t} VALUES (2, 'bob', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 7)",
    ]


def _changes(t: str) -> list[str]:
    return [
        f"INSERT INTO {t} VALUES (100, 'ünïcode \"quoted\"', 3.25, -0.5, false, '1970-01-01 00:00:00+00', 'null', '\\x', '{{}}', 1)",
        f"UPDATE {t} SET name = 'carol', amount = 0 WHERE id = 100",
        f"BEGIN; INSERT INTO {t} (id, name) VALUES (101, 'in a transaction'); UPDATE {t} SET id = 102 WHERE id = 101; COMMIT",
        f"DELETE FROM {t} WHERE id = 102",
        "SELECT pg_logical_emit_message(true, 'ce-test', 'a transactional message')",
        "SELECT pg_logical_emit_message(false, 'ce-test', 'a message')",
        f"INSERT INTO {t} (id, name) VALUES (103, 'before the truncate')",
    ]


def test_cloudevents_as_debezium_writes_them(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """The default converter settings: snapshot and streamed rows, updates with a key change (delete,
    tombstone, create with the old key header), a truncate, transaction metadata (the BEGIN/END
    records are not change events: null values) and logical decoding messages (null too)."""
    t = f"ce_{unique_name[-6:].strip('_')}"
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=_table(t), tables=[f"public.{t}"],
        workload=[*_changes(t), f"TRUNCATE {t}"],
        is_end=_is_end, normalizer=_cloudevents(),
        **{"value.converter": CLOUDEVENTS, "provide.transaction.metadata": "true", "skipped.operations": "none"},
    )
    _assert_same_bytes(debezium, ours)
    events = [r.value for r in ours if r.value is not None]
    assert {e["iodebeziumop"] for e in events} == {"r", "c", "u", "d", "t"}
    assert all(e["data"].keys() == {"schema", "payload"} for e in events)
    assert any(e["iodebeziumtxtotalorder"] is not None for e in events), "transaction attributes are exercised"
    nulls = {r.topic.rsplit(".", 1)[-1] for r in ours if r.value is None}
    assert {"transaction", "message", t} <= nulls, "non-change records (and tombstones) are null values"


def test_cloudevents_without_data_schema_or_extension_attributes(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """``json.schemas.enable=false`` (data is the bare before and after) and
    ``extension.attributes.enable=false`` (no iodebezium* attribute); ``value.converter.schemas.enable``
    has no effect under CloudEvents, in either connector."""
    t = f"ce_bare_{unique_name[-6:].strip('_')}"
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=_table(t), tables=[f"public.{t}"], workload=_changes(t),
        is_end=_is_end, normalizer=_cloudevents(frozenset({1, 2})),
        **{"value.converter": CLOUDEVENTS, "value.converter.json.schemas.enable": "false",
           "value.converter.extension.attributes.enable": "false", "value.converter.schemas.enable": "false"},
    )
    _assert_same_bytes(debezium, ours, frozenset({1, 2}))
    events = [r.value for r in ours if r.value is not None]
    assert events and all(e["data"].keys() == {"before", "after"} for e in events)
    assert not any(name.startswith("iodebezium") for e in events for name in e)


def test_cloudevents_after_a_transform(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """A transform that keeps the envelope (a topic router) runs before the converter: the CloudEvent
    is made of the routed record; the ``source`` attribute still names the connector (source.name)."""
    t = f"ce_routed_{unique_name[-6:].strip('_')}"
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=_table(t), tables=[f"public.{t}"], workload=_changes(t)[:4],
        is_end=_is_end, normalizer=_cloudevents(),
        **{"value.converter": CLOUDEVENTS, "topic.prefix": "ce-server",
           "transforms": "route", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
           "transforms.route.regex": r"ce-server\.public\.(.*)", "transforms.route.replacement": "routed.$1"},
    )
    _assert_same_bytes(debezium, ours)
    assert {r.topic for r in ours if r.value is not None} == {f"routed.{t}"}
    assert all(r.value["source"] == "/debezium/postgresql/ce-server" for r in ours if r.value is not None)


@pytest.mark.slow
def test_cloudevents_through_spark(spark, debezium_oracle, pg_cluster, db, unique_name: str, tmp_path: Path) -> None:
    """``sparkcdc run`` with the topic-files sink: the Spark reader tasks write the lines (the snapshot's
    chunks and the stream), each value a CloudEvent; the server-rendered snapshot path stays out of it."""
    t = f"ce_spark_{unique_name[-6:].strip('_')}"
    debezium, ours = run_conformance_through_spark(
        debezium_oracle, pg_cluster, db, unique_name, tmp_path,
        # Types PostgreSQL renders as JSON itself (sparkcdc.snapshot.render.sql): that path must stand aside.
        setup=[f"CREATE TABLE {t} (id int PRIMARY KEY, name text NOT NULL, n bigint, note varchar(20) DEFAULT 'x')",
               f"INSERT INTO {t} SELECT g, 'row ' || g, g * 10, NULL FROM generate_series(1, 60) g"],
        tables=[f"public.{t}"],
        workload=[f"INSERT INTO {t} VALUES (100, 'new', NULL, 'y')", f"UPDATE {t} SET name = 'changed' WHERE id = 100",
                  f"UPDATE {t} SET id = 101 WHERE id = 100", f"DELETE FROM {t} WHERE id = 101",
                  "SELECT pg_logical_emit_message(true, 'ce-test', 'a transactional message')"],
        is_end=_is_end, normalizer=_cloudevents(),
        **{"value.converter": CLOUDEVENTS, "provide.transaction.metadata": "true"},
    )
    _assert_same_bytes(debezium, ours)
    assert sum(1 for r in ours if r.value is not None and r.value["iodebeziumop"] == "r") == 60


def test_a_reshaped_change_event_is_not_a_cloudevent(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """After ExtractNewRecordState a value is the row (a schema named *.Value), no longer an envelope:
    Debezium's converter writes it as null, and so does sparkcdc."""
    t = f"ce_unwrap_{unique_name[-6:].strip('_')}"
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=_table(t), tables=[f"public.{t}"], workload=_changes(t)[:4],
        is_end=_is_end, normalizer=_cloudevents(),
        **{"value.converter": CLOUDEVENTS, "transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"},
    )
    assert any(r.topic.endswith(t) for r in ours) and all(r.value is None for r in ours)
