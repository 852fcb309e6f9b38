"""Column defaults: what Debezium 3.6.3 exports as the schema ``default`` for a ``pg_get_expr`` text.

Every expected value here was observed with the real connector (the expressions are what
PostgreSQL 15's ``pg_get_expr`` prints for the DDL in ``test_scalar_types_conformance.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.connect import NO_DEFAULT
from sparkcdc.debezium.defaults import DEFAULT_LITERAL, debezium_type_name, default_value
from sparkcdc.debezium.source_types import source_type_parameters
from sparkcdc.debezium.types import ColumnType, MappingOptions, ValueMapping, map_type


def column(name: str, modifier: int = -1, declared: str | None = None, typtype: str = "b",
           labels: tuple[str, ...] = ()) -> ColumnType:  # fmt: skip
    return ColumnType(oid=0, name=name, namespace="pg_catalog", modifier=modifier, declared_name=declared or name,
                      typtype=typtype, enum_labels=labels)  # fmt: skip


def numeric(precision: int, scale: int) -> ColumnType:
    return column("numeric", ((precision << 16) | (scale & 0x7FF)) + 4)


def default(expression: str | None, col: ColumnType, **options: Any) -> Any:
    mapping = map_type(col, MappingOptions(**options))
    assert mapping is not None
    return default_value(expression, mapping, col)


ENUM = column("mood", typtype="e", labels=("V1", "V2", "it's"))


@pytest.mark.parametrize(
    ("expression", "col", "expected"),
    [
        # integers: literals, casts, sequences (the type's placeholder), expressions (none)
        ("42", column("int4"), 42),
        ("'-5'::integer", column("int4"), -5),
        ("'9000000000'::bigint", column("int8"), 9000000000),
        ("'-32768'::smallint", column("int2"), -32768),
        ("'2147483648'::bigint", column("int4"), NO_DEFAULT),  # Integer.parseInt overflows
        ("nextval('t_pk_seq'::regclass)", column("int4"), 0),
        ("(1 + 1)", column("int4"), NO_DEFAULT),
        ("length('abc'::text)", column("int4"), 0),
        ("NULL::integer", column("int4"), NO_DEFAULT),
        # booleans: Boolean.parseBoolean of the literal, so any other expression is false
        ("true", column("bool"), True),
        ("false", column("bool"), False),
        ("(1 = 1)", column("bool"), False),
        ("(random() > (0.5)::double precision)", column("bool"), False),
        # text: the first literal, '' unescaped; no quote at all: the whole text
        ("'abc'::text", column("text"), "abc"),
        ("'it''s'::text", column("text"), "it's"),
        ("'a''''b'::text", column("text"), "a''b"),
        ("'''quoted'''::text", column("text"), "'quoted'"),
        ("'x::y'::text", column("text"), "x::y"),
        ("''::text", column("text"), ""),
        ("('a'::text || 'b'::text)", column("text"), "a"),
        ("CURRENT_USER", column("text"), "CURRENT_USER"),
        ("lower('ABC'::text)", column("text"), ""),
        ("(now())::text", column("text"), ""),
        ("'x'::character varying", column("text"), "x"),
        ("'ab'::bpchar", column("bpchar", 8), "ab"),  # not blank-padded
        ("'c'::text COLLATE \"C\"", column("text"), "c"),
        # json/xml/uuid
        ("'{}'::jsonb", column("jsonb"), "{}"),
        ("jsonb_build_object('a', 1)", column("jsonb"), "{}"),
        ("'{\"a\": \"it''s\"}'::json", column("json"), '{"a": "it\'s"}'),
        ("'<a/>'::xml", column("xml"), "<a/>"),
        ("'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid", column("uuid"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("gen_random_uuid()", column("uuid"), "00000000-0000-0000-0000-000000000000"),
        # floats: Java's parse and print
        ("1.5", column("float4"), 1.5),
        ("'16777217'::real", column("float4"), 16777216.0),
        ("'1e-45'::real", column("float4"), 1.4e-45),
        ("'NaN'::double precision", column("float8"), "NaN"),
        ("'-Infinity'::double precision", column("float8"), "-Infinity"),
        ("'1e+300'::double precision", column("float8"), 1e300),
        ("random()", column("float8"), 0.0),
        # bit strings: a one-character literal is a boolean
        ("'101'::\"bit\"", column("bit", 3), "BQ=="),
        ("'1'::\"bit\"", column("bit", 1), True),
        ("'0'::\"bit\"", column("bit", 1), False),
        ("'11'::\"bit\"", column("varbit"), "Aw=="),
        ("''::\"bit\"", column("varbit", 5), ""),
        # enums: the label between the quotes, '' not unescaped
        ("'V1'::mood", ENUM, "V1"),
        ("'it''s'::mood", ENUM, "it''s"),
        ("'V1'::other_schema.mood", ENUM, "V1"),
        ("'V1'::\"mood\"", ENUM, "V1"),
        ("'V1'::other_type", ENUM, NO_DEFAULT),
        # types Debezium has no default parser for
        ("'12.34'::money", column("money"), NO_DEFAULT),
        ("'\\x0102'::bytea", column("bytea"), NO_DEFAULT),
        ("'127.0.0.1'::inet", column("inet"), NO_DEFAULT),
        ("'Ci'::citext", column("citext"), NO_DEFAULT),
        ("'4000000000'::oid", column("oid"), NO_DEFAULT),
        ("'x'::name", column("name"), NO_DEFAULT),
        ("42", column("int4", declared="my_domain"), NO_DEFAULT),  # a domain: looked up by its own name
        ("'x'::text", column("text", declared="text_domain"), NO_DEFAULT),
        (None, column("int4"), NO_DEFAULT),
    ],
)
def test_defaults(expression: str | None, col: ColumnType, expected: Any) -> None:
    assert default(expression, col) == expected


@pytest.mark.parametrize(
    ("expression", "col", "precise", "double", "string"),
    [
        ("1.5", numeric(5, 2), "AJY=", 1.5, "1.50"),
        ("'-12.5'::numeric", numeric(6, 2), "+x4=", -12.5, "-12.50"),
        ("1.50", numeric(4, 1), "Dw==", 1.5, "1.5"),
        ("1.25", numeric(4, 1), NO_DEFAULT, NO_DEFAULT, NO_DEFAULT),  # would need rounding: no default
        ("'1000'::numeric", column("numeric"), NO_DEFAULT, 1000.0, "1000"),  # precise: a struct cannot be a default
        ("'1e3'", column("numeric"), NO_DEFAULT, 1000.0, "1000"),
        ("'2.50'::numeric", column("numeric"), NO_DEFAULT, 2.5, "2.50"),
        ("round(1.5)", column("numeric"), NO_DEFAULT, 0.0, "0.0"),
        ("random()", numeric(6, 2), "AA==", 0.0, "0.00"),
        ("'NaN'::numeric", column("numeric"), NO_DEFAULT, NO_DEFAULT, NO_DEFAULT),
        ("NULL::numeric", column("numeric"), NO_DEFAULT, NO_DEFAULT, NO_DEFAULT),
    ],
)
def test_numeric_defaults_per_decimal_mode(expression: str, col: ColumnType, precise: Any, double: Any, string: Any) -> None:
    assert default(expression, col) == precise
    assert default(expression, col, decimal_handling_mode="double") == double
    assert default(expression, col, decimal_handling_mode="string") == string


def test_temporal_function_defaults_are_the_epoch() -> None:
    assert default("now()", column("timestamptz")) == "1970-01-01T00:00:00.000000Z"
    assert default("CURRENT_TIMESTAMP", column("timestamptz")) == "1970-01-01T00:00:00.000000Z"
    assert default("LOCALTIMESTAMP", column("timestamp")) == 0
    assert default("CURRENT_DATE", column("date")) == 0
    assert default("CURRENT_TIME", column("timetz")) is NO_DEFAULT  # Debezium has no TIMETZ parser
    assert default("(CURRENT_TIMESTAMP + '1 day'::interval)", column("timestamptz")) is NO_DEFAULT


def test_a_type_can_parse_its_own_literals() -> None:
    base = map_type(column("date"), MappingOptions())
    assert base is not None
    seen = []

    def parse(literal: str) -> int:
        seen.append(literal)
        return 7

    special = ValueMapping(base.schema, base.convert, base.zero, extra={DEFAULT_LITERAL: parse})
    assert default_value("'infinity'::date", special, column("date")) == 7
    assert seen == ["infinity"]
    assert default_value("CURRENT_DATE", special, column("date")) == 0  # generated values keep the epoch
    rejecting = ValueMapping(base.schema, base.convert, base.zero, extra={DEFAULT_LITERAL: lambda _: None})
    assert default_value("'2020-01-01'::date", rejecting, column("date")) is NO_DEFAULT


def test_serial_type_names_in_the_snapshot() -> None:
    assert debezium_type_name(column("int4"), "nextval('s'::regclass)", snapshot=True) == "serial"
    assert debezium_type_name(column("int8"), "nextval('s'::regclass)", snapshot=True) == "bigserial"
    assert debezium_type_name(column("int2"), "nextval('s'::regclass)", snapshot=True) == "smallserial"
    assert debezium_type_name(column("int4"), "nextval('s'::regclass)", snapshot=False) == "int4"
    assert debezium_type_name(column("int4"), "42", snapshot=True) == "int4"


def test_source_type_parameters_differ_between_snapshot_and_streaming() -> None:
    serial = source_type_parameters("pk", column("int4"), snapshot=True, default_expression="nextval('s'::regclass)")
    assert serial["__debezium.source.column.type"] == "SERIAL"
    streamed = source_type_parameters("pk", column("int4"), snapshot=False, default_expression="nextval('s'::regclass)")
    assert streamed["__debezium.source.column.type"] == "INT4"
    snapshot_numeric = source_type_parameters("n", column("numeric"), snapshot=True)
    assert snapshot_numeric == {"__debezium.source.column.type": "NUMERIC", "__debezium.source.column.length": "0",
                                "__debezium.source.column.name": "n"}  # fmt: skip
    streamed_numeric = source_type_parameters("n", column("numeric"), snapshot=False)
    assert streamed_numeric["__debezium.source.column.length"] == "131089"
    assert streamed_numeric["__debezium.source.column.scale"] == "0"
    domain = source_type_parameters("a", column("numeric", declared="dnum"), snapshot=True)
    assert (domain["__debezium.source.column.type"], domain["__debezium.source.column.length"]) == ("DNUM", "131089")
    negative = source_type_parameters("x", numeric(3, -1), snapshot=True)
    assert (negative["__debezium.source.column.length"], negative["__debezium.source.column.scale"]) == ("3", "2047")
