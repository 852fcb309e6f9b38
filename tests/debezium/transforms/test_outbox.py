"""Debezium's outbox EventRouter on records shaped as sparkcdc's connector makes them; each expected
record is what Debezium 3.6.3 made of the same row (tests/conformance/test_transforms_routing_conformance.py
checks them against it on a real outbox table)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sparkcdc.debezium.connect import bytes_, int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord, Header
from sparkcdc.debezium.schemas import envelope_schema
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.transforms import TransformConfigError, transform_chain
from sparkcdc.debezium.transforms.base import RecordError

ROUTER = "io.debezium.transforms.outbox.EventRouter"
UUID = string(name="io.debezium.data.Uuid", version=1)
JSON = string(optional=True, name="io.debezium.data.Json", version=1)
ROW = struct([("id", UUID), ("aggregatetype", string()), ("aggregateid", string(optional=True)), ("type", string()),
              ("payload", JSON), ("body", string(optional=True)), ("ver", int32(optional=True)), ("big", int64(optional=True)),
              ("bin", bytes_(optional=True))], optional=True, name="shop.public.outbox.Value")
ENVELOPE = envelope_schema(ROW, "shop.public.outbox.Envelope")
KEY = struct([("id", UUID)], name="shop.public.outbox.Key")
CONTEXT = (Header("__debezium.context.connectorName", "postgresql", string(), constant=True),)
ID = "11111111-1111-1111-1111-111111111111"


def row(**changes: Any) -> dict[str, Any]:
    base = {"id": ID, "aggregatetype": "Order", "aggregateid": "o-1", "type": "OrderCreated", "payload": '{"id": 1}',
            "body": '{"b": [1, 2]}', "ver": 3, "big": 4, "bin": "AQI="}
    return {**base, **changes}


def change(op: str = "c", after: dict[str, Any] | None = None, before: dict[str, Any] | None = None) -> ChangeRecord:
    after = row() if after is None and op in "cru" else after
    value = {"before": before, "after": after, "source": {"table": "outbox"}, "transaction": None, "op": op, "ts_ms": 1,
             "ts_us": 1, "ts_ns": 1}
    return ChangeRecord("shop.public.outbox", {"id": ID}, KEY, value, ENVELOPE, CONTEXT, op, "public", "outbox", 70, 90, 2)


def router(**options: str) -> Any:
    return transform_chain({"transforms": "outbox", "transforms.outbox.type": ROUTER,
                            **{f"transforms.outbox.{name}": value for name, value in options.items()}})


def one(records: list[ChangeRecord], **options: str) -> ChangeRecord | None:
    out = list(router(**options).apply(records))
    return out[0] if out else None


def as_json(record: ChangeRecord) -> dict[str, Any]:
    import json
    key, value, headers = JsonSerializer().record(record)
    return {"topic": record.topic, "key": key and json.loads(key), "value": value and json.loads(value),
            "headers": [(name, raw and json.loads(raw)) for name, raw in headers], "partition": record.partition}


def test_an_insert_becomes_an_event_on_the_aggregate_topic_with_the_id_header() -> None:
    out = one([change("c")])
    assert out is not None
    got = as_json(out)
    assert got["topic"] == "outbox.event.Order"
    assert got["key"] == {"schema": {"type": "string", "optional": True}, "payload": "o-1"}
    assert got["value"] == {"schema": JSON.to_json(), "payload": '{"id": 1}'}
    assert got["headers"] == [("__debezium.context.connectorName", {"schema": {"type": "string", "optional": False},
                                                                     "payload": "postgresql"}),
                              ("id", {"schema": UUID.to_json(), "payload": ID})]
    assert (out.lsn, out.commit_lsn, out.ordinal, out.partition) == (70, 90, 2, None)


def test_a_snapshot_row_is_routed_as_an_insert() -> None:
    assert one([change("r")]).topic == "outbox.event.Order"  # type: ignore[union-attr]


def test_deletes_tombstones_are_dropped_and_other_records_pass() -> None:
    tombstone = ChangeRecord("shop.public.outbox", {"id": ID}, KEY, None, None, CONTEXT)
    heartbeat = ChangeRecord("__debezium-heartbeat.shop", {"serverName": "shop"}, None, {"ts_ms": 5},
                             struct([("ts_ms", int64())], name="io.debezium.connector.common.Heartbeat", version=1))
    out = list(router().apply([change("d", after=None, before=row()), tombstone, heartbeat]))
    assert out == [heartbeat]


@pytest.mark.parametrize("behavior, level", [("warn", logging.WARNING), ("error", logging.ERROR)])
def test_an_update_is_dropped_and_logged(behavior: str, level: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert one([change("u")], **{"table.op.invalid.behavior": behavior}) is None
    assert [r.levelno for r in caplog.records if "UPDATE of the outbox table public.outbox" in r.getMessage()] == [level]


def test_an_update_stops_the_run_when_fatal_and_a_truncate_always() -> None:
    with pytest.raises(RecordError, match="UPDATE of the outbox table public.outbox"):
        one([change("u")], **{"table.op.invalid.behavior": "fatal"})
    with pytest.raises(RecordError, match="no row to route"):
        one([change("t", after=None)])


def test_placements_add_headers_an_envelope_and_a_partition() -> None:
    out = one([change("c")], **{"table.fields.additional.placement": "type:HEADER:eventType,body:envelope,ver:Envelope:v,ver:partition:x",
                                "table.field.event.schema.version": "ver"})
    got = as_json(out)  # type: ignore[arg-type]
    assert [name for name, _ in got["headers"]][1:] == ["id", "eventType"]
    assert got["headers"][2][1] == {"schema": {"type": "string", "optional": False}, "payload": "OrderCreated"}
    assert got["value"]["schema"] == {"type": "struct", "fields": [
        {**JSON.to_json(), "field": "payload"}, {"type": "string", "optional": True, "field": "body"},
        {"type": "int32", "optional": True, "field": "v"}], "optional": False, "name": "shop.public.outbox.Order.Value", "version": 3}
    assert got["value"]["payload"] == {"payload": '{"id": 1}', "body": '{"b": [1, 2]}', "v": 3}
    assert got["partition"] == 3


def test_the_envelope_keeps_the_name_its_first_event_gave_it_and_a_null_version_is_no_version() -> None:
    records = [change("c"), change("c", after=row(aggregatetype="Customer")), change("c", after=row(ver=None))]
    out = list(router(**{"table.fields.additional.placement": "type:envelope",
                         "table.field.event.schema.version": "ver"}).apply(records))
    assert [(r.topic, r.value_schema.name, r.value_schema.version) for r in out] == [  # type: ignore[union-attr]
        ("outbox.event.Order", "shop.public.outbox.Order.Value", 3),
        ("outbox.event.Customer", "shop.public.outbox.Order.Value", 3),
        ("outbox.event.Order", "shop.public.outbox.Order.Value", None)]


def test_columns_and_routing_options() -> None:
    out = one([change("c")], **{"table.field.event.key": "ver", "table.field.event.id": "type", "table.field.event.payload": "bin",
                                "route.by.field": "type", "route.topic.regex": r"Order(?<what>.*)",
                                "route.topic.replacement": "events.${what}.$1"})
    got = as_json(out)  # type: ignore[arg-type]
    assert got["topic"] == "events.Created.Created"
    assert got["key"] == {"schema": {"type": "int32", "optional": True}, "payload": 3}
    assert got["value"] == {"schema": {"type": "bytes", "optional": True}, "payload": "AQI="}
    assert got["headers"][-1] == ("id", {"schema": {"type": "string", "optional": False}, "payload": "OrderCreated"})
    # a routed value the regex does not match whole is the topic itself
    assert one([change("c")], **{"route.topic.regex": "Ord"}).topic == "Order"  # type: ignore[union-attr]


@pytest.mark.parametrize("options, words", [
    ({"table.field.event.key": "nosuch"}, "table.field.event.key: the outbox table has no column 'nosuch'"),
    ({"table.field.event.payload": "nosuch"}, "table.field.event.payload: the outbox table has no column 'nosuch'"),
    ({"table.fields.additional.placement": "nosuch:header"}, "has no column 'nosuch'"),
    ({"route.by.field": "ver"}, "route.by.field: column 'ver' is int32, not a string"),
    ({"table.fields.additional.placement": "big:partition"}, "is int64, not int32"),
    ({"table.fields.additional.placement": "type:envelope", "table.field.event.schema.version": "big"}, "is int64, not int32"),
])
def test_what_stops_debezium_on_every_event_stops_the_run_naming_the_option(options: dict[str, str], words: str) -> None:
    with pytest.raises(RecordError, match=words):
        one([change("c")], **options)


def test_a_missing_additional_column_is_skipped_when_told_and_a_null_route_stops() -> None:
    out = one([change("c")], **{"table.fields.additional.placement": "nosuch:header", "table.field.additional.missing": "ignore"})
    assert [h.name for h in out.headers] == ["__debezium.context.connectorName", "id"]  # type: ignore[union-attr]
    with pytest.raises(RecordError, match="route.by.field: column 'aggregatetype' is null"):
        one([change("c", after=row(aggregatetype=None))])


@pytest.mark.parametrize("payload, tombstone", [(None, True), ("", True), ("{}", False)])
def test_an_empty_payload_is_a_tombstone_when_asked(payload: str | None, tombstone: bool) -> None:
    out = one([change("c", after=row(body=payload))], **{"route.tombstone.on.empty.payload": "true",
                                                          "table.field.event.payload": "body"})
    assert (out.value is None and out.value_schema is None) == tombstone  # type: ignore[union-attr]
    assert out.key == "o-1" and out.headers[-1].name == "id"  # type: ignore[union-attr]


def test_expanded_payload_is_a_struct_and_its_schema_is_one_object_per_shape() -> None:
    records = [change("c", after=row(payload='{"id": 1, "lines": [{"sku": "a", "qty": 2}], "total": 9.5, "note": null}')),
               change("c", after=row(payload='{"id": 2, "lines": [{"sku": "b", "qty": 1}], "total": 1.5, "note": null}'))]
    out = list(router(**{"table.expand.json.payload": "true"}).apply(records))
    assert out[0].value_schema is out[1].value_schema
    assert as_json(out[0])["value"] == {"schema": {"type": "struct", "fields": [
        {"type": "int32", "optional": True, "field": "id"},
        {"type": "array", "items": {"type": "struct", "fields": [{"type": "string", "optional": True, "field": "sku"},
                                                                 {"type": "int32", "optional": True, "field": "qty"}],
                                    "optional": True, "name": "payload.lines"}, "optional": True, "field": "lines"},
        {"type": "double", "optional": True, "field": "total"}], "optional": True, "name": "payload"},
        "payload": {"id": 1, "lines": [{"sku": "a", "qty": 2}], "total": 9.5}}


def test_expansion_keeps_text_it_cannot_read_and_stops_where_debezium_s_converter_would() -> None:
    kept = one([change("c", after=row(payload="not json"))], **{"table.expand.json.payload": "true"})
    assert kept.value == "not json" and kept.value_schema is JSON  # type: ignore[union-attr]
    with pytest.raises(RecordError, match="table.expand.json.payload: the payload is a JSON array"):
        one([change("c", after=row(payload="[1, 2]"))], **{"table.expand.json.payload": "true"})
    empty = one([change("c", after=row(payload="[]"))], **{"table.expand.json.payload": "true"})
    assert as_json(empty)["value"] == {"schema": None, "payload": "[]"}  # type: ignore[arg-type]


@pytest.mark.parametrize("options, prop, words", [
    ({"tracing.operation.name": "x"}, "tracing.operation.name", "OpenTelemetry"),
    ({"table.field.event.timestamp": "ts"}, "table.field.event.timestamp", "timestamp"),
    ({"table.fields.additional.placement": "type:body"}, "table.fields.additional.placement", "is not one of header"),
    ({"table.fields.additional.placement": "type"}, "table.fields.additional.placement", "column:placement"),
    ({"table.fields.additional.placement": "payload:envelope"}, "table.fields.additional.placement", "two fields named 'payload'"),
    ({"table.op.invalid.behavior": "loud"}, "table.op.invalid.behavior", "warn, error, fatal"),
    ({"table.json.payload.null.behavior": "keep"}, "table.json.payload.null.behavior", "ignore, optional_bytes"),
    ({"route.topic.regex": "("}, "route.topic.regex", "not a valid regular expression"),
])
def test_configuration_errors(options: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        router(**options)
    assert caught.value.property == f"transforms.outbox.{prop}"
    assert words in str(caught.value)


def test_the_event_type_column_is_accepted_with_a_warning() -> None:
    warnings: list[str] = []
    transform_chain({"transforms": "o", "transforms.o.type": ROUTER, "transforms.o.table.field.event.type": "kind"}, warnings=warnings)
    assert any(w.startswith("transforms.o.table.field.event.type: Debezium 3.6's EventRouter puts the event type in no record")
               for w in warnings)


def test_the_envelope_is_kept_per_version_and_a_payload_that_does_not_fit_it_stops() -> None:
    options = {"table.expand.json.payload": "true", "table.field.event.schema.version": "ver",
               "table.fields.additional.placement": "body:envelope"}
    a1, a2 = change("c", after=row(payload='{"a": 1}')), change("c", after=row(payload='{"a": 2}', aggregatetype="Other"))
    null_payload = change("c", after=row(payload=None, aggregatetype="Other"))
    out = list(router(**options).apply([a1, a2, null_payload]))
    assert out[0].value_schema is out[1].value_schema is out[2].value_schema  # one per version, named by its first event
    assert out[1].value_schema.name == "shop.public.outbox.Order.Value"  # type: ignore[union-attr]
    with pytest.raises(RecordError, match="the envelope of version 3 was made for another payload schema"):
        list(router(**options).apply([a1, change("c", after=row(payload='{"b": 1}'))]))
    # without a version option, one envelope per payload schema
    out = list(router(**{"table.expand.json.payload": "true", "table.fields.additional.placement": "body:envelope"}).apply(
        [a1, change("c", after=row(payload='{"b": 1}', aggregatetype="Other"))]))
    assert [r.value_schema.name for r in out] == ["shop.public.outbox.Order.Value", "shop.public.outbox.Other.Value"]  # type: ignore[union-attr]


def test_an_empty_bytea_payload_is_no_tombstone() -> None:
    out = one([change("c", after=row(bin=""))], **{"route.tombstone.on.empty.payload": "true", "table.field.event.payload": "bin"})
    assert out.value == "" and out.value_schema is not None  # type: ignore[union-attr]


def test_the_removed_payload_id_option_is_reported_and_refused_when_strict() -> None:
    given = {"transforms": "o", "transforms.o.type": ROUTER, "transforms.o.table.field.event.payload.id": "aggregateid"}
    warnings: list[str] = []
    transform_chain(given, warnings=warnings)
    assert any(w.startswith("transforms.o.table.field.event.payload.id: Debezium 3.6 no longer reads it") for w in warnings)
    with pytest.raises(TransformConfigError):
        transform_chain(given, strict=True)
