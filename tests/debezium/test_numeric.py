"""Integers, booleans, REAL/DOUBLE, NUMERIC in every decimal.handling.mode, and MONEY.

Expected values come from debezium-facts.md §3.2-§3.4 and from the real Debezium 3.6.3 connector
(``tests/conformance/test_scalar_types_conformance.py`` compares whole events; the values here are
the ones it showed). ``float32_vectors.tsv`` records Java 17's ``Float.toString`` for ~7000 floats
(``record_float32_vectors.py``).
"""

from __future__ import annotations

import base64
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.debezium.types import ColumnType, ConversionError, MappingOptions, ValueMapping, map_type
from sparkcdc.debezium.types.numeric import (
    encode_unscaled,
    java_float,
    java_float_text_value,
    json_float,
    numeric_modifier,
    parse_decimal,
    parse_money,
    plain_string,
)

VECTORS = Path(__file__).with_name("float32_vectors.tsv")


def column(name: str, modifier: int = -1) -> ColumnType:
    return ColumnType(oid=0, name=name, namespace="pg_catalog", modifier=modifier, declared_name=name)


def numeric(precision: int | None = None, scale: int = 0) -> ColumnType:
    """``numeric(p, s)`` with PostgreSQL 15's typmod packing (scale in 11 bits)."""
    if precision is None:
        return column("numeric")
    return column("numeric", ((precision << 16) | (scale & 0x7FF)) + 4)


def mapping(col: ColumnType, **options: Any) -> ValueMapping:
    result = map_type(col, MappingOptions(**options))
    assert result is not None
    return result


def unscaled(encoded: str) -> int:
    return int.from_bytes(base64.b64decode(encoded), "big", signed=True)


# -- integers and booleans -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "schema_type", "low", "high"),
    [("int2", "int16", -32768, 32767), ("int4", "int32", -2147483648, 2147483647),
     ("int8", "int64", -9223372036854775808, 9223372036854775807), ("oid", "int64", 0, 4294967295)],
)  # fmt: skip
def test_integer_limits(type_name: str, schema_type: str, low: int, high: int) -> None:
    m = mapping(column(type_name))
    assert m.schema.to_json()["type"] == schema_type
    assert (m.convert(str(low)), m.convert("0"), m.convert(str(high))) == (low, 0, high)
    assert m.zero == 0
    for bad in (str(low - 1), str(high + 1)):
        with pytest.raises(ConversionError, match=bad):
            m.convert(bad)


@pytest.mark.parametrize("text", ["", "1.5", "abc", " 1", "1_000", "+1", "0x10"])
@pytest.mark.parametrize("type_name", ["int2", "int4", "int8", "oid"])
def test_integers_reject_other_text(type_name: str, text: str) -> None:
    with pytest.raises(ConversionError) as error:
        mapping(column(type_name)).convert(text)
    assert repr(text) in str(error.value)


def test_booleans() -> None:
    m = mapping(column("bool"))
    assert (m.convert("t"), m.convert("f"), m.zero) == (True, False, False)
    with pytest.raises(ConversionError, match="'true'"):
        m.convert("true")


# -- REAL: Java's Float.toString --------------------------------------------------------------------


def _vectors() -> list[tuple[int, str]]:
    rows = []
    for line in VECTORS.read_text().splitlines():
        if line and not line.startswith("#"):
            bits, text = line.split("\t")
            rows.append((int(bits, 16), text))
    return rows


def _shortest_float32_text(value: float) -> str:
    """What PostgreSQL prints for a real (extra_float_digits >= 1): the shortest round-tripping text."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
            return text
    raise AssertionError(value)


def test_java_float_matches_recorded_java_output() -> None:
    vectors = _vectors()
    assert len(vectors) > 6000
    mismatches = [(f"{bits:08x}", text, java_float_text_value(bits)) for bits, text in vectors
                  if java_float_text_value(bits) != float(text)]  # fmt: skip
    assert mismatches == []
    # The sign is symmetric.
    for bits, text in vectors[:500]:
        assert java_float_text_value(bits | 0x80000000) == -float(text)


def test_java_float_from_postgres_text() -> None:
    for bits, text in _vectors()[::7]:
        value = struct.unpack("<I", struct.pack("<I", bits))[0]
        pg_text = _shortest_float32_text(struct.unpack("<f", struct.pack("<I", value))[0])
        assert java_float(pg_text) == float(text), (pg_text, text)


@pytest.mark.parametrize(
    ("pg_text", "java_text"),
    [("1e-45", "1.4E-45"), ("3.5559107e+08", "3.55591072E8"), ("1.6777216e+07", "1.6777216E7"), ("3.3", "3.3"),
     ("3.4028235e+38", "3.4028235E38"), ("-3.4028235e+38", "-3.4028235E38"), ("0.001", "0.001"), ("1e+10", "1.0E10"),
     ("5.236334e+10", "5.2363342E10"), ("1.1754944e-38", "1.17549435E-38"), ("100", "100.0")],
)  # fmt: skip
def test_java_float_examples(pg_text: str, java_text: str) -> None:
    assert java_float(pg_text) == float(java_text)


def test_real_specials_zero_and_errors() -> None:
    m = mapping(column("float4"))
    assert m.schema.to_json()["type"] == "float"
    assert [m.convert(t) for t in ("NaN", "Infinity", "-Infinity")] == ["NaN", "Infinity", "-Infinity"]
    negative_zero = m.convert("-0")
    assert negative_zero == 0.0 and str(negative_zero) == "-0.0"
    assert m.zero == 0.0
    for bad in ("abc", "", "1e39", "nan"):
        with pytest.raises(ConversionError, match=repr(bad)):
            m.convert(bad)


def test_double() -> None:
    m = mapping(column("float8"))
    assert [m.convert(t) for t in ("NaN", "Infinity", "-Infinity")] == ["NaN", "Infinity", "-Infinity"]
    assert (m.convert("5e-324"), m.convert("1.7976931348623157e+308"), m.convert("-0"), m.convert("0.1")) == (
        5e-324, 1.7976931348623157e308, -0.0, 0.1)
    assert json_float("4.44") == 4.44
    with pytest.raises(ConversionError, match="'x1'"):
        m.convert("x1")


# -- NUMERIC ----------------------------------------------------------------------------------------


def test_numeric_modifier() -> None:
    assert numeric_modifier(-1) == (None, None)
    assert numeric_modifier(numeric(3, 2).modifier) == (3, 2)
    assert numeric_modifier(numeric(1000, 0).modifier) == (1000, 0)
    # Negative scales (PostgreSQL 15) read as the unsigned 11-bit field, as pgjdbc and Debezium do.
    assert numeric_modifier(numeric(3, -1).modifier) == (3, 2047)
    assert numeric_modifier(numeric(5, -1000).modifier) == (5, 1048)


def test_parse_decimal_is_exact() -> None:
    assert parse_decimal("-12.30") == (-1230, 2)
    assert parse_decimal("0") == (0, 0)
    digits = "9" * 6000 + "." + "9" * 300  # more digits than int() converts
    assert parse_decimal(digits) == (int(Decimal(digits.replace(".", ""))), 300)
    for bad in ("", "1e5", "NaN", "1.", ".5", "--1", "1,5", " 1"):
        with pytest.raises(ConversionError, match=repr(bad)):
            parse_decimal(bad)


def test_encode_unscaled_is_java_big_integer_bytes() -> None:
    cases = {0: "AA==", 1: "AQ==", 127: "fw==", 128: "AIA=", -1: "/w==", -128: "gA==", -129: "/38=", 110: "bg==", 123412: "AeIU"}
    assert {value: encode_unscaled(value) for value in cases} == cases


def test_precise_fixed_scale() -> None:
    m = mapping(numeric(3, 2))
    schema = m.schema.to_json()
    assert schema["name"] == "org.apache.kafka.connect.data.Decimal"
    assert schema["parameters"] == {"scale": "2", "connect.decimal.precision": "3"}
    assert m.convert("1.10") == "bg=="  # facts §3.3
    assert unscaled(m.convert("-9.99")) == -999
    assert unscaled(m.convert("0.00")) == 0
    assert m.convert("NaN") is None  # not representable in precise mode
    assert m.zero == "AA=="
    # Exact beyond 28 digits (no decimal context rounding).
    big = mapping(numeric(38, 10))
    assert unscaled(big.convert("-12345678901234567890.0123456789")) == -123456789012345678900123456789
    assert big.convert("-12345678901234567890.0123456789") == "/nEW8Ak8jB8R8/sq6w=="  # Debezium 3.6.3
    with pytest.raises(ConversionError, match="'1.1.1'"):
        m.convert("1.1.1")


def test_negative_scale_reads_as_2047() -> None:
    m = mapping(numeric(3, -1))
    assert m.schema.to_json()["parameters"] == {"scale": "2047", "connect.decimal.precision": "3"}
    assert unscaled(m.convert("1230")) == 1230 * 10**2047
    assert unscaled(m.convert("-10")) == -(10**2048)
    assert mapping(numeric(3, -1), decimal_handling_mode="string").convert("1230") == "1230." + "0" * 2047
    assert mapping(numeric(3, -1), decimal_handling_mode="string").zero == "0." + "0" * 2047
    assert mapping(numeric(3, -1), decimal_handling_mode="double").convert("1230") == 1230.0


def test_precise_variable_scale_strips_trailing_zeros() -> None:
    m = mapping(numeric())
    assert m.schema.to_json()["name"] == "io.debezium.data.VariableScaleDecimal"
    assert m.convert("10.1111") == {"scale": 4, "value": "AYr3"}  # facts §3.3
    assert m.convert("22.2222") == {"scale": 4, "value": "A2QO"}
    assert m.convert("10") == {"scale": 0, "value": "Cg=="}
    assert m.convert("1.000") == {"scale": 0, "value": "AQ=="}
    assert m.convert("0.0000") == {"scale": 0, "value": "AA=="}
    assert m.convert("-0.0000001") == {"scale": 7, "value": "/w=="}
    assert m.convert("1000") == {"scale": 0, "value": "A+g="}  # never a negative scale
    assert m.convert("1.50") == {"scale": 1, "value": "Dw=="}
    value = "123456789012345678901234567890.123456789012345678901234567890"
    assert m.convert(value) == {"scale": 29, "value": "Afd+5uOsaXA1hlpdOME4xULa4ZgorjmBFQ=="}  # Debezium 3.6.3
    assert [m.convert(t) for t in ("NaN", "Infinity", "-Infinity")] == [None, None, None]
    assert m.zero == {"scale": 0, "value": "AA=="}


def test_string_mode() -> None:
    fixed = mapping(numeric(3, 2), decimal_handling_mode="string")
    assert fixed.schema.to_json() == {"type": "string", "optional": False}
    assert (fixed.convert("1.10"), fixed.convert("-0.05"), fixed.zero) == ("1.10", "-0.05", "0.00")
    variable = mapping(numeric(), decimal_handling_mode="string")
    assert (variable.convert("1.000"), variable.convert("10.1111"), variable.zero) == ("1.000", "10.1111", "0")
    specials = [variable.convert(t) for t in ("NaN", "Infinity", "-Infinity")]
    assert specials == ["NAN", "POSITIVE_INFINITY", "NEGATIVE_INFINITY"]
    assert fixed.convert("NaN") == "NAN"
    with pytest.raises(ConversionError, match="'abc'"):
        variable.convert("abc")


def test_double_mode() -> None:
    m = mapping(numeric(6, 4), decimal_handling_mode="double")
    assert m.schema.to_json() == {"type": "double", "optional": False}
    assert (m.convert("22.2200"), m.convert("NaN"), m.convert("-Infinity"), m.zero) == (22.22, "NaN", "-Infinity", 0.0)


def test_plain_string() -> None:
    assert plain_string(0, 0) == "0"
    assert plain_string(5, 3) == "0.005"
    assert plain_string(-5, 3) == "-0.005"
    assert plain_string(123, -2) == "12300"
    assert plain_string(-1230, 1) == "-123.0"
    huge = "9" * 6000
    assert plain_string(int(Decimal(huge)), 2) == huge[:-2] + "." + huge[-2:]
    assert mapping(numeric(), decimal_handling_mode="string").convert(huge) == huge


# -- MONEY ------------------------------------------------------------------------------------------


def test_parse_money() -> None:
    assert parse_money("$1,234.11") == (123411, 2)
    assert parse_money("-$1,234.11") == (-123411, 2)
    assert parse_money("-$92,233,720,368,547,758.08") == (-9223372036854775808, 2)
    assert parse_money("$0.00") == (0, 2)
    for bad in ("", "abc", "$1,23.00", "1.2.3", "$-1"):
        with pytest.raises(ConversionError, match=repr(bad).replace("$", r"\$")):
            parse_money(bad)


def test_money_precise() -> None:
    m = mapping(column("money"))
    assert m.schema.to_json()["parameters"] == {"scale": "2"}
    assert (m.convert("$1,234.11"), m.convert("-$1,234.11"), m.zero) == ("AeIT", "/h3t", "AA==")  # facts §3.4
    assert unscaled(m.convert("$92,233,720,368,547,758.07")) == 9223372036854775807


@pytest.mark.parametrize(("text", "expected"), [("$123.46", 1235), ("$0.25", 3), ("-$0.25", -3), ("$0.05", 1), ("-$0.04", 0)])
def test_money_fraction_digits_round_half_up(text: str, expected: int) -> None:
    m = mapping(column("money"), money_fraction_digits=1)
    assert m.schema.to_json()["parameters"] == {"scale": "1"}
    assert unscaled(m.convert(text)) == expected


def test_money_string_and_double() -> None:
    s = mapping(column("money"), decimal_handling_mode="string", money_fraction_digits=1)
    assert (s.convert("$1,000,000.50"), s.convert("-$0.01"), s.zero) == ("1000000.50", "-0.01", "0.0")
    assert mapping(column("money"), decimal_handling_mode="string", money_fraction_digits=0).zero == "0"
    d = mapping(column("money"), decimal_handling_mode="double")
    assert (d.convert("$123.45"), d.convert("-$92,233,720,368,547,758.08"), d.zero) == (123.45, -9.223372036854776e16, 0.0)
