"""Debezium's ByLogicalTableRouter on records shaped as sparkcdc's connector makes them; each
expected record is what Debezium 3.6.3 made of the same record (tests/conformance/
test_transforms_routing_conformance.py checks them against it on sharded tables)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.connect import int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord, Header
from sparkcdc.debezium.schemas import envelope_schema
from sparkcdc.debezium.transforms import TransformConfigError, transform_chain
from sparkcdc.debezium.transforms.base import RecordError

ROUTER = "io.debezium.transforms.ByLogicalTableRouter"
CONTEXT = (Header("__debezium.context.connectorName", "postgresql", string(), constant=True),)


def shard(n: int) -> tuple[Any, Any]:
    row = struct([("id", int32()), ("name", string(optional=True))], optional=True, name=f"shop.public.cust_shard{n}.Value")
    return (struct([("id", int32())], name=f"shop.public.cust_shard{n}.Key"), envelope_schema(row, f"shop.public.cust_shard{n}.Envelope"))



def change(n: int, op: str = "c", key: dict[str, Any] | None = None) -> ChangeRecord:
    key_schema, envelope = shard(n)
    value = {"before": None, "after": {"id": 1, "name": "a"}, "source": {"table": f"cust_shard{n}"}, "transaction": None, "op": op,
             "ts_ms": 1, "ts_us": 1, "ts_ns": 1}
    return ChangeRecord(f"shop.public.cust_shard{n}", key if key is not None else {"id": 1}, key_schema, value, envelope, CONTEXT,
                        op, "public", f"cust_shard{n}", 7, 9, 1)


def routed(records: list[ChangeRecord], **options: str) -> list[ChangeRecord]:
    chain = transform_chain({"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.topic.regex": "(.*)cust_shard(.*)",
                             "transforms.r.topic.replacement": "$1cust_all",
                             **{f"transforms.r.{name}": value for name, value in options.items()}})
    return list(chain.apply(records))


def test_shards_share_the_logical_topic_and_keys_tell_them_apart() -> None:
    one, two = routed([change(1), change(2)])
    assert (one.topic, two.topic) == ("shop.public.cust_all", "shop.public.cust_all")
    assert one.key == {"id": 1, "__dbz__physicalTableIdentifier": "shop.public.cust_shard1"}
    assert two.key == {"id": 1, "__dbz__physicalTableIdentifier": "shop.public.cust_shard2"}
    assert one.key_schema is two.key_schema or one.key_schema == two.key_schema
    assert one.key_schema.to_json() == {"type": "struct", "fields": [  # type: ignore[union-attr]
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "__dbz__physicalTableIdentifier"}],
        "optional": False, "name": "shop.public.cust_all.Key"}
    envelope = one.value_schema
    assert envelope.name == "shop.public.cust_all.Envelope" and envelope.version == 2  # type: ignore[union-attr]
    assert [(f.name, f.schema.name) for f in envelope.fields[:3]] == [  # type: ignore[union-attr]
        ("before", "shop.public.cust_all.Value"), ("after", "shop.public.cust_all.Value"), ("source", "io.debezium.connector.postgresql.Source")]
    assert one.value is change(1).value or one.value == change(1).value
    assert (one.lsn, one.commit_lsn, one.ordinal, one.headers) == (7, 9, 1, CONTEXT)


def test_key_options() -> None:
    (out,) = routed([change(1)], **{"key.field.name": "shard", "key.field.regex": r"(.*)cust_(.*)", "key.field.replacement": "$2"})
    assert out.key == {"id": 1, "shard": "shard1"}
    (out,) = routed([change(1)], **{"key.field.regex": r"shard(\d)", "key.field.replacement": "$1"})  # matched whole only
    assert out.key == {"id": 1, "__dbz__physicalTableIdentifier": "shop.public.cust_shard1"}
    (out,) = routed([change(1)], **{"key.enforce.uniqueness": "false"})
    assert out.key == {"id": 1} and out.key_schema.name == "shop.public.cust_all.Key"  # type: ignore[union-attr]


def test_tombstones_keyless_records_and_other_topics() -> None:
    key_schema, _ = shard(1)
    tombstone = ChangeRecord("shop.public.cust_shard1", {"id": 1}, key_schema, None, None, CONTEXT)
    keyless = change(1)
    keyless.key, keyless.key_schema = None, None
    heartbeat_schema = struct([("ts_ms", int64())], name="io.debezium.connector.common.Heartbeat", version=1)
    heartbeat = ChangeRecord("__debezium-heartbeat.shop", {"serverName": "shop"},
                             struct([("serverName", string())], name="io.debezium.connector.common.ServerNameKey", version=1),
                             {"ts_ms": 5}, heartbeat_schema)
    out = routed([tombstone, keyless, heartbeat])
    assert (out[0].topic, out[0].key, out[0].value) == ("shop.public.cust_all", {"id": 1, "__dbz__physicalTableIdentifier":
                                                                                 "shop.public.cust_shard1"}, None)
    assert (out[1].key, out[1].value_schema.name) == (None, "shop.public.cust_all.Envelope")  # type: ignore[union-attr]
    assert out[2] is heartbeat


def test_a_routed_non_envelope_value_keeps_its_schema_and_its_key_schema_version() -> None:
    key_schema = struct([("serverName", string())], name="io.debezium.connector.common.ServerNameKey", version=1)
    heartbeat_schema = struct([("ts_ms", int64())], name="io.debezium.connector.common.Heartbeat", version=1)
    beat = ChangeRecord("__debezium-heartbeat.shop", {"serverName": "shop"}, key_schema, {"ts_ms": 5}, heartbeat_schema)
    chain = transform_chain({"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.topic.regex": "(.*)",
                             "transforms.r.topic.replacement": "all.$1"})
    (out,) = chain.apply([beat])
    assert out.value_schema is heartbeat_schema
    assert (out.key_schema.name, out.key_schema.version) == ("all.__debezium-heartbeat.shop.Key", 1)  # type: ignore[union-attr]


@pytest.mark.parametrize("mode, replacement, name", [
    ("avro", "my-prefix.cust-all", "my_prefix.cust_all"),
    ("avro_unicode", "_x.a-b", "_u005fx.a_u002db"),
    ("none", "my-prefix.cust-all", "my-prefix.cust-all"),
])
def test_schema_names_are_adjusted_and_the_topic_is_not(mode: str, replacement: str, name: str) -> None:
    (out,) = routed([change(1)], **{"topic.replacement": replacement, "schema.name.adjustment.mode": mode})
    assert out.topic == replacement
    assert (out.key_schema.name, out.value_schema.name) == (f"{name}.Key", f"{name}.Envelope")  # type: ignore[union-attr]
    assert out.value_schema.fields[1].schema.name == f"{name}.Value"  # type: ignore[union-attr]


def test_a_key_field_that_exists_already_stops() -> None:
    with pytest.raises(RecordError, match="has a field 'id' already"):
        routed([change(1)], **{"key.field.name": "id"})


@pytest.mark.parametrize("options, prop, words", [
    ({"key.field.name": " "}, "key.field.name", "is empty"),
    ({"key.field.regex": "(.*)"}, "key.field.replacement", "is required with key.field.regex"),
    ({"schema.name.adjustment.mode": "loud"}, "schema.name.adjustment.mode", "none, avro, avro_unicode"),
    ({"logical.table.cache.size": "-1"}, "logical.table.cache.size", "negative"),
])
def test_configuration_errors(options: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        routed([], **options)
    assert caught.value.property == f"transforms.r.{prop}"
    assert words in str(caught.value)


def test_topic_options_are_required() -> None:
    with pytest.raises(TransformConfigError) as caught:
        transform_chain({"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.topic.regex": "x"})
    assert caught.value.property == "transforms.r.topic.replacement"
