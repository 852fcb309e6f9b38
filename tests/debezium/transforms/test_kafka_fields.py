"""Kafka's field transforms (ReplaceField, InsertField, MaskField, ValueToKey, ExtractField) on the
records sparkcdc makes: configuration errors, tombstones, null values, records that are not row
changes (heartbeats, transaction records, messages), keyless rows and schemaless values.

Expected behaviour is Kafka 4.3's, as probed on its classes (see the differential tests in
tests/conformance/test_transforms_kafka_conformance.py for the same against Debezium's records).
"""

from __future__ import annotations

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.connect import ConnectSchema
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.serialization import JsonSerializer
from sparkcdc.debezium.transforms import RecordError, TransformConfigError

from .records import (
    AFTER,
    ENVELOPE,
    KEY,
    ROW,
    K,
    chain,
    change,
    heartbeat,
    keyless,
    message,
    run,
    schemaless,
    tombstone,
    transaction,
)

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "shop"}


def fields(schema: ConnectSchema | None) -> list[str]:
    assert schema is not None
    return [f.name for f in schema.fields]


def row_record(value: dict | None = AFTER) -> ChangeRecord:
    """A record whose value is a row (as after ExtractField)."""
    return ChangeRecord("shop.public.items", {"id": 1}, KEY, value, ROW)


def config_error(kind: str, **options: str) -> TransformConfigError:
    with pytest.raises(TransformConfigError) as caught:
        chain(kind, **options)
    return caught.value


def record_error(kind: str, record: ChangeRecord, **options: str) -> str:
    with pytest.raises(RecordError) as caught:
        run(kind, record, **options)
    assert caught.value.alias == "t"
    return str(caught.value)


# -- ReplaceField -----------------------------------------------------------------------------------

def test_replace_field_filters_and_renames_in_field_order() -> None:
    out = run("ReplaceField$Value", change(), exclude="source,ts_ms", renames="op:kind,after:row")
    assert out is not None and out.value_schema is not None
    assert fields(out.value_schema) == ["before", "row", "kind"]
    assert (out.value_schema.name, out.value_schema.version, out.value_schema.optional) == (ENVELOPE.name, 2, False)
    assert out.value == {"before": None, "row": AFTER, "kind": "c"}
    assert (out.topic, out.key, out.lsn, out.commit_lsn, out.ordinal) == ("shop.public.items", {"id": 1}, 7, 9, 2)


def test_replace_field_include_names_the_old_fields_and_exclude_wins() -> None:
    out = run("ReplaceField$Value", change(), include="op,after,source", exclude="source", renames="after:x")
    assert out is not None and out.value == {"x": AFTER, "op": "c"}


def test_replace_field_builds_one_schema_per_input_schema() -> None:
    replace = chain("ReplaceField$Value", exclude="source")
    first, second = replace.apply([change(), change("u")])
    assert first.value_schema is second.value_schema
    serializer = JsonSerializer()
    assert serializer.value(first) is not None and b'"op":"u"' in (serializer.value(second) or b"")


def test_replace_field_rename_onto_a_kept_field_fails_as_connects_schema_builder() -> None:
    assert "Cannot create field because of field name duplication op" in record_error("ReplaceField$Value", change(),
                                                                                        renames="ts_ms:op")


@pytest.mark.parametrize("renames", ["op", "op:a:b", "op:", "::"])
def test_replace_field_refuses_a_rename_that_is_no_pair(renames: str) -> None:
    error = config_error("ReplaceField$Value", renames=renames)
    assert error.property == "transforms.t.renames" and "Invalid rename mapping" in str(error)


def test_replace_field_accepts_an_empty_old_name_as_kafka_does() -> None:
    out = run("ReplaceField$Value", change(), renames=":q")
    assert out is not None and fields(out.value_schema) == fields(ENVELOPE)


def test_replace_field_reports_blacklist_and_whitelist_as_removed_and_reads_neither() -> None:
    given = {**BASE, "transforms": "t", "transforms.t.type": K + "ReplaceField$Value", "transforms.t.blacklist": "op",
             "transforms.t.whitelist": "op"}
    config = ConnectorConfig(given)
    assert any(w.startswith("transforms.t.blacklist: was removed in Kafka 4.0") for w in config.warnings)
    assert any(w.startswith("transforms.t.whitelist: was removed in Kafka 4.0") for w in config.warnings)
    out = list(config.transforms.apply([change()]))[0]
    assert fields(out.value_schema) == fields(ENVELOPE)
    with pytest.raises(TransformConfigError) as caught:
        ConnectorConfig(given, strict=True)
    assert caught.value.property in ("transforms.t.blacklist", "transforms.t.whitelist")


@pytest.mark.parametrize("make", [tombstone, lambda: row_record(None)], ids=["tombstone", "null value with a schema"])
def test_replace_insert_and_cast_pass_a_null_value_unchanged(make) -> None:
    record = make()
    assert run("ReplaceField$Value", record, exclude="id") is record
    assert run("InsertField$Value", record, topic_field="t") is record
    assert run("Cast$Value", record, spec="id:string") is record


@pytest.mark.parametrize("make", [heartbeat, transaction, message])
def test_replace_field_on_records_that_are_not_row_changes(make) -> None:
    record = make()
    out = run("ReplaceField$Value", record, exclude="ts_ms", renames="status:state,op:kind")
    assert out is not None
    expected = {("state" if k == "status" else "kind" if k == "op" else k): v for k, v in record.value.items() if k != "ts_ms"}
    assert out.value == expected


def test_replace_field_key_and_a_keyless_row() -> None:
    out = run("ReplaceField$Key", change(), renames="id:key_id")
    assert out is not None and out.key == {"key_id": 1} and fields(out.key_schema) == ["key_id"]
    assert out.key_schema is not None and out.key_schema.name == KEY.name
    record = keyless()
    assert run("ReplaceField$Key", record, renames="id:key_id") is record


def test_replace_field_schemaless_and_non_struct_values() -> None:
    out = run("ReplaceField$Value", schemaless({"a": 1, "b": 2, "c": 3}), exclude="b", renames="a:q")
    assert out is not None and out.value == {"q": 1, "c": 3} and out.value_schema is None
    assert "Only Map objects supported in absence of schema for [field replacement], found: java.lang.Long" in record_error(
        "ReplaceField$Value", schemaless(5), exclude="a")
    primitive = ChangeRecord("t", None, None, 5, ROW.field("id").schema)
    assert "Only Struct objects supported for [field replacement], found: java.lang.Integer" in record_error(
        "ReplaceField$Value", primitive, exclude="a")


# -- InsertField ------------------------------------------------------------------------------------

def test_insert_field_appends_topic_partition_timestamp_and_static_in_kafkas_order() -> None:
    record = change()
    out = run("InsertField$Value", record, static_field="origin!", static_value=" sparkcdc ", timestamp_field="ts?",
              topic_field="topic", partition_field="part")
    assert out is not None and out.value_schema is not None
    assert fields(out.value_schema)[-4:] == ["topic", "part", "ts", "origin"]
    inserted = {f.name: f.schema for f in out.value_schema.fields[-4:]}
    assert inserted["topic"].to_json() == {"type": "string", "optional": True}
    assert inserted["part"].to_json() == {"type": "int32", "optional": True}
    assert inserted["ts"].to_json() == {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp",
                                        "version": 1}
    assert inserted["origin"].to_json() == {"type": "string", "optional": False}
    assert {k: out.value[k] for k in ("topic", "part", "ts", "origin")} == {"topic": record.topic, "part": None, "ts": None,
                                                                             "origin": "sparkcdc"}
    assert (out.value_schema.name, out.value_schema.version) == (ENVELOPE.name, 2)


def test_insert_field_partition_is_the_one_a_transform_chose() -> None:
    record = change()
    record.partition = 4
    out = run("InsertField$Value", record, partition_field="p!")
    assert out is not None and out.value["p"] == 4 and out.partition == 4


def test_insert_field_required_field_that_stays_null_fails_as_jsonconverter_does() -> None:
    assert "null value for field that is required" in record_error("InsertField$Value", change(), timestamp_field="ts!")
    assert "null value for field that is required" in record_error("InsertField$Value", change(), partition_field="p!")


def test_insert_field_offset_exists_on_sink_records_only() -> None:
    given = {**BASE, "transforms": "t", "transforms.t.type": K + "InsertField$Value", "transforms.t.offset.field": "o"}
    assert any(w.startswith("transforms.t.offset.field: Kafka offsets exist on sink records only")
               for w in ConnectorConfig(given).warnings)
    assert "Only SinkRecord supported for [field insertion]" in record_error("InsertField$Value", heartbeat(), offset_field="o")
    record = tombstone()
    assert run("InsertField$Value", record, offset_field="o") is record


@pytest.mark.parametrize("options, prop, words", [
    ({}, "transforms.t.topic.field", "No field insertion configured"),
    ({"static_field": "s"}, "transforms.t.static.value", "No value specified for static field"),
    ({"topic_field": "!"}, "transforms.t.topic.field", "names no field"),
])
def test_insert_field_configuration_errors(options: dict[str, str], prop: str, words: str) -> None:
    error = config_error("InsertField$Value", **options)
    assert error.property == prop and words in str(error)


def test_insert_field_onto_an_existing_name_fails() -> None:
    assert "field name duplication op" in record_error("InsertField$Value", change(), topic_field="op")


def test_insert_field_key_of_heartbeats_and_transaction_records() -> None:
    for record in (heartbeat(), transaction(), message()):
        out = run("InsertField$Key", record, topic_field="t!")
        assert out is not None and out.key == {**record.key, "t": record.topic} and out.value is record.value


def test_insert_field_schemaless() -> None:
    out = run("InsertField$Value", schemaless({"a": 1}), topic_field="t", timestamp_field="ts", static_field="s",
              static_value="v")
    assert out is not None and out.value == {"a": 1, "t": "shop.public.items", "ts": None, "s": "v"}
    assert "Only Map objects supported" in record_error("InsertField$Value", schemaless([1]), topic_field="t")


# -- MaskField --------------------------------------------------------------------------------------

def test_mask_field_masks_each_type_with_its_empty_value() -> None:
    out = run("MaskField$Value", row_record({**AFTER, "name": None}), fields="id,name,qty,ratio,score,flag,born,nope")
    assert out is not None and out.value_schema is ROW
    assert out.value == {**AFTER, "id": 0, "name": None, "qty": 0, "ratio": 0.0, "score": 0.0, "flag": False, "born": 0}


@pytest.mark.parametrize("replacement, expected", [
    ("-1.5e1", {"qty": -15, "ratio": -15.0, "score": -15.0}),
    ("4.9", {"qty": 4, "ratio": 4.9, "score": 4.9}),
    ("99999999999", {"qty": -6145, "ratio": 99999998000.0, "score": 99999999999.0}),  # Java: 9.9999998E10
    ("1e50", {"qty": 0, "ratio": "Infinity", "score": 1e50}),
])
def test_mask_field_replacement_is_read_as_a_big_decimal_and_narrowed(replacement: str, expected: dict) -> None:
    out = run("MaskField$Value", row_record(), fields="qty,ratio,score", replacement=replacement)
    assert out is not None and {k: out.value[k] for k in expected} == expected


def test_mask_field_replacement_of_text_and_what_cannot_take_one() -> None:
    out = run("MaskField$Value", row_record(), fields="name", replacement="***")
    assert out is not None and out.value["name"] == "***"
    assert "Unable to convert abc (class java.lang.String) to a number" in record_error(
        "MaskField$Value", row_record(), fields="qty", replacement="abc")
    assert "Cannot mask value of type class java.lang.Boolean with custom replacement." in record_error(
        "MaskField$Value", row_record(), fields="flag", replacement="true")


def test_mask_field_decimal_needs_the_schemas_scale_and_bytes_cannot_be_masked() -> None:
    assert "Schema has scale 2, value has scale 0" in record_error("MaskField$Value", row_record(), fields="price")
    out = run("MaskField$Value", row_record(), fields="price", replacement="4.50")
    assert out is not None and out.value["price"] == "AcI="  # 450 unscaled
    assert "Cannot mask value of type: class java.nio.HeapByteBuffer" in record_error("MaskField$Value", row_record(),
                                                                                     fields="blob")
    assert "Cannot mask value of type: class org.apache.kafka.connect.data.Struct" in record_error(
        "MaskField$Value", change(), fields="after")


def test_mask_field_fails_on_null_values_as_kafka_does() -> None:
    assert "Only Map objects supported in absence of schema for [mask fields], found: null" in record_error(
        "MaskField$Value", tombstone(), fields="op")
    assert "Only Struct objects supported for [mask fields], found: null" in record_error(
        "MaskField$Value", row_record(None), fields="id")


def test_mask_field_configuration() -> None:
    assert config_error("MaskField$Value").property == "transforms.t.fields"
    error = config_error("MaskField$Value", fields="a", replacement="  ")
    assert error.property == "transforms.t.replacement" and "non-empty" in str(error)
    given = {**BASE, "transforms": "t", "transforms.t.type": K + "MaskField$Value", "transforms.t.fields": "a",
             "transforms.t.replace.null.with.default": "false"}
    assert any(w.startswith("transforms.t.replace.null.with.default: false") for w in ConnectorConfig(given).warnings)


def test_mask_field_key_and_schemaless() -> None:
    out = run("MaskField$Key", change(), fields="id")
    assert out is not None and out.key == {"id": 0} and out.key_schema is KEY
    out = run("MaskField$Value", schemaless({"a": 5, "b": "x", "c": None, "d": [1], "e": 1.5}), fields="a,b,c,d,e")
    assert out is not None and out.value == {"a": 0, "b": "", "c": None, "d": [], "e": 0.0}


# -- ValueToKey -------------------------------------------------------------------------------------

def test_value_to_key_makes_an_unnamed_struct_of_the_listed_fields_in_order() -> None:
    out = run("ValueToKey", row_record(), fields="qty,id,qty")
    assert out is not None and out.key == {"qty": 7, "id": 1}
    assert out.key_schema is not None and out.key_schema.to_json() == {
        "type": "struct", "fields": [{"type": "int16", "optional": True, "default": 3, "field": "qty"},
                                     {"type": "int32", "optional": False, "field": "id"}], "optional": False}
    assert out.value is AFTER


def test_value_to_key_failures() -> None:
    assert "Field does not exist: nope" in record_error("ValueToKey", row_record(), fields="id,nope")
    assert "Only Map objects supported in absence of schema for [copying fields from value to key], found: null" in \
        record_error("ValueToKey", tombstone(), fields="id")
    assert "Only Struct objects supported for [copying fields from value to key], found: null" in \
        record_error("ValueToKey", row_record(None), fields="id")
    assert config_error("ValueToKey").property == "transforms.t.fields"


def test_value_to_key_schemaless() -> None:
    out = run("ValueToKey", schemaless({"a": 1}), fields="b,a")
    assert out is not None and out.key == {"b": None, "a": 1} and out.key_schema is None


# -- ExtractField -----------------------------------------------------------------------------------

def test_extract_field_v1_and_a_delete() -> None:
    out = run("ExtractField$Value", change(), field="after")
    assert out is not None and out.value is AFTER and out.value_schema is ROW
    deleted = run("ExtractField$Value", change("d", after=None, before=AFTER), field="after")
    assert deleted is not None and deleted.value is None and deleted.value_schema is ROW
    assert JsonSerializer().value(deleted) == b'{"schema":' + JsonSerializer().value(out).split(b'"schema":')[1].split(
        b',"payload"')[0] + b',"payload":null}'


def test_extract_field_v2_through_a_null_writes_what_jsonconverter_writes() -> None:
    deleted = change("d", after=None, before=AFTER)
    out = run("ExtractField$Value", deleted, field="after.qty", field_syntax_version="V2")
    assert out is not None and out.value == 3  # the field's default, as JsonConverter writes a null
    assert run("ExtractField$Value", deleted, field="after.name", field_syntax_version="v2").value is None
    assert "null value for field that is required" in record_error("ExtractField$Value", deleted, field="after.id",
                                                                   field_syntax_version="V2")
    out = run("ExtractField$Value", change(), field="after.name", field_syntax_version="V2")
    assert out is not None and out.value == "alice" and out.value_schema is ROW.field("name").schema


def test_extract_field_unknown_fields_and_paths_through_non_structs() -> None:
    assert "Unknown field: after.name" in record_error("ExtractField$Value", change(), field="after.name")  # V1: one name
    assert "Unknown field: nope" in record_error("ExtractField$Value", change(), field="nope")
    assert "Cannot look up fields on non-struct type" in record_error("ExtractField$Value", change(), field="op.x",
                                                                      field_syntax_version="V2")
    assert "Only Struct objects supported for [field extraction], found: java.lang.Integer" in record_error(
        "ExtractField$Value", ChangeRecord("t", None, None, 5, ROW.field("id").schema), field="x")


def test_extract_field_key_tombstones_and_keyless_rows() -> None:
    out = run("ExtractField$Key", tombstone(), field="id")
    assert out is not None and out.key == 1 and out.value is None and out.key_schema is KEY.field("id").schema
    record = keyless()
    assert run("ExtractField$Key", record, field="id") is record
    record = tombstone()
    assert run("ExtractField$Value", record, field="after") is record


def test_extract_field_schemaless() -> None:
    out = run("ExtractField$Value", schemaless({"a": {"b.c": 3}}), field="a.`b.c`", field_syntax_version="V2")
    assert out is not None and out.value == 3 and out.value_schema is None
    assert run("ExtractField$Value", schemaless({"a": 1}), field="q").value is None
    assert "Only Map objects supported in absence of schema for [field extraction]" in record_error(
        "ExtractField$Value", schemaless(3), field="q")


def test_extract_field_configuration() -> None:
    assert config_error("ExtractField$Value").property == "transforms.t.field"
    assert config_error("ExtractField$Value", field="a", field_syntax_version="V3").property == "transforms.t.field.syntax.version"
    error = config_error("ExtractField$Value", field="`a", field_syntax_version="V2")
    assert error.property == "transforms.t.field" and "Incomplete backtick pair" in str(error)


def test_transforms_keep_the_records_position_and_headers() -> None:
    record = change()
    for kind, options in (("ReplaceField$Value", {"exclude": "op"}), ("InsertField$Value", {"topic_field": "t"}),
                          ("MaskField$Value", {"fields": "op"}), ("ValueToKey", {"fields": "op"}),
                          ("ExtractField$Value", {"field": "after"}), ("Cast$Value", {"spec": "ts_ms:string"})):
        out = run(kind, record, **options)
        assert out is not None and (out.lsn, out.commit_lsn, out.ordinal, out.headers, out.op) == (7, 9, 2, record.headers, "c")
