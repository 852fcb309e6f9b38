"""Character, binary, bit-string, network, JSON/XML/UUID/LTREE, enum and unknown types.

Expected values come from debezium-facts.md §3.4/§3.5 and from the real Debezium 3.6.3 connector
(``tests/conformance/test_scalar_types_conformance.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.types import ColumnType, ConversionError, MappingOptions, ValueMapping, map_type
from sparkcdc.debezium.types.text import STREAMING_UNRESOLVED, decode_bytea, encode_binary, unknown_mapping


def column(name: str, modifier: int = -1, typtype: str = "b", labels: tuple[str, ...] = ()) -> ColumnType:
    return ColumnType(oid=0, name=name, namespace="pg_catalog", modifier=modifier, declared_name=name, typtype=typtype,
                      enum_labels=labels)  # fmt: skip


def mapping(col: ColumnType, **options: Any) -> ValueMapping:
    result = map_type(col, MappingOptions(**options))
    assert result is not None
    return result


@pytest.mark.parametrize("type_name", ["text", "varchar", "bpchar", "char", "name", "citext", "inet", "cidr", "macaddr",
                                       "macaddr8", "isbn"])  # fmt: skip
def test_plain_strings(type_name: str) -> None:
    m = mapping(column(type_name))
    assert m.schema.to_json() == {"type": "string", "optional": False}
    for text in ("", "žš", "😀 a\tb\n", "it's", "\\", "ab  "):
        assert m.convert(text) == text  # PostgreSQL's text is the value (char(n) keeps its padding)
    assert m.zero == ""
    assert m.toast == "__debezium_unavailable_value"


def test_isbn_is_a_string_even_without_unknown_types() -> None:
    # Debezium knows the isn extension's isbn by name (only isbn: ean13, issn ... are unknown).
    assert mapping(column("isbn")).convert("0-393-04002-X") == "0-393-04002-X"
    assert map_type(column("ean13"), MappingOptions()) is None


def test_name_is_unresolved_when_streaming() -> None:
    assert mapping(column("name")).extra.get(STREAMING_UNRESOLVED) is True
    assert not mapping(column("text")).extra.get(STREAMING_UNRESOLVED)


@pytest.mark.parametrize(
    ("type_name", "schema_name"),
    [("json", "io.debezium.data.Json"), ("jsonb", "io.debezium.data.Json"), ("xml", "io.debezium.data.Xml"),
     ("uuid", "io.debezium.data.Uuid"), ("ltree", "io.debezium.data.Ltree"), ("tsvector", "io.debezium.data.Tsvector")],
)  # fmt: skip
def test_named_strings(type_name: str, schema_name: str) -> None:
    m = mapping(column(type_name))
    assert m.schema.to_json() == {"type": "string", "optional": False, "name": schema_name, "version": 1}
    assert m.convert('{"bar": "baz"}') == '{"bar": "baz"}'
    assert m.convert("") == ""
    assert m.zero == ""  # the NOT NULL fallback is "" for all of them (not "{}" or the zero UUID)


def test_enum() -> None:
    m = mapping(column("mood", typtype="e", labels=("V0", "V1", "with space", "comma,inside", "")))
    assert m.schema.to_json() == {"type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1,
                                  "parameters": {"allowed": "V0,V1,with space,comma,inside,"}}  # fmt: skip
    assert (m.convert("with space"), m.convert(""), m.zero) == ("with space", "", "")


# -- bytea and binary.handling.mode ----------------------------------------------------------------


def test_decode_bytea() -> None:
    assert decode_bytea("\\x010203") == b"\x01\x02\x03"
    assert decode_bytea("\\x") == b""
    assert decode_bytea("\\xDEADbeef") == b"\xde\xad\xbe\xef"
    # The escape format (bytea_output=escape).
    assert decode_bytea("a\\\\b\\000\\377") == b"a\\b\x00\xff"
    assert decode_bytea("") == b""
    for bad in ("\\xzz", "\\x0", "\\9", "\\47", "\\400"):
        with pytest.raises(ConversionError) as error:
            decode_bytea(bad)
        assert repr(bad) in str(error.value)


@pytest.mark.parametrize(
    ("mode", "schema_type", "value", "empty", "toast"),
    [("bytes", "bytes", "+//+Pj8=", "", "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="),
     ("base64", "string", "+//+Pj8=", "", "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="),
     ("base64-url-safe", "string", "-__-Pj8=", "", "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="),
     ("hex", "string", "fbfffe3e3f", "", "__debezium_unavailable_value")],
)  # fmt: skip
def test_binary_modes(mode: str, schema_type: str, value: str, empty: str, toast: str) -> None:
    m = mapping(column("bytea"), binary_handling_mode=mode)
    assert m.schema.to_json() == {"type": schema_type, "optional": False}
    assert m.convert("\\xfbfffe3e3f") == value
    assert m.convert("\\x") == empty
    assert m.zero == empty
    assert m.toast == toast
    assert encode_binary(b"\x00\x01\x02", mode) == ("000102" if mode == "hex" else "AAEC")


def test_unknown_types_are_their_text_as_bytes() -> None:
    # facts §3.4: 'fat <-> cat'::tsquery prints as 'fat' <-> 'cat'
    text = "'fat' <-> 'cat'"
    assert unknown_mapping(MappingOptions()).convert(text) == "J2ZhdCcgPC0+ICdjYXQn"
    assert unknown_mapping(MappingOptions(binary_handling_mode="base64-url-safe")).convert(text) == "J2ZhdCcgPC0-ICdjYXQn"
    assert unknown_mapping(MappingOptions(binary_handling_mode="hex")).convert(text) == "2766617427203c2d3e202763617427"
    assert map_type(column("tsquery"), MappingOptions()) is None
    assert map_type(column("tsquery"), MappingOptions(include_unknown_datatypes=True)) is not None


# -- bit strings ------------------------------------------------------------------------------------


def test_bit_one_is_boolean() -> None:
    m = mapping(column("bit", 1))
    assert m.schema.to_json() == {"type": "boolean", "optional": False}
    assert (m.convert("1"), m.convert("0"), m.zero) == (True, False, False)
    with pytest.raises(ConversionError, match="'2'"):
        m.convert("2")


@pytest.mark.parametrize(
    ("modifier", "text", "expected"),
    [(2, "11", "Aw=="), (7, "1000000", "QA=="), (2, "00", ""), (24, "000000110000001000000001", "AQID"),
     (64, "1" + "0" * 63, "AAAAAAAAAIA="), (-1, "101", "BQ=="), (-1, "111011010001000110000001000000001", "AQIj2gE="),
     (-1, "", "")],
)  # fmt: skip
def test_bits(modifier: int, text: str, expected: str) -> None:
    for type_name in ("bit", "varbit"):
        if type_name == "bit" and modifier < 0:
            continue
        m = mapping(column(type_name, modifier))
        assert m.convert(text) == expected  # facts §3.4: little-endian bytes of the value
        assert m.zero == ""


def test_bits_schema_and_errors() -> None:
    assert mapping(column("bit", 3)).schema.to_json() == {
        "type": "bytes", "optional": False, "name": "io.debezium.data.Bits", "version": 1, "parameters": {"length": "3"}}
    assert mapping(column("varbit")).schema.to_json()["parameters"] == {"length": "2147483647"}
    for bad in ("102", "1 0", "+1", "1_0"):
        with pytest.raises(ConversionError) as error:
            mapping(column("varbit")).convert(bad)
        assert repr(bad) in str(error.value)
