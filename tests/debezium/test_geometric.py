"""POINT, the built-in geometric types and PostGIS, as Debezium 3.6 represents them.

Expected values come from debezium-facts.md §3.5 and from the real Debezium 3.6.3 connector run on
the same inputs (pgoutput, JsonConverter): noted "Debezium 3.6.3" where the facts do not have them.
"""

from __future__ import annotations

import base64
import struct

import psycopg
import pytest

from sparkcdc.debezium.connect import ConnectSchema
from sparkcdc.debezium.types import SESSION_SETTINGS, ColumnType, ConversionError, MappingOptions, map_type
from sparkcdc.debezium.types.geometric import ewkb_srid, java_double, java_geometric_text, point_wkb

UNKNOWN = MappingOptions(include_unknown_datatypes=True)


def column(name: str, element: ColumnType | None = None) -> ColumnType:
    return ColumnType(oid=0, name=name, namespace="public", modifier=-1, declared_name=name, element=element)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def pg_text(db: psycopg.Connection, literal: str, type_name: str) -> str:
    """PostgreSQL's text output of ``literal::type_name`` under sparkcdc's session settings."""
    for name, value in SESSION_SETTINGS.items():
        db.execute("SELECT set_config(%s, %s, false)", (name, value))
    row = db.execute(f"SELECT format('%%s', %s::{type_name})", (literal,)).fetchone()
    assert row is not None
    return str(row[0])


# -- POINT -------------------------------------------------------------------------------------------


def shape(schema: ConnectSchema) -> tuple[object, ...]:
    """A schema as (type, optional, name, version, doc, fields); independent of JSON type spelling."""
    fields = tuple((f.name, f.schema.type, f.schema.optional) for f in schema.fields)
    return schema.type, schema.optional, schema.name, schema.version, schema.doc, fields


def test_point_schema_is_debeziums() -> None:
    # Debezium 3.6.3 (JsonConverter spells float64 "double")
    mapping = map_type(column("point"), MappingOptions())
    assert mapping is not None
    assert shape(mapping.schema) == (
        "struct", False, "io.debezium.data.geometry.Point", 1, "Geometry (POINT)",
        (("x", "double", False), ("y", "double", False), ("wkb", "bytes", True), ("srid", "int32", True)),
    )  # fmt: skip


def test_point_value_from_the_facts() -> None:
    mapping = map_type(column("point"), MappingOptions())
    assert mapping is not None
    assert mapping.convert("(1,1)") == {"x": 1.0, "y": 1.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAPA/", "srid": None}


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # Debezium 3.6.3
        ("(-0,1e+20)", {"x": -0.0, "y": 1e20, "wkb": "AQEAAAAAAAAAAAAAgECMtXgdrxVE", "srid": None}),
        ("(NaN,-Infinity)", {"x": "NaN", "y": "-Infinity", "wkb": "AQEAAAAAAAAAAAD4fwAAAAAAAPD/", "srid": None}),
        ("(123456789.125,0.1)", {"x": 123456789.125, "y": 0.1, "wkb": "AQEAAAAAAIBUNG+dQZqZmZmZmbk/", "srid": None}),
        ("(1.7976931348623157e+308,5e-324)",
         {"x": 1.7976931348623157e308, "y": 5e-324, "wkb": "AQEAAAD////////vfwEAAAAAAAAA", "srid": None}),
    ],
)  # fmt: skip
def test_point_extremes(text: str, expected: dict[str, object]) -> None:
    mapping = map_type(column("point"), MappingOptions())
    assert mapping is not None
    value = mapping.convert(text)
    assert value == expected
    assert str(value["x"]) == str(expected["x"])  # -0.0 stays negative


def test_point_fallback_is_the_origin() -> None:
    mapping = map_type(column("point"), MappingOptions())
    assert mapping is not None
    assert mapping.zero == {"x": 0.0, "y": 0.0, "wkb": "AQEAAAAAAAAAAAAAAAAAAAAAAAAA", "srid": None}


def test_point_wkb_layout() -> None:
    raw = base64.b64decode(point_wkb(2.5, -3.0))
    assert raw == struct.pack("<BIdd", 1, 1, 2.5, -3.0) and len(raw) == 21


@pytest.mark.parametrize("text", ["", "(1,1", "1,1", "(a,1)", "(1)", "(1,2,3)"])
def test_point_rejects_malformed_text(text: str) -> None:
    mapping = map_type(column("point"), MappingOptions())
    assert mapping is not None
    with pytest.raises(ConversionError, match="point"):
        mapping.convert(text)


def test_point_from_postgres(db: psycopg.Connection) -> None:
    mapping = map_type(column("point"), MappingOptions())
    assert mapping is not None
    assert mapping.convert(pg_text(db, "(1,1)", "point"))["wkb"] == "AQEAAAAAAAAAAADwPwAAAAAAAPA/"
    value = mapping.convert(pg_text(db, "(0.1, -1e-7)", "point"))
    assert (value["x"], value["y"]) == (0.1, -1e-7)


# -- Java's Double.toString ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1.0"), (0.0, "0.0"), (-0.0, "-0.0"), (10.0, "10.0"), (-2.5, "-2.5"), (0.1, "0.1"),
        (0.001, "0.001"), (0.0001, "1.0E-4"), (1e-5, "1.0E-5"), (1e-10, "1.0E-10"), (9999999.0, "9999999.0"),
        (1e7, "1.0E7"), (-1e7, "-1.0E7"), (1e20, "1.0E20"), (123456789.125, "1.23456789125E8"),
        (0.30000000000000004, "0.30000000000000004"), (174.9479, "174.9479"), (5e-324, "4.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"), (float("nan"), "NaN"),
        (float("inf"), "Infinity"), (float("-inf"), "-Infinity"), (100.5, "100.5"), (1234567.0, "1234567.0"),
    ],
)  # fmt: skip
def test_java_double(value: float, expected: str) -> None:
    assert java_double(value) == expected


# -- BOX, CIRCLE, LINE, LSEG, PATH, POLYGON ----------------------------------------------------------

LEGACY_CASES = [  # (type, PostgreSQL text output, Debezium 3.6.3 bytes as base64); first row = facts §3.5
    ("box", "(1,1),(0,0)", "KDEuMCwxLjApLCgwLjAsMC4wKQ=="),
    ("circle", "<(10,4),10>", "PCgxMC4wLDQuMCksMTAuMD4="),
    ("line", "{-1,0,0}", "ey0xLjAsMC4wLDAuMH0="),
    ("lseg", "[(0,0),(0,1)]", "WygwLjAsMC4wKSwoMC4wLDEuMCld"),
    ("path", "[(0,0),(0,1),(0,2)]", "WygwLjAsMC4wKSwoMC4wLDEuMCksKDAuMCwyLjApXQ=="),
    ("path", "((0,0),(0,1),(0,2))", "KCgwLjAsMC4wKSwoMC4wLDEuMCksKDAuMCwyLjApKQ=="),
    ("polygon", "((0,0),(0,1),(1,0),(0,0))", "KCgwLjAsMC4wKSwoMC4wLDEuMCksKDEuMCwwLjApLCgwLjAsMC4wKSk="),
    ("box", "(1e-05,0.1),(-2.5,-10000000)", "KDEuMEUtNSwwLjEpLCgtMi41LC0xLjBFNyk="),
    ("circle", "<(1.5,-4.25),0.001>", "PCgxLjUsLTQuMjUpLDAuMDAxPg=="),
    ("line", "{1,-1,1e-10}", "ezEuMCwtMS4wLDEuMEUtMTB9"),
    ("lseg", "[(10000000,9999999),(0.001,0.0001)]", "WygxLjBFNyw5OTk5OTk5LjApLCgwLjAwMSwxLjBFLTQpXQ=="),
    ("path", "((NaN,Infinity))", "KChOYU4sSW5maW5pdHkpKQ=="),
    ("polygon", "((1,2))", "KCgxLjAsMi4wKSk="),
]


@pytest.mark.parametrize(("type_name", "text", "expected"), LEGACY_CASES)
def test_legacy_geometric_types_are_java_formatted_bytes(type_name: str, text: str, expected: str) -> None:
    mapping = map_type(column(type_name), UNKNOWN)
    assert mapping is not None
    assert mapping.schema.to_json() == {"type": "bytes", "optional": False}
    assert mapping.convert(text) == expected


@pytest.mark.parametrize("type_name", ["box", "circle", "line", "lseg", "path", "polygon"])
def test_legacy_geometric_types_are_dropped_without_include_unknown(type_name: str) -> None:
    assert map_type(column(type_name), MappingOptions()) is None


def test_legacy_geometric_types_follow_binary_handling_mode() -> None:
    hex_mode = map_type(column("box"), MappingOptions(include_unknown_datatypes=True, binary_handling_mode="hex"))
    assert hex_mode is not None
    assert hex_mode.schema.to_json() == {"type": "string", "optional": False}
    assert hex_mode.convert("(1,1),(0,0)") == b"(1.0,1.0),(0.0,0.0)".hex()
    assert hex_mode.toast == "__debezium_unavailable_value"  # Debezium 3.6.3, polygon in hex mode
    bytes_mode = map_type(column("polygon"), UNKNOWN)
    assert bytes_mode is not None
    assert bytes_mode.zero == ""  # NOT NULL fallback: empty bytes (Debezium 3.6.3)
    assert bytes_mode.toast == b64(b"__debezium_unavailable_value")


def test_java_geometric_text_keeps_punctuation() -> None:
    assert java_geometric_text("[(1,2),(3e-07,-4)]") == "[(1.0,2.0),(3.0E-7,-4.0)]"


def test_legacy_geometric_rejects_non_geometric_text() -> None:
    mapping = map_type(column("box"), UNKNOWN)
    assert mapping is not None
    with pytest.raises(ConversionError, match="box"):
        mapping.convert("hello")


def test_legacy_geometric_types_from_postgres(db: psycopg.Connection) -> None:
    inputs = {"box": "(0,0),(1,1)", "circle": "<(10,4),10>", "line": "{-1,0,0}", "lseg": "[(0,0),(0,1)]",
              "polygon": "((0,0),(0,1),(1,0),(0,0))"}  # fmt: skip
    expected = {type_name: b64(java.encode()) for type_name, java in {
        "box": "(1.0,1.0),(0.0,0.0)", "circle": "<(10.0,4.0),10.0>", "line": "{-1.0,0.0,0.0}",
        "lseg": "[(0.0,0.0),(0.0,1.0)]", "polygon": "((0.0,0.0),(0.0,1.0),(1.0,0.0),(0.0,0.0))"}.items()}  # fmt: skip
    for type_name, literal in inputs.items():
        mapping = map_type(column(type_name), UNKNOWN)
        assert mapping is not None
        assert mapping.convert(pg_text(db, literal, type_name)) == expected[type_name], type_name
    path = map_type(column("path"), UNKNOWN)
    assert path is not None
    assert path.convert(pg_text(db, "[(0,0),(0,1),(0,2)]", "path")) == b64(b"[(0.0,0.0),(0.0,1.0),(0.0,2.0)]")
    assert path.convert(pg_text(db, "((0,0),(0,1),(0,2))", "path")) == b64(b"((0.0,0.0),(0.0,1.0),(0.0,2.0))")


# -- PostGIS -----------------------------------------------------------------------------------------

GEOMETRY_POINT_3187 = "0101000020730C00001C7C613255DE6540787AA52C435C42C0"
GEOGRAPHY_MULTILINESTRING = (
    "0105000020E610000001000000010200000002000000A779C7293A2465400B462575025A46C0C66D3480B7FC6440C3D32B65195246C0"
)
EMPTY_COLLECTION = "010700000000000000"
POLYGON_NO_SRID_PREFIX = "01030000000100000005000000B81E85EB51D0644052B81E85EB5147C0"


def postgis_schema_json(name: str, doc: str) -> dict[str, object]:
    return {
        "type": "struct",
        "fields": [{"type": "bytes", "optional": False, "field": "wkb"}, {"type": "int32", "optional": True, "field": "srid"}],
        "optional": False,
        "name": name,
        "version": 1,
        "doc": doc,
    }


def test_geometry_schema_and_value_from_the_facts() -> None:
    mapping = map_type(column("geometry"), MappingOptions())
    assert mapping is not None
    assert mapping.schema.to_json() == postgis_schema_json("io.debezium.data.geometry.Geometry", "Geometry")
    assert mapping.convert(GEOMETRY_POINT_3187) == {"wkb": b64(bytes.fromhex(GEOMETRY_POINT_3187)), "srid": 3187}
    assert mapping.convert(GEOMETRY_POINT_3187)["wkb"] == "AQEAACBzDAAAHHxhMlXeZUB4eqUsQ1xCwA=="  # Debezium 3.6.3


def test_geography_schema_and_value_from_the_facts() -> None:
    mapping = map_type(column("geography"), MappingOptions())
    assert mapping is not None
    assert mapping.schema.to_json() == postgis_schema_json("io.debezium.data.geometry.Geography", "Geography")
    value = mapping.convert(GEOGRAPHY_MULTILINESTRING)
    assert value == {"wkb": "AQUAACDmEAAAAQAAAAECAAAAAgAAAKd5xyk6JGVAC0YldQJaRsDGbTSAt/xkQMPTK2UZUkbA", "srid": 4326}


def test_geometry_is_always_optional_geography_is_not() -> None:
    # Debezium 3.6.3: a NOT NULL geometry column still has an optional schema, geography does not.
    geometry = map_type(column("geometry"), MappingOptions())
    geography = map_type(column("geography"), MappingOptions())
    assert geometry is not None and geography is not None
    assert geometry.extra.get("always_optional") is True
    assert not geography.extra.get("always_optional")


def test_postgis_fallback_and_toast() -> None:
    for type_name in ("geometry", "geography"):
        mapping = map_type(column(type_name), MappingOptions())
        assert mapping is not None
        assert mapping.zero == {"wkb": "AQcAAAAAAAAA", "srid": None}  # GEOMETRYCOLLECTION EMPTY (Debezium 3.6.3)
        assert mapping.extra.get("toast_null") is True  # an unchanged TOAST geometry is null in Debezium 3.6.3


def test_ewkb_srid() -> None:
    assert ewkb_srid(bytes.fromhex(GEOMETRY_POINT_3187)) == 3187
    assert ewkb_srid(bytes.fromhex(EMPTY_COLLECTION)) is None
    assert ewkb_srid(bytes.fromhex(POLYGON_NO_SRID_PREFIX)) is None
    big_endian = bytes.fromhex("0020000001000010E6") + struct.pack(">dd", 1.0, 2.0)
    assert ewkb_srid(big_endian) == 4326
    negative = bytes.fromhex("0101000020") + struct.pack("<i", -1) + bytes(16)
    assert ewkb_srid(negative) == -1  # Java's getInt is signed


def test_geometry_rejects_bad_ewkb() -> None:
    mapping = map_type(column("geometry"), MappingOptions())
    assert mapping is not None
    with pytest.raises(ConversionError, match="geometry"):
        mapping.convert("POINT(1 2)")
    with pytest.raises(ConversionError, match="shorter than 9 bytes"):
        mapping.convert("0101")


def test_geometry_array_from_the_facts() -> None:
    mapping = map_type(column("_geometry", column("geometry")), MappingOptions())
    assert mapping is not None
    items = mapping.schema.to_json()["items"]
    assert items["name"] == "io.debezium.data.geometry.Geometry" and items["optional"] is True
    ring = [(166.51, -46.64), (178.52, -46.64), (178.52, -34.45), (166.51, -34.45), (166.51, -46.64)]
    polygon = bytes.fromhex("01030000000100000005000000") + b"".join(struct.pack("<dd", x, y) for x, y in ring)
    assert polygon.hex().upper().startswith(POLYGON_NO_SRID_PREFIX)
    value = mapping.convert(f"{{{EMPTY_COLLECTION}:{polygon.hex().upper()}}}")  # PostGIS's typdelim is ':'
    assert value == [{"wkb": "AQcAAAAAAAAA", "srid": None}, {"wkb": b64(polygon), "srid": None}]


@pytest.fixture
def postgis(db: psycopg.Connection) -> psycopg.Connection:
    try:
        db.execute("CREATE EXTENSION IF NOT EXISTS postgis")
    except psycopg.Error as error:
        pytest.skip(f"PostGIS is not installed on this machine (apt-get install postgresql-15-postgis-3): {error}")
    return db


def test_postgis_from_postgres(postgis: psycopg.Connection) -> None:
    geometry = map_type(column("geometry"), MappingOptions())
    geography = map_type(column("geography"), MappingOptions())
    geometries = map_type(column("_geometry", column("geometry")), MappingOptions())
    assert geometry is not None and geography is not None and geometries is not None
    text = pg_text(postgis, "SRID=3187;POINT(174.9479 -36.7208)", "geometry")
    assert text == GEOMETRY_POINT_3187
    assert geometry.convert(text) == {"wkb": b64(bytes.fromhex(GEOMETRY_POINT_3187)), "srid": 3187}
    text = pg_text(postgis, "MULTILINESTRING((169.1321 -44.7032, 167.8974 -44.6414))", "geography")
    assert geography.convert(text) == {"wkb": b64(bytes.fromhex(GEOGRAPHY_MULTILINESTRING)), "srid": 4326}
    array_text = pg_text(
        postgis,
        "{\"GEOMETRYCOLLECTION EMPTY\":\"POLYGON((166.51 -46.64, 178.52 -46.64, 178.52 -34.45, 166.51 -34.45, 166.51 -46.64))\"}",
        "geometry[]",
    )
    empty, polygon = geometries.convert(array_text)
    assert empty == {"wkb": "AQcAAAAAAAAA", "srid": None}
    assert base64.b64decode(polygon["wkb"]).hex().upper().startswith(POLYGON_NO_SRID_PREFIX) and polygon["srid"] is None
    # Debezium 3.6.3: POINT Z without SRID, POINT M with SRID 4326
    assert geometry.convert(pg_text(postgis, "POINT Z(1 2 3)", "geometry")) == {
        "wkb": "AQEAAIAAAAAAAADwPwAAAAAAAABAAAAAAAAACEA=", "srid": None}  # fmt: skip
    assert geometry.convert(pg_text(postgis, "SRID=4326;POINT M(1 2 3)", "geometry")) == {
        "wkb": "AQEAAGDmEAAAAAAAAAAA8D8AAAAAAAAAQAAAAAAAAAhA", "srid": 4326}  # fmt: skip


def test_other_types_are_not_geometric() -> None:
    from sparkcdc.debezium.types.geometric import map_geometric_type

    assert map_geometric_type(column("text"), UNKNOWN) is None
