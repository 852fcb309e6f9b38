"""Arrays: schemas, PostgreSQL's array text, element conversion, TOAST placeholders.

Expected values come from debezium-facts.md §3.4/§3.5/§3.6/§3.10 and from the real Debezium 3.6.3
connector run on the same values (noted "Debezium 3.6.3").
"""

from __future__ import annotations

import base64
import random
from typing import Any

import psycopg
import pytest

from sparkcdc.debezium.types import SESSION_SETTINGS, ColumnType, ConversionError, MappingOptions, ValueMapping, map_type
from sparkcdc.debezium.types.arrays import SUBARRAY, map_array_type, name_uuid_from_bytes, parse_array

PLACEHOLDER_BYTES = [95, 95, 100, 101, 98, 101, 122, 105, 117, 109, 95, 117, 110, 97, 118, 97, 105, 108, 97, 98, 108, 101, 95, 118, 97,
                     108, 117, 101]  # fmt: skip


def scalar(name: str, modifier: int = -1, declared: str | None = None, typtype: str = "b", labels: tuple[str, ...] = ()) -> ColumnType:
    return ColumnType(oid=0, name=name, namespace="pg_catalog", modifier=modifier, declared_name=declared or name,
                      typtype=typtype, enum_labels=labels)  # fmt: skip


def array_of(element: ColumnType) -> ColumnType:
    return ColumnType(oid=0, name="_" + element.name, namespace=element.namespace, modifier=element.modifier,
                      declared_name="_" + element.declared_name, element=element)  # fmt: skip


def mapping_for(element: ColumnType, options: MappingOptions | None = None) -> ValueMapping:
    mapping = map_type(array_of(element), options or MappingOptions())
    assert mapping is not None
    return mapping


def numeric_modifier(precision: int, scale: int) -> int:
    return ((precision << 16) | scale) + 4


MOOD = scalar("mood", typtype="e", labels=("sad", "ok", "happy"))

# -- parse_array -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{1,2,3}", ["1", "2", "3"]),
        ("{}", []),
        ("{NULL}", [None]),
        ('{"NULL",NULL,""}', ["NULL", None, ""]),
        ('{"a b","x\\"y",NULL}', ["a b", 'x"y', None]),
        ('{"c,d","{}","back\\\\slash","}"}', ["c,d", "{}", "back\\slash", "}"]),
        ("[0:1]={7,8}", ["7", "8"]),
        ("{{1,2},{3,4}}", [SUBARRAY, SUBARRAY]),
        ('{{"a}",NULL},{"{x}","y,z"}}', [SUBARRAY, SUBARRAY]),
        ("[1:1][2:3]={{1,2}}", [SUBARRAY]),
        ("{{{1},{2}},{{3},{4}}}", [SUBARRAY, SUBARRAY]),
        ('{žš,"😀 x"}', ["žš", "😀 x"]),
    ],
)
def test_parse_array(text: str, expected: list[Any]) -> None:
    assert parse_array(text) == expected


def test_parse_array_with_other_delimiters() -> None:
    assert parse_array("{(1,1),(0,0);(3,3),(2,2)}", ";") == ["(1,1),(0,0)", "(3,3),(2,2)"]
    assert parse_array('{"(1,1),(0,0)";NULL}', ";") == ["(1,1),(0,0)", None]
    assert parse_array("{0101:0107}", ":") == ["0101", "0107"]


@pytest.mark.parametrize("text", ["", "1,2", "{1,2", "{1,,2}", '{"a}', '{"a"b}', "{{1,2}", "[0:1]{1}", "{1,}"])
def test_parse_array_rejects_malformed_text(text: str) -> None:
    with pytest.raises(ConversionError, match="not array text"):
        parse_array(text)


# -- schemas -----------------------------------------------------------------------------------------


def test_explicit_arrays_have_optional_items() -> None:
    assert mapping_for(scalar("int4")).schema.to_json() == {"type": "array", "items": {"type": "int32", "optional": True}, "optional": False}
    assert mapping_for(scalar("int2")).schema.to_json()["items"] == {"type": "int16", "optional": True}
    assert mapping_for(scalar("oid")).schema.to_json()["items"] == {"type": "int64", "optional": True}
    assert mapping_for(scalar("uuid")).schema.to_json()["items"] == {"type": "string", "optional": True, "name": "io.debezium.data.Uuid", "version": 1}


def test_generic_arrays_have_required_items() -> None:
    # Debezium 3.6.3: enum[] and tsvector[] keep the element schema required.
    assert mapping_for(MOOD).schema.to_json()["items"] == {
        "type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1, "parameters": {"allowed": "sad,ok,happy"}}  # fmt: skip
    assert mapping_for(scalar("tsvector")).schema.to_json()["items"]["optional"] is False


@pytest.mark.parametrize("element", ["money", "name", "interval", "varbit", "xml", "point"])
def test_arrays_debezium_never_maps(element: str) -> None:
    # Debezium 3.6.3 drops these columns even with include.unknown.datatypes.
    assert map_type(array_of(scalar(element)), MappingOptions(include_unknown_datatypes=True)) is None


def test_unknown_element_arrays_follow_include_unknown_datatypes() -> None:
    box = scalar("box")
    assert map_type(array_of(box), MappingOptions()) is None
    mapping = mapping_for(box, MappingOptions(include_unknown_datatypes=True))
    assert mapping.schema.to_json()["items"] == {"type": "bytes", "optional": False}
    # Debezium 3.6.3, '(1,1),(0,0)' and '(2.5,3),(1,1e20)' (box's array delimiter is ';')
    assert mapping.convert("{(1,1),(0,0);(2.5,1e+20),(1,3)}") == ["KDEuMCwxLjApLCgwLjAsMC4wKQ==", "KDIuNSwxLjBFMjApLCgxLjAsMy4wKQ=="]


def test_domain_element_arrays_are_unknown() -> None:
    posint = scalar("int4", declared="posint")
    assert map_type(array_of(posint), MappingOptions()) is None
    mapping = mapping_for(posint, MappingOptions(include_unknown_datatypes=True))
    assert mapping.schema.to_json()["items"] == {"type": "bytes", "optional": False}
    assert mapping.convert("{1,2}") == ["MQ==", "Mg=="]  # Debezium 3.6.3
    assert mapping.convert("{ab,NULL}") is None  # a null in required items: the column is null


def test_bit_arrays_get_the_scalar_schema_and_null_values() -> None:
    mapping = mapping_for(scalar("bit", modifier=3))
    assert mapping.schema.to_json() == {"type": "bytes", "optional": False, "name": "io.debezium.data.Bits", "version": 1,
                                        "parameters": {"length": "3"}}  # fmt: skip
    assert mapping.convert("{101,010}") is None  # Debezium 3.6.3


def test_map_array_type_asks_for_the_element_mapping() -> None:
    seen: list[ColumnType] = []

    def element_mapping(element: ColumnType) -> ValueMapping | None:
        seen.append(element)
        return None

    assert map_array_type(array_of(scalar("int4")), MappingOptions(), element_mapping) is None
    assert [e.name for e in seen] == ["int4"]


# -- values ------------------------------------------------------------------------------------------


def test_array_table_row_from_the_facts() -> None:
    """facts §3.6, INSERT_ARRAY_TYPES_STMT (the values as PostgreSQL prints them)."""
    rows: list[tuple[ColumnType, str, list[Any]]] = [
        (scalar("int4"), "{1,2,3}", [1, 2, 3]),
        (scalar("int8"), "{1550166368505037572}", [1550166368505037572]),
        (scalar("text"), "{one,two,three}", ["one", "two", "three"]),
        (scalar("bpchar", modifier=14), '{"cone      ","ctwo      ","cthree    "}', ["cone      ", "ctwo      ", "cthree    "]),
        (scalar("varchar", modifier=14), "{vcone,vctwo,vcthree}", ["vcone", "vctwo", "vcthree"]),
        (scalar("date"), "{2016-11-04,2016-11-05,2016-11-06}", [17109, 17110, 17111]),
        (scalar("numeric", modifier=numeric_modifier(10, 2)), "{1.20,3.40,5.60}", ["eA==", "AVQ=", "AjA="]),
        (scalar("numeric"), "{1.1,2.22,3.333}",
         [{"scale": 1, "value": "Cw=="}, {"scale": 2, "value": "AN4="}, {"scale": 3, "value": "DQU="}]),
        (scalar("inet"), "{192.168.2.0/12,192.168.1.1,192.168.0.2/1}", ["192.168.2.0/12", "192.168.1.1", "192.168.0.2/1"]),
        (scalar("cidr"), "{192.168.100.128/25,192.168.0.0/25,192.168.1.0/24}",
         ["192.168.100.128/25", "192.168.0.0/25", "192.168.1.0/24"]),
        (scalar("macaddr"), "{08:00:2b:01:02:03,08:00:2b:01:02:03,08:00:2b:01:02:03}", ["08:00:2b:01:02:03"] * 3),
        (scalar("tsrange"), '{"[\\"2019-03-31 15:30:00\\",infinity)","[\\"2019-03-31 15:30:00\\",\\"2019-04-30 15:30:00\\"]"}',
         ['["2019-03-31 15:30:00",infinity)', '["2019-03-31 15:30:00","2019-04-30 15:30:00"]']),
        (scalar("daterange"), '{"[2019-03-31,infinity)","[2019-03-31,2019-04-30)"}', ["[2019-03-31,infinity)", "[2019-03-31,2019-04-30)"]),
        (scalar("int4range"), '{"[1,6)","[1,4)"}', ["[1,6)", "[1,4)"]),
        (scalar("numrange"), '{"[5.3,6.3)","[10.0,20.0)"}', ["[5.3,6.3)", "[10.0,20.0)"]),
        (scalar("int8range"), '{"[1000000,6000000)","[5000,9000)"}', ["[1000000,6000000)", "[5000,9000)"]),
        (scalar("uuid"), "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12}",
         ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"]),
        (scalar("json"), '{"{\\"bar\\": \\"baz\\"}","{\\"foo\\": \\"qux\\"}"}', ['{"bar": "baz"}', '{"foo": "qux"}']),
        (scalar("jsonb"), '{"{\\"bar\\": \\"baz\\"}","{\\"foo\\": \\"qux\\"}"}', ['{"bar": "baz"}', '{"foo": "qux"}']),
        (scalar("oid"), "{3,4000000000}", [3, 4000000000]),
    ]  # fmt: skip
    for element, text, expected in rows:
        assert mapping_for(element).convert(text) == expected, element.name


def test_bytea_arrays_per_binary_handling_mode() -> None:
    text = '{"\\\\x000102","\\\\x030405"}'  # facts §3.4: [\000\001\002, \003\004\005]
    assert mapping_for(scalar("bytea")).convert(text) == ["AAEC", "AwQF"]
    hex_mode = mapping_for(scalar("bytea"), MappingOptions(binary_handling_mode="hex"))
    assert hex_mode.schema.to_json()["items"] == {"type": "string", "optional": True}
    assert hex_mode.convert(text) == ["000102", "030405"]
    assert mapping_for(scalar("bytea"), MappingOptions(binary_handling_mode="base64")).convert(text) == ["AAEC", "AwQF"]
    assert mapping_for(scalar("bytea"), MappingOptions(binary_handling_mode="base64-url-safe")).convert(text) == ["AAEC", "AwQF"]


def test_null_and_empty() -> None:
    mapping = mapping_for(scalar("text"))
    assert mapping.convert("{}") == []
    assert mapping.convert("{NULL,NULL}") == [None, None]
    assert mapping.zero == []  # Debezium 3.6.3: NOT NULL arrays fall back to an empty list
    assert mapping_for(MOOD).zero == []


def test_a_null_in_required_items_nulls_the_column() -> None:
    mapping = mapping_for(MOOD)
    assert mapping.convert("{ok,sad}") == ["ok", "sad"]
    assert mapping.convert("{ok,NULL}") is None  # Debezium 3.6.3


def test_multidimensional_arrays() -> None:
    # Debezium 3.6.3: each top-level sub-array reaches the element converter and becomes null.
    assert mapping_for(scalar("int4")).convert("{{1,2},{3,4}}") == [None, None]
    assert mapping_for(scalar("int4")).convert("{{{1},{2}},{{3},{4}}}") == [None, None]
    assert mapping_for(scalar("float8")).convert("{{1.5,-0},{2,3}}") == [None, None]
    assert mapping_for(scalar("text")).convert('{{"a b",NULL},{"{x}","y,z"}}') == [None, None]
    assert mapping_for(MOOD).convert("{{ok},{sad}}") is None  # required items
    assert mapping_for(scalar("int4")).convert("[0:1]={7,8}") == [7, 8]  # non-default bounds, one dimension


def test_numeric_arrays_with_special_values_are_null() -> None:
    # Debezium 3.6.3: pgjdbc cannot read NaN into BigDecimal, the whole value is null (in every mode).
    for mode in ("precise", "double", "string"):
        options = MappingOptions(decimal_handling_mode=mode)
        assert mapping_for(scalar("numeric", modifier=numeric_modifier(10, 2)), options).convert("{1.20,NaN}") is None
        assert mapping_for(scalar("numeric"), options).convert("{Infinity}") is None
    assert mapping_for(scalar("float8")).convert("{1.1,1e+100,Infinity,NaN}") == [1.1, 1e100, "Infinity", "NaN"]


def test_infinity_inside_temporal_arrays() -> None:
    # Debezium 3.6.3 (adaptive mode, JVM in UTC): not the scalar columns' infinity values.
    assert mapping_for(scalar("date")).convert("{infinity,-infinity,2016-11-04}") == [-622191234, -625821272, 17109]
    assert mapping_for(scalar("timestamptz")).convert("{infinity,-infinity}") == ["infinity", "+292269055-12-02T23:00:00.000000Z"]
    assert mapping_for(scalar("timestamp")).convert('{infinity,-infinity,"2016-11-04 13:51:30.123456"}') == [
        9223372036825200000, -9223372036832400000, 1478267490123456]  # fmt: skip


# Observed end to end (tests/conformance/test_structured_types_conformance.py::test_temporal_arrays): the
# elements are pgjdbc's java.sql objects, the same in the snapshot and in streaming.
JDBC_ELEMENTS = [
    # element, mode, array text, expected
    (scalar("date"), "isostring", "{infinity,-infinity}", ["+292278994-08-16Z", "+292269055-12-02Z"]),
    (scalar("date"), "adaptive", "{0044-03-15 BC,1582-10-10,1582-10-15}", [-703383, -141422, -141427]),
    (scalar("date"), "isostring", "{0044-03-15 BC,1582-10-10,12345-06-07}", ["0044-03-15Z", "1582-10-20Z", "+12345-06-07Z"]),
    (scalar("time"), "adaptive", "{23:59:59.999999,24:00:00}", [86399999000, 0]),
    (scalar("time", 3), "adaptive", "{13:51:30.123,24:00:00}", [49890123, 0]),
    (scalar("time"), "isostring", "{23:59:59.999999}", ["23:59:59.999Z"]),
    (scalar("time"), "nanoseconds", "{23:59:59.999999}", [86399999000000]),
    (scalar("timetz"), "adaptive", "{23:59:59.999999-03,24:00:00+00,00:00:00+14}", ["02:59:59Z", "00:00:00Z", "10:00:00Z"]),
    (scalar("timestamp"), "adaptive", '{"0044-03-15 12:00:00.25 BC","1000-06-30 12:00:00","2020-04-01 12:51:03.5"}',
     [-63517953599750000, -30594110400000000, 1585745463500000]),
    (scalar("timestamp", 3), "adaptive", '{"1582-10-10 10:00:00"}', [-12218824800000]),
    (scalar("timestamp"), "isostring", '{"0044-03-15 12:00:00.25 BC","1000-06-30 12:00:00","1582-10-10 10:00:00"}',
     ["-0043-03-13T12:00:00.25Z", "1000-07-06T12:00:00Z", "1582-10-20T10:00:00Z"]),
    (scalar("timestamptz"), "adaptive", '{"0044-03-15 12:00:00.25+00 BC","1000-06-30 12:00:00+00"}',
     ["0044-03-15T12:00:00.250000Z", "1000-06-30T12:00:00.000000Z"]),
]


@pytest.mark.parametrize(("element", "mode", "text", "expected"), JDBC_ELEMENTS)
def test_temporal_elements_are_java_sql_objects(element: ColumnType, mode: str, text: str, expected: list[Any]) -> None:
    assert mapping_for(element, MappingOptions(time_precision_mode=mode)).convert(text) == expected


def test_nano_timestamp_elements_out_of_range_are_null() -> None:
    convert = mapping_for(scalar("timestamp"), MappingOptions(time_precision_mode="nanoseconds")).convert
    assert convert('{infinity,"2020-01-01 00:00:00","1000-06-30 12:00:00"}') == [(1 << 63) - 1, 1577836800000000000, None]


def test_ltree_array_with_a_null_element_is_null() -> None:
    ltree = scalar("ltree", typtype="b")
    assert mapping_for(ltree).convert('{NULL,"Ship.Frigate"}') is None
    assert mapping_for(ltree).convert('{"",Ship.Frigate}') == ["", "Ship.Frigate"]


def test_element_errors_name_the_array() -> None:
    with pytest.raises(ConversionError, match=r"array of int4 '\{1,x\}'"):
        mapping_for(scalar("int4")).convert("{1,x}")


# -- TOAST -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "scalar_toast_null"), [("bytes", False), ("hex", False), ("base64", True), ("base64-url-safe", True)])
def test_bytea_toast_per_binary_mode(mode: str, scalar_toast_null: bool) -> None:
    # Observed end to end (test_unchanged_toast_bytea_in_binary_modes): Debezium's base64 converters
    # turn its placeholder into null, hex keeps the placeholder string, bytes its bytes.
    options = MappingOptions(binary_handling_mode=mode)
    bytea = map_type(scalar("bytea"), options)
    assert bytea is not None
    assert bool(bytea.extra.get("toast_null")) is scalar_toast_null
    if mode == "hex":
        assert bytea.toast == "__debezium_unavailable_value"
    array_mapping = mapping_for(scalar("bytea"), options)
    assert (array_mapping.toast is None) is (mode != "bytes")


def test_full_replica_identity_fills_unchanged_toast_from_the_old_row() -> None:
    from sparkcdc.engine.core.streaming import _resolve_unchanged_toast
    from sparkcdc.pgoutput.messages import UNCHANGED_TOAST

    old = ("1", "big value", None, "x")
    assert _resolve_unchanged_toast(old, ("1", UNCHANGED_TOAST, UNCHANGED_TOAST, "y")) == ("1", "big value", UNCHANGED_TOAST, "y")


def test_toast_placeholders_from_the_facts() -> None:
    for name in ("text", "varchar", "bpchar", "json", "jsonb"):
        assert mapping_for(scalar(name)).toast == ["__debezium_unavailable_value"], name
    for name in ("int4", "date", "int8"):
        assert mapping_for(scalar(name)).toast == PLACEHOLDER_BYTES, name
    assert mapping_for(scalar("bytea")).toast == [base64.b64encode(b"__debezium_unavailable_value").decode()]
    assert mapping_for(scalar("uuid")).toast == ["b68a35a7-17ad-35b3-af2a-ae46edb4545a"]
    assert name_uuid_from_bytes(b"__debezium_unavailable_value") == "b68a35a7-17ad-35b3-af2a-ae46edb4545a"


@pytest.mark.parametrize("name", ["numeric", "float8", "float4", "bool", "int2", "timestamptz", "timestamp", "time", "timetz",
                                  "inet", "macaddr", "citext", "ltree", "char", "int4range", "hstore", "geometry"])  # fmt: skip
def test_other_arrays_toast_to_null(name: str) -> None:
    # Debezium 3.6.3: the placeholder does not fit these arrays and the value is null.
    mapping = map_type(array_of(scalar(name)), MappingOptions())
    if mapping is None:
        pytest.skip(f"{name} has no element mapping yet")
    assert mapping.toast is None and mapping.extra.get("toast_null") is True
    assert map_type(array_of(MOOD), MappingOptions()).extra.get("toast_null") is True  # type: ignore[union-attr]


def test_bytea_array_toast_is_null_in_string_modes() -> None:
    for mode in ("hex", "base64"):  # Debezium 3.6.3
        mapping = mapping_for(scalar("bytea"), MappingOptions(binary_handling_mode=mode))
        assert mapping.toast is None and mapping.extra.get("toast_null") is True


def test_custom_placeholder() -> None:
    options = MappingOptions(unavailable_value_placeholder="hex:41ff00")
    assert mapping_for(scalar("int4"), options).toast == [65, -1, 0]  # Java bytes are signed
    assert mapping_for(scalar("int8"), options).toast == [65, -1, 0]
    assert mapping_for(scalar("bytea"), options).toast == ["Qf8A"]
    assert mapping_for(scalar("text"), MappingOptions(unavailable_value_placeholder="hex:4142")).toast == ["AB"]


# -- live: PostgreSQL's text output --------------------------------------------------------------------


def pg_text(db: psycopg.Connection, value: Any, type_name: str) -> str:
    for name, setting in SESSION_SETTINGS.items():
        db.execute("SELECT set_config(%s, %s, false)", (name, setting))
    row = db.execute(f"SELECT format('%%s', %s::{type_name})", (value,)).fetchone()
    assert row is not None
    return str(row[0])


def test_live_text_arrays(db: psycopg.Connection) -> None:
    text = pg_text(db, ["a b", None, 'x"y', "NULL", "", "{}", "c,d", "back\\slash"], "text[]")
    # Debezium 3.6.3
    assert mapping_for(scalar("text")).convert(text) == ["a b", None, 'x"y', "NULL", "", "{}", "c,d", "back\\slash"]


def test_live_shapes(db: psycopg.Connection) -> None:
    int4 = mapping_for(scalar("int4"))
    assert int4.convert(pg_text(db, "{}", "int4[]")) == []
    assert int4.convert(pg_text(db, "{{1,2},{3,4}}", "int4[]")) == [None, None]
    assert int4.convert(pg_text(db, "[0:1]={7,8}", "int4[]")) == [7, 8]
    assert int4.convert(pg_text(db, "[-2:-1][3:4]={{1,2},{3,4}}", "int4[]")) == [None, None]
    char10 = mapping_for(scalar("bpchar", modifier=14))
    assert char10.convert(pg_text(db, "{cone,ctwo,cthree}", "char(10)[]")) == ["cone      ", "ctwo      ", "cthree    "]
    numeric = mapping_for(scalar("numeric", modifier=numeric_modifier(10, 2)))
    assert numeric.convert(pg_text(db, "{1.2,3.4,5.6}", "numeric(10,2)[]")) == ["eA==", "AVQ=", "AjA="]
    box = mapping_for(scalar("box"), MappingOptions(include_unknown_datatypes=True))
    assert box.convert(pg_text(db, "{(0,0),(1,1);(2,2),(3,3)}", "box[]")) == [
        base64.b64encode(b"(1.0,1.0),(0.0,0.0)").decode(), base64.b64encode(b"(3.0,3.0),(2.0,2.0)").decode()]  # fmt: skip
    bytea = mapping_for(scalar("bytea"))
    assert bytea.convert(pg_text(db, "{\"\\\\x000102\",NULL}", "bytea[]")) == ["AAEC", None]


def test_live_random_text_arrays_round_trip(db: psycopg.Connection) -> None:
    """PostgreSQL's quoting of arbitrary elements parses back to the same elements."""
    rnd = random.Random(11)
    alphabet = 'ab "\\,{}NUL;\t\néž😀'
    parse = mapping_for(scalar("text")).convert
    for _ in range(150):
        elements = [
            None if rnd.random() < 0.15 else rnd.choice(["NULL", "null", ""]) if rnd.random() < 0.1
            else "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 8)))
            for _ in range(rnd.randint(0, 12))
        ]  # fmt: skip
        assert parse(pg_text(db, elements, "text[]")) == elements
