"""Kafka's Cast on JSON-ready values: every conversion Java makes (wrapping, saturation, Java's
``toString`` and parsing, decimals and Connect's dates), the schemas it writes, its configuration
errors. The expected values are what Kafka 4.3's Cast and JsonConverter printed for the same values.
"""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.connect import ConnectSchema, boolean, bytes_, float32, float64, int8, int32, int64, string, struct
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.transforms import RecordError, TransformConfigError
from sparkcdc.debezium.transforms.cast import CastError, cast_value
from sparkcdc.debezium.types.numeric import decimal_schema, encode_unscaled

from .records import AFTER, KEY, ROW, chain, change, run, schemaless, tombstone

DATE = int32(name="org.apache.kafka.connect.data.Date", version=1)
TIME = int32(name="org.apache.kafka.connect.data.Time", version=1)
TIMESTAMP = int64(name="org.apache.kafka.connect.data.Timestamp", version=1)
MICRO = int64(name="io.debezium.time.MicroTimestamp", version=1)


def decimal(text: str, _scale: int) -> str:
    """The Decimal payload of ``text`` (whose digits after the point are the scale)."""
    return encode_unscaled(int(text.replace(".", "").replace("-", "")) * (-1 if text.startswith("-") else 1))


VECTORS: list[tuple[ConnectSchema, Any, str, Any]] = [
    (int32(), 300, "int8", 44), (int32(), 300, "int16", 300), (int32(), 300, "float", 300.0), (int32(), 300, "boolean", True),
    (int32(), 300, "string", "300"), (int32(), -70000, "int8", -112), (int32(), -70000, "int16", -4464),
    (int64(), 2**40 + 5, "int8", 5), (int64(), 2**40 + 5, "int32", 5), (int64(), 2**40 + 5, "float", 1.09951163e12),
    (int64(), 2**40 + 5, "double", 1.099511627781e12), (int64(), 2**32, "boolean", True), (int64(), 123456789, "float", 1.23456792e8),
    (float32(), 3.7, "int8", 3), (float32(), -3.7, "int64", -3), (float32(), 3.7, "double", 3.700000047683716),
    (float32(), 3.7, "string", "3.7"), (float32(), 3.7, "boolean", True), (float32(), 1e10, "int8", -1), (float32(), 1e10, "int16", -1),
    (float32(), 1e10, "int32", 2147483647), (float32(), 1e10, "int64", 10000000000), (float32(), 1e10, "string", "1.0E10"),
    (float32(), "NaN", "int32", 0), (float32(), "NaN", "float", "NaN"), (float32(), "NaN", "boolean", False),
    (float32(), "NaN", "string", "NaN"), (float64(), 0.1, "boolean", False), (float64(), 0.9, "boolean", False),
    (float64(), 0.1, "float", 0.1), (float64(), 1 / 3, "float", 0.33333334), (float64(), 1e300, "float", "Infinity"),
    (float64(), "Infinity", "int8", -1), (float64(), "Infinity", "int64", 9223372036854775807), (float64(), 1e20, "int32", 2147483647),
    (float64(), 1e7, "string", "1.0E7"), (float64(), 123456789.125, "string", "1.23456789125E8"), (float64(), -0.0, "string", "-0.0"),
    (float64(), -1e20, "int8", 0), (float64(), 200.7, "int8", -56), (boolean(), True, "int8", 1), (boolean(), True, "float", 1.0),
    (boolean(), False, "string", "false"), (string(), "42", "int8", 42), (string(), "42", "boolean", False),
    (string(), "TRUE", "boolean", True), (string(), " true", "boolean", False), (string(), "4.5", "double", 4.5),
    (string(), " 7 ", "float", 7.0), (string(), "1.5f", "double", 1.5), (string(), "٣", "int32", 3), (string(), "-0", "double", -0.0),
    (string(), "127", "int8", 127), (string(), "x", "string", "x"),
    # Decimal (scale 2 and 8): BigDecimal's xValue() and toString.
    (decimal_schema(2), decimal("12.34", 2), "int8", 12), (decimal_schema(2), decimal("12.34", 2), "float", 12.34),
    (decimal_schema(2), decimal("12.34", 2), "string", "12.34"), (decimal_schema(2), decimal("-0.50", 2), "string", "-0.50"),
    (decimal_schema(2), decimal("0.50", 2), "boolean", False), (decimal_schema(2), decimal("-300.99", 2), "int8", -44),
    (decimal_schema(8), decimal("0.00000001", 8), "string", "1E-8"), (decimal_schema(8), decimal("-0.00000012", 8), "string", "-1.2E-7"),
    (decimal_schema(8), decimal("0.00000001", 8), "double", 1e-8),
    (decimal_schema(2), decimal("123456789012345678901234.56", 2), "int16", -20494),
    (decimal_schema(2), decimal("123456789012345678901234.56", 2), "int32", 1821814770),
    (decimal_schema(2), decimal("123456789012345678901234.56", 2), "int64", -7269072992350064654),
    (decimal_schema(2), decimal("123456789012345678901234.56", 2), "float", 1.2345679e23),
    (decimal_schema(2), decimal("123456789012345678901234.56", 2), "double", 1.2345678901234569e23),
    (decimal_schema(2), decimal("2147483648.50", 2), "int32", -2147483648),
    # Connect's dates: the number they stand for, and Connect's own patterns (picked by the instant).
    (DATE, 18263, "int8", 87), (DATE, 18263, "double", 18263.0), (DATE, 18263, "string", "2020-01-02"),
    (DATE, -171762, "string", "00:00:00.000Z"), (TIME, 3723004, "int8", -4), (TIME, 3723004, "string", "01:02:03.004Z"),
    (TIMESTAMP, 1577934245123, "int32", 1681247491), (TIMESTAMP, 1577934245123, "float", 1.57793426e12),
    (TIMESTAMP, 1577934245123, "string", "2020-01-02T03:04:05.123Z"), (TIMESTAMP, 1623024000000, "string", "2021-06-07"),
    (MICRO, 1577934245123456, "int8", -128), (MICRO, 1577934245123456, "int32", 1915278720),
    (MICRO, 1577934245123456, "string", "1577934245123456"), (bytes_(), "AQL/", "string", "AQL/"),
]


@pytest.mark.parametrize("schema, payload, target, expected", VECTORS)
def test_cast_value_is_kafkas(schema: ConnectSchema, payload: Any, target: str, expected: Any) -> None:
    result = cast_value(payload, schema, target)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize("schema, payload, target, words", [
    (string(), "4.5", "int32", "Value (4.5) was out of range for requested data type"),
    (string(), "128", "int8", "Value (128) was out of range"), (string(), "  7", "int64", "Value (  7) was out of range"),
    (string(), "abc", "double", "Value (abc) was out of range"), (string(), "infinity", "float", "out of range"),
    (bytes_(), "AQL/", "int32", "Unexpected type in Cast transformation"),
    (struct([("a", int32())]), {"a": 1}, "string", "does not support casting from STRUCT"),
])
def test_casts_java_refuses(schema: ConnectSchema, payload: Any, target: str, words: str) -> None:
    with pytest.raises(CastError, match=words.replace("(", r"\(").replace(")", r"\)")):
        cast_value(payload, schema, target)


def test_field_casts_drop_the_logical_name_keep_optional_and_cast_the_default() -> None:
    row = struct([("id", int32()), ("qty", ROW.field("qty").schema), ("born", ROW.field("born").schema),
                  ("price", decimal_schema(2, 10).as_optional())], optional=True, name="r", version=3, doc="d")
    record = ChangeRecord("t", None, None, {"id": 1, "qty": None, "born": 18263, "price": decimal("12.34", 2)}, row)
    out = run("Cast$Value", record, spec="qty:string,born:string,price:float64,nope:int8")
    assert out is not None and out.value_schema is not None
    assert out.value_schema.to_json() == {"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "default": "3", "field": "qty"},
        {"type": "string", "optional": True, "field": "born"},
        {"type": "double", "optional": True, "field": "price"},
    ], "optional": True, "name": "r", "version": 3, "doc": "d"}
    assert out.value == {"id": 1, "qty": "3", "born": "18263", "price": 12.34}  # a null field: its default, cast


def test_whole_value_casts_keep_the_schemas_name_and_a_connect_logical_one_fails() -> None:
    schema = int32(optional=True, name="io.debezium.time.Date", version=1).with_default(3)
    out = run("Cast$Value", ChangeRecord("t", None, None, 5, schema), spec="string")
    assert out is not None and out.value == "5"
    assert out.value_schema is not None and out.value_schema.to_json() == {
        "type": "string", "optional": True, "name": "io.debezium.time.Date", "version": 1, "default": "3"}
    with pytest.raises(RecordError, match="Invalid type for Decimal, expected BigDecimal but was class java.lang.String"):
        run("Cast$Value", ChangeRecord("t", None, None, decimal("12.34", 2), decimal_schema(2)), spec="string")
    with pytest.raises(RecordError, match="Invalid type for Date"):
        run("Cast$Value", ChangeRecord("t", None, None, 18263, DATE), spec="int32")
    with pytest.raises(RecordError, match="does not support casting from STRUCT"):
        run("Cast$Value", change(), spec="string")


def test_a_struct_field_cast_fails_on_a_value_and_passes_a_null() -> None:
    with pytest.raises(RecordError, match="does not support casting from STRUCT"):
        run("Cast$Value", change(), spec="after:string")
    out = run("Cast$Value", change(), spec="before:string")
    assert out is not None and out.value["before"] is None and out.value_schema.field("before").schema.type == "string"


def test_cast_key_values_and_schema_objects_shared_per_schema() -> None:
    cast = chain("Cast$Key", spec="id:string")
    first, second = cast.apply([change(), tombstone()])
    assert first.key == {"id": "1"} and second.key == {"id": "1"} and first.key_schema is second.key_schema
    assert first.key_schema is not None and first.key_schema.name == KEY.name
    out = run("Cast$Value", ChangeRecord("t", None, None, dict(AFTER), ROW), spec="ratio:float64,score:float32,flag:int8,id:float32")
    assert out is not None and (out.value["ratio"], out.value["score"], out.value["flag"], out.value["id"]) == (
        3.700000047683716, 0.1, 1, 1.0)


@pytest.mark.parametrize("spec, words", [
    ("a:foo", "Invalid type found in casting spec: foo"), ("foo", "Invalid type found in casting spec: foo"),
    ("bytes", "does not support casting to BYTES"), ("a:struct", "does not support casting to STRUCT"),
    ("a:int8,int8", "may only specify a single cast"), ("a:b:c", "Invalid rename mapping: a:b:c"),
    ("a:", "Invalid type found in casting spec: a"),
])
def test_cast_spec_errors_name_the_property(spec: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        chain("Cast$Value", spec=spec)
    assert caught.value.property == "transforms.t.spec" and words in str(caught.value)


def test_cast_spec_reading() -> None:
    with pytest.raises(TransformConfigError) as caught:
        chain("Cast$Value")
    assert caught.value.property == "transforms.t.spec"
    record = ChangeRecord("t", None, None, {"a": 5}, struct([("a", int32())]))
    assert run("Cast$Value", record, spec=" a : int8 , a:STRING ").value == {"a": "5"}  # the last cast of a field wins
    assert run("Cast$Value", record, spec="A:int8,:int8").value == {"a": 5}  # names are exact; an empty one is a name
    assert run("Cast$Value", ChangeRecord("t", None, None, 5, int8()), spec="Float64").value == 5.0


def test_cast_schemaless_values_are_read_as_jsonconverter_reads_them() -> None:
    assert run("Cast$Value", schemaless({"a": 3, "b": "x", "c": None}), spec="a:string,c:int8").value == {"a": "3", "b": "x",
                                                                                                         "c": None}
    assert run("Cast$Value", schemaless(2**40 + 5), spec="int32").value == 5  # a long
    assert run("Cast$Value", schemaless(0.1), spec="string").value == "0.1"  # a double
    with pytest.raises(RecordError, match="Only Map objects supported in absence of schema"):
        run("Cast$Value", schemaless([1]), spec="a:string")
