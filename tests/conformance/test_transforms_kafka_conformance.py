"""Kafka Connect's transforms and predicates, each run by real Debezium 3.6.3 (Kafka 4.3's
connect-transforms) and by sparkcdc on the same snapshot rows and streamed changes.

Every option set is one oracle run: rows inserted in ``setup`` reach both connectors through their
initial snapshots, the workload's inserts, updates, deletes (with tombstones) and a two-statement
transaction through streaming. The closing logical decoding message goes through the transforms
too, so the end is recognised by its prefix wherever a transform left it (key or value).

Where Kafka's transform fails on Debezium's records (no record timestamp, no Kafka offset, a null
value that MaskField or ValueToKey cannot take, a cast that Java refuses) both connectors must fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .differential import END_PREFIX, assert_both_stop, run_conformance
from .oracle import OracleRecord, debezium_properties

K = "org.apache.kafka.connect.transforms."
TABLES = r"test_server\.public\..*"


def _is_end(record: OracleRecord) -> bool:
    """The closing message, wherever a transform left its prefix: the key, or the value's message."""
    key, value = record.key_payload, record.value_payload
    if isinstance(key, dict) and key.get("prefix") == END_PREFIX:
        return True
    message = value.get("message") if isinstance(value, dict) else None
    return isinstance(message, dict) and message.get("prefix") == END_PREFIX


def _setup(t: str) -> list[str]:
    return [
        f'CREATE TABLE {t} (id int PRIMARY KEY, name text, "a.b" text, qty smallint DEFAULT 3, big bigint, price numeric(10,2), '
        "whole numeric(12,0), ratio real, score double precision, flag boolean, born date, seen timestamp, blob bytea, doc jsonb, "
        "tags int[], num_text text, code text NOT NULL DEFAULT 'x', at time)",
        f"CREATE TABLE {t}_b (id int PRIMARY KEY, label text)",
        f"INSERT INTO {t} VALUES (1, 'alice', 'dotted', 7, 70000, 12.34, 300, 3.7, 0.1, true, '2020-01-02', "
        "'2020-01-02 03:04:05.123456', '\\x01ff', '{\"a\": 1}', '{1,2}', '123', 'c1', '01:02:03.004')",
        f"INSERT INTO {t} (id, name, code) VALUES (2, NULL, 'c2')",
        f"INSERT INTO {t}_b VALUES (1, 'b-one')",
    ]


_SNAPSHOT_ROWS = (1, 2, "b1")


def _workload(t: str) -> list[str]:
    return [
        f"INSERT INTO {t} VALUES (3, 'carol', NULL, -200, 9223372036854775807, -0.5, 4294967296, 1e10, 1e20, false, "
        "'1500-03-01', '1999-12-31 23:59:59.999', '\\x', '[]', '{}', '-42', 'c3', '23:59:59')",
        f"UPDATE {t} SET name = 'alicia', ratio = -3.7, num_text = '+7', seen = '2021-06-07 00:00:00' WHERE id = 1",
        f"INSERT INTO {t}_b VALUES (2, 'b-two')",
        f"DELETE FROM {t} WHERE id = 2",
        f"BEGIN; INSERT INTO {t} (id, name, qty, code) VALUES (4, 'dave', NULL, 'c4'); UPDATE {t}_b SET label = NULL WHERE id = 1; "
        "COMMIT",
    ]


def _predicate(alias: str, kind: str, **options: str) -> dict[str, str]:
    return {f"predicates.{alias}.type": f"{K}predicates.{kind}", **{f"predicates.{alias}.{k}": v for k, v in options.items()}}


def _transform(alias: str, kind: str, **options: str) -> dict[str, str]:
    return {f"transforms.{alias}.type": K + kind, **{f"transforms.{alias}.{k.replace('_', '.')}": v for k, v in options.items()}}


def _is_table() -> dict[str, str]:
    return _predicate("isTable", "TopicNameMatches", pattern=TABLES)


def _is_a(t: str) -> dict[str, str]:
    """``isA``: the first table's topic (the one whose columns the case names)."""
    return _predicate("isA", "TopicNameMatches", pattern=rf"test_server\.public\.{t}")


def _is_tombstone() -> dict[str, str]:
    return _predicate("isTombstone", "RecordIsTombstone")


_EXTRACT_AFTER = _transform("after", "ExtractField$Value", field="after", predicate="isTable")

#: name -> (properties, what the run must show in Debezium's records)
CASES: dict[str, tuple[Callable[[str], dict[str, str]], Callable[[list[OracleRecord]], Any]]] = {
    "regex_router": (
        lambda t: {"transforms": "route", **_transform("route", "RegexRouter", regex=r"test_server\.(.*)", replacement="cdc_$1")},
        lambda records: {r.topic for r in records} >= {"cdc_public.tr_regex_router", "cdc_public.tr_regex_router_b"},
    ),
    "filter_tombstones": (
        lambda t: {"transforms": "drop", **_transform("drop", "Filter", predicate="isTombstone"), "predicates": "isTombstone",
                   **_is_tombstone()},
        lambda records: not any(r.is_tombstone for r in records) and any(r.op == "d" for r in records),
    ),
    "predicates": (
        # Filter the second table's records; route every record that has a header Debezium adds;
        # a router guarded by a header no record has changes nothing.
        lambda t: {
            "transforms": "dropB,route,never",
            **_transform("dropB", "Filter", predicate="isB"),
            **_transform("route", "RegexRouter", regex="(.*)", replacement="$1.routed", predicate="hasName"),
            **_transform("never", "RegexRouter", regex="(.*)", replacement="never", predicate="hasNothing"),
            "predicates": "isB,hasName,hasNothing",
            **_predicate("isB", "TopicNameMatches", pattern=r".*_b"),
            **_predicate("hasName", "HasHeaderKey", name="__debezium.context.connectorName"),
            **_predicate("hasNothing", "HasHeaderKey", name="no.such.header"),
        },
        lambda records: records and all(r.topic.endswith(".routed") and "_b." not in r.topic for r in records),
    ),
    "negate": (
        lambda t: {"transforms": "route", **_transform("route", "RegexRouter", regex="(.*)", replacement="other.$1",
                                                       predicate="isB", negate="true"),
                   "predicates": "isB", **_predicate("isB", "TopicNameMatches", pattern=r".*_b")},
        lambda records: {r.topic.startswith("other.") for r in records} == {True, False},
    ),
    "replace_field": (
        lambda t: {
            "transforms": "value,key", "provide.transaction.metadata": "true",
            **_transform("value", "ReplaceField$Value", exclude="source,ts_ms,ts_us,ts_ns,transaction", renames="op:kind,after:row"),
            **_transform("key", "ReplaceField$Key", renames="id:key_id"),
        },
        lambda records: any(r.value_payload and "kind" in r.value_payload and "row" in r.value_payload for r in records),
    ),
    "replace_field_include": (
        lambda t: {
            "transforms": "value",
            **_transform("value", "ReplaceField$Value", include="op,after,message,status", exclude="status", blacklist="op"),
        },
        lambda records: any(r.value_payload and set(r.value_payload) == {"op", "after"} for r in records),
    ),
    "insert_field": (
        lambda t: {
            "transforms": "value,key", "provide.transaction.metadata": "true",
            **_transform("value", "InsertField$Value", topic_field="topic", partition_field="part?", timestamp_field="ts",
                         static_field="origin!", static_value="sparkcdc"),
            **_transform("key", "InsertField$Key", topic_field="key_topic!"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("origin") == "sparkcdc" for r in records),
    ),
    "mask_field": (
        lambda t: {
            "transforms": "after,mask,maskKey", "predicates": "isTable,isTombstone", **_is_table(), **_is_tombstone(),
            **_EXTRACT_AFTER,
            **_transform("mask", "MaskField$Value", fields="name,qty,big,ratio,score,flag,born,seen,doc,tags,whole,code,nope",
                         predicate="isTombstone", negate="true"),
            **_transform("maskKey", "MaskField$Key", fields="id"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("code") == "" for r in records),
    ),
    "mask_field_numbers": (
        lambda t: {
            "transforms": "after,mask", "predicates": "isTable,isTombstone", **_is_table(), **_is_tombstone(), **_EXTRACT_AFTER,
            **_transform("mask", "MaskField$Value", fields="qty,big,ratio,score,whole", replacement="-1.5e1",
                         predicate="isTombstone", negate="true"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("qty") == -15 for r in records),
    ),
    "mask_field_text": (
        lambda t: {
            "transforms": "after,mask", "predicates": "isTable,isTombstone", **_is_table(), **_is_tombstone(), **_EXTRACT_AFTER,
            **_transform("mask", "MaskField$Value", fields="name,doc,code,num_text", replacement="***",
                         predicate="isTombstone", negate="true"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("doc") == "***" for r in records),
    ),
    "mask_field_connect_time": (
        lambda t: {
            "transforms": "after,mask", "predicates": "isTable,isTombstone", "time.precision.mode": "connect",
            **_is_table(), **_is_tombstone(), **_EXTRACT_AFTER,
            **_transform("mask", "MaskField$Value", fields="born,seen", predicate="isTombstone", negate="true"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("seen") == 0 for r in records),
    ),
    "value_to_key": (
        lambda t: {
            "transforms": "dropTombstones,toKey", "predicates": "isTable,isTombstone", **_is_table(), **_is_tombstone(),
            **_transform("dropTombstones", "Filter", predicate="isTombstone"),
            **_transform("toKey", "ValueToKey", fields="op,after,op", predicate="isTable"),
        },
        lambda records: any(r.key_payload and set(r.key_payload) == {"op", "after"} for r in records),
    ),
    "extract_field": (
        lambda t: {
            "transforms": "after,key", "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
            **_transform("key", "ExtractField$Key", field="id", predicate="isTable"),
        },
        lambda records: any(r.key_payload == 1 for r in records) and any(r.value is not None and r.value_payload is None
                                                                        for r in records),
    ),
    "extract_field_nested": (
        # after.qty has a default (3): a delete's null after writes it, as JsonConverter does.
        lambda t: {
            "transforms": "qty,key", "predicates": "isTable,isA", **_is_table(), **_is_a(t),
            **_transform("qty", "ExtractField$Value", field="after.qty", field_syntax_version="V2", predicate="isA"),
            **_transform("key", "ExtractField$Key", field="id", field_syntax_version="v2", predicate="isTable"),
        },
        lambda records: any(r.value_payload == 3 for r in records),
    ),
    "extract_field_backticks": (
        lambda t: {
            "transforms": "dotted", "predicates": "isA", **_is_a(t),
            **_transform("dotted", "ExtractField$Value", field="after.`a.b`", field_syntax_version="V2", predicate="isA"),
        },
        lambda records: any(r.value_payload == "dotted" for r in records),
    ),
    "cast_fields": (
        lambda t: {
            "transforms": "after,cast,key", "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
            **_transform("cast", "Cast$Value", predicate="isTable",
                         spec="id:string,qty:int8,big:int16,price:string,whole:float64,ratio:float64,score:float32,flag:int32,"
                              "born:string,seen:float64,name:boolean,num_text:int32,blob:string,code:STRING,nope:int8"),
            **_transform("key", "Cast$Key", spec="id:string"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("price") == "12.34" for r in records),
    ),
    "cast_numbers": (
        lambda t: {
            "transforms": "after,cast", "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
            **_transform("cast", "Cast$Value", predicate="isTable",
                         spec="qty:boolean,big:float32,price:int32,whole:int8,ratio:int64,score:string,flag:float64,id:float32"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("score") == "1.0E20" for r in records),
    ),
    "cast_connect_time": (
        lambda t: {
            "transforms": "after,cast", "predicates": "isTable", "time.precision.mode": "connect", **_is_table(), **_EXTRACT_AFTER,
            **_transform("cast", "Cast$Value", spec="born:string,seen:string,at:string,price:float64", predicate="isTable"),
        },
        lambda records: any(r.value_payload and r.value_payload.get("born") == "2020-01-02" for r in records),
    ),
    "cast_whole_value": (
        # A whole-value cast keeps the schema's name (Debezium's io.debezium.time.Date here).
        lambda t: {
            "transforms": "born,cast", "predicates": "isA", **_is_a(t),
            **_transform("born", "ExtractField$Value", field="after.born", field_syntax_version="V2", predicate="isA"),
            **_transform("cast", "Cast$Value", spec="string", predicate="isA"),
        },
        lambda records: any(r.value_payload == "18263" for r in records),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kafka_transform(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"tr_{case}"
    properties, shows = CASES[case]
    debezium, _ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_setup(t), tables=[f"public.{t}", f"public.{t}_b"],
        workload=_workload(t), is_end=_is_end, **properties(t),
    )
    assert shows(debezium), f"{case}: the run does not show what it is meant to"
    # Snapshot and stream both went through the transforms: the setup's rows are snapshotted (the
    # default snapshot mode) and come first, the workload's changes follow.
    assert "snapshot.mode" not in properties(t) and len(debezium) > len(_SNAPSHOT_ROWS), debezium


# -- where Kafka's transform fails on Debezium's records, both fail ---------------------------------

FAILING: dict[str, tuple[Callable[[str], dict[str, str]], str, str]] = {
    # name -> (properties, Debezium's words, sparkcdc's words)
    "timestamp_router": (
        lambda t: {"transforms": "r", **_transform("r", "TimestampRouter")},
        "Timestamp missing on record", "Timestamp missing on record",
    ),
    "insert_offset": (
        lambda t: {"transforms": "i", **_transform("i", "InsertField$Value", offset_field="offset")},
        "Only SinkRecord supported for [field insertion]", "Only SinkRecord supported for [field insertion]",
    ),
    "insert_required_timestamp": (
        lambda t: {"transforms": "i", **_transform("i", "InsertField$Value", timestamp_field="ts!")},
        "null value for field that is required", "null value for field that is required",
    ),
    "mask_tombstone": (
        lambda t: {"transforms": "m", "snapshot.mode": "no_data", **_transform("m", "MaskField$Value", fields="op")},
        "Only Map objects supported in absence of schema for [mask fields], found: null",
        "Only Map objects supported in absence of schema for [mask fields], found: null",
    ),
    "value_to_key_null": (
        lambda t: {"transforms": "after,toKey", "snapshot.mode": "no_data", "tombstones.on.delete": "false",
                   "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
                   **_transform("toKey", "ValueToKey", fields="id", predicate="isTable")},
        "Only Struct objects supported for [copying fields from value to key], found: null",
        "Only Struct objects supported for [copying fields from value to key], found: null",
    ),
    "mask_decimal_scale": (
        lambda t: {"transforms": "after,m", "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
                   **_transform("m", "MaskField$Value", fields="price", predicate="isTable")},
        "mismatching scale", "mismatching scale",
    ),
    "mask_bytes": (
        lambda t: {"transforms": "after,m", "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
                   **_transform("m", "MaskField$Value", fields="blob", predicate="isTable")},
        "Cannot mask value of type", "Cannot mask value of type",
    ),
    "extract_unknown_field": (
        lambda t: {"transforms": "x", **_transform("x", "ExtractField$Value", field="nope")},
        "Unknown field: nope", "Unknown field: nope",
    ),
    "cast_text_to_int": (
        lambda t: {"transforms": "after,c", "predicates": "isTable", **_is_table(), **_EXTRACT_AFTER,
                   **_transform("c", "Cast$Value", spec="name:int32", predicate="isTable")},
        "Value (alice) was out of range for requested data type", "Value (alice) was out of range for requested data type",
    ),
    "cast_whole_logical": (
        lambda t: {"transforms": "born,c", "predicates": "isA", "time.precision.mode": "connect", **_is_a(t),
                   **_transform("born", "ExtractField$Value", field="after.born", field_syntax_version="V2", predicate="isA"),
                   **_transform("c", "Cast$Value", spec="string", predicate="isA")},
        "Invalid type for Date", "Invalid type for Date",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_kafka_transform_fails_as_kafka_fails(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"trf_{case}"
    properties, theirs_words, our_words = FAILING[case]
    for statement in _setup(t):
        db.execute(statement)
    dbz_props = debezium_properties(pg_cluster, slot=f"{unique_name}_d", publication=f"{unique_name}_d",
                                    tables=[f"public.{t}", f"public.{t}_b"], **properties(t))

    def change(run: int) -> None:  # a streamed insert, update and delete (a fresh row for each run)
        row = 100 + run
        db.execute(f"INSERT INTO {t} (id, name, born, price, code) VALUES ({row}, 'x{run}', '2021-05-06', 1.5, 'c')")
        db.execute(f"UPDATE {t} SET name = 'y' WHERE id = {row}")
        db.execute(f"DELETE FROM {t} WHERE id = {row}")

    assert_both_stop(debezium_oracle, db, dbz_props, unique_name, change, theirs_words, our_words)


def test_cases_cover_every_kafka_transform_and_predicate() -> None:
    """Each Kafka transform and predicate sparkcdc runs is in a differential case above."""
    from sparkcdc.debezium.transforms.registry import PREDICATES, TRANSFORMS

    text = repr([properties("t") for properties, _ in CASES.values()] + [properties("t") for properties, _, _ in FAILING.values()])
    kafka = [name for name in [*TRANSFORMS, *PREDICATES] if name.startswith(K)]
    assert kafka and [name for name in kafka if name not in text] == []

