"""Java's number and date semantics and Kafka's field paths, as the Kafka transforms use them.

Every expected value here was printed by the JVM the conformance suite runs (Java 17, Kafka 4.3):
``Double.toString``, ``Float.toString``, ``BigDecimal``, ``Float.parseFloat``/``Double.parseDouble``,
``SimpleDateFormat`` in UTC and ``SingleFieldPath`` (V2).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest

from sparkcdc.debezium.transforms import TransformConfigError
from sparkcdc.debezium.transforms.field_paths import parse_field_path
from sparkcdc.debezium.transforms.java_dates import DatePatternError, compile_date_pattern
from sparkcdc.debezium.transforms.java_numbers import (
    big_decimal_text,
    java_double_text,
    java_float_text,
    narrow_float,
    parse_big_decimal,
    parse_java_double,
    parse_java_float,
    parse_java_integer,
    round_to_float32,
    wrap,
)

DOUBLES = {
    0.1: "0.1", 1.0: "1.0", 10000000.0: "1.0E7", 9999999.0: "9999999.0", 0.001: "0.001", 0.000999: "9.99E-4",
    1e21: "1.0E21", 1e23: "9.999999999999999E22", 0.002: "0.002", 5e-324: "4.9E-324",
    1.7976931348623157e308: "1.7976931348623157E308", 123456789.125: "1.23456789125E8", -0.0: "-0.0",
    1 / 3: "0.3333333333333333", 2.0**63: "9.223372036854776E18", 100.0: "100.0", 1234567.0: "1234567.0", 4.35: "4.35",
    2.2250738585072014e-308: "2.2250738585072014E-308", math.inf: "Infinity", math.nan: "NaN",
}

FLOATS = {
    0x3DCCCCCD: "0.1", 0x3F800000: "1.0", 0x4B189680: "1.0E7", 0x501502F9: "1.0E10", 0x00000001: "1.4E-45",
    0x7F7FFFFF: "3.4028235E38", 0x3EAAAAAB: "0.33333334", 0x40A00000: "5.0", 0x4E6E6B28: "1.0E9", 0x33D6BF95: "1.0E-7",
    0x80000000: "-0.0",
}


@pytest.mark.parametrize("value, text", list(DOUBLES.items()), ids=list(DOUBLES.values()))
def test_double_to_string_is_java_17s(value: float, text: str) -> None:
    assert java_double_text(value) == text


@pytest.mark.parametrize("bits, text", list(FLOATS.items()), ids=list(FLOATS.values()))
def test_float_to_string_is_java_17s(bits: int, text: str) -> None:
    assert java_float_text(struct.unpack("<f", struct.pack("<I", bits))[0]) == text


@pytest.mark.parametrize("unscaled, scale, text", [
    (1234, 2, "12.34"), (-50, 2, "-0.50"), (1, 8, "1E-8"), (100000, 8, "0.00100000"), (-12, 8, "-1.2E-7"),
    (12300000000, 8, "123.00000000"), (1, 6, "0.000001"), (1, 7, "1E-7"), (300, 0, "300"), (5, -3, "5E+3"), (0, 2, "0.00"),
])
def test_big_decimal_to_string(unscaled: int, scale: int, text: str) -> None:
    assert big_decimal_text(unscaled, scale) == text


@pytest.mark.parametrize("text, expected", [
    ("1e3", (1, -3)), ("+5", (5, 0)), ("-7.9", (-79, 1)), (".5", (5, 1)), ("5.", (5, 0)), ("1E+2", (1, -2)),
    ("0.00", (0, 2)), ("-1.5e1", (-15, 0)), ("٣", (3, 0)), (" 5", None), ("NaN", None), ("1_0", None), ("", None), (".", None),
    ("e5", None),
])
def test_big_decimal_parsing(text: str, expected: tuple[int, int] | None) -> None:
    assert parse_big_decimal(text) == expected


@pytest.mark.parametrize("text, as_float, as_double", [
    ("1.00000005960464477539062501", 1.0000001192092896, 1.0000000596046448),  # one rounding, not two
    ("1.00000005960464477539062499", 1.0, 1.0000000596046448),
    ("1e-46", 0.0, 1e-46), ("0.7e-45", 0.0, 7e-46), ("1.4e-45", 1.401298464324817e-45, 1.4e-45),
    ("3.4028236e38", math.inf, 3.4028236e38), ("0x1.fffffeP+127", 3.4028234663852886e38, 3.4028234663852886e38),
    (" 1.5 ", 1.5, 1.5), ("\t2", 2.0, 2.0), ("1.5F", 1.5, 1.5), ("1.5D", 1.5, 1.5), ("-.5e-1", -0.05000000074505806, -0.05),
    ("0x.8p1", 1.0, 1.0), ("0X1P-2f", 0.25, 0.25), ("+Infinity", math.inf, math.inf), ("1e400", math.inf, math.inf),
    ("1.5e", None, None), ("e5", None, None), ("infinity", None, None), ("1,5", None, None), ("1_000", None, None),
    ("٣", None, None), ("0x10", None, None),
])
def test_float_parsing_is_javas(text: str, as_float: float | None, as_double: float | None) -> None:
    assert parse_java_float(text) == as_float
    assert parse_java_double(text) == as_double


def test_nan_and_negative_zero_parse_as_java_parses_them() -> None:
    assert math.isnan(parse_java_float("-NaN") or 0.0) and math.isnan(parse_java_double("NaN") or 0.0)
    negative_zero = parse_java_double("-0")
    assert negative_zero == 0 and math.copysign(1, negative_zero) == -1


@pytest.mark.parametrize("text, bits, expected", [
    ("127", 8, 127), ("128", 8, None), ("-128", 8, -128), ("+5", 32, 5), ("007", 32, 7), ("٣", 32, 3), ("１２", 32, 12),
    ("  7", 32, None), ("1.0", 64, None), ("1e3", 64, None), ("+-5", 32, None), ("9223372036854775807", 64, 9223372036854775807),
    ("9223372036854775808", 64, None), ("", 32, None),
])
def test_integer_parsing_is_javas(text: str, bits: int, expected: int | None) -> None:
    assert parse_java_integer(text, bits) == expected


@pytest.mark.parametrize("value, bits, expected", [
    (3.7, 8, 3), (-3.7, 8, -3), (1e10, 8, -1), (1e10, 16, -1), (1e10, 32, 2147483647), (1e10, 64, 10000000000),
    (math.nan, 32, 0), (1e20, 64, 9223372036854775807), (-1e20, 8, 0), (-1e20, 32, -2147483648), (200.7, 8, -56),
    (70000.5, 16, 4464), (math.inf, 8, -1), (-math.inf, 64, -9223372036854775808),
])
def test_floats_narrow_as_java_narrows_them(value: float, bits: int, expected: int) -> None:
    assert narrow_float(value, bits) == expected


def test_integers_wrap() -> None:
    assert (wrap(300, 8), wrap(-70000, 16), wrap(2**40 + 5, 32), wrap(-1, 64)) == (44, -4464, 5, -1)


@pytest.mark.parametrize("value, expected", [
    (0.1, 0.10000000149011612), (1 / 3, 0.3333333432674408), (123456789, 123456792.0), (1e300, math.inf),
    (Fraction(1, 2**150), 0.0), (Fraction(3, 2**150), 1.401298464324817e-45 * 2), (-1e-50, -0.0),
    (Fraction(340282356779733661637539395458142568448), math.inf),  # half an ulp above the largest float rounds up
])
def test_round_to_float32_rounds_once(value: Fraction | float, expected: float) -> None:
    assert round_to_float32(value) == expected


# -- SimpleDateFormat -------------------------------------------------------------------------------

PATTERN = "G yyyy yy YYYY Y MMMM MMM MM LLL dd D w W F E EEEE u a HH k K h mm ss SSS z zzzz Z XXX 'at' ''"
DATES = {
    0: "AD 1970 70 1970 1970 January Jan 01 Jan 01 1 1 1 1 Thu Thursday 4 AM 00 24 0 12 00 00 000 UTC "
       "Coordinated Universal Time +0000 Z at '",
    1577934245123: "AD 2020 20 2020 2020 January Jan 01 Jan 02 2 1 1 1 Thu Thursday 4 AM 03 3 3 3 04 05 123 UTC "
                   "Coordinated Universal Time +0000 Z at '",
    -1: "AD 1969 69 1970 1970 December Dec 12 Dec 31 365 1 5 5 Wed Wednesday 3 PM 23 23 11 11 59 59 999 UTC "
        "Coordinated Universal Time +0000 Z at '",
    # The day before the Gregorian calendar: Julian October 4th, 1582.
    -12219292800001: "AD 1582 82 1582 1582 October Oct 10 Oct 04 277 40 1 1 Thu Thursday 4 PM 23 23 11 11 59 59 999 UTC "
                     "Coordinated Universal Time +0000 Z at '",
    -62135769600000: "AD 0001 01 0001 1 January Jan 01 Jan 01 1 1 1 1 Sat Saturday 6 AM 00 24 0 12 00 00 000 UTC "
                     "Coordinated Universal Time +0000 Z at '",
    -62198755200000: "BC 0002 02 -0001 -1 January Jan 01 Jan 03 3 1 1 1 Fri Friday 5 AM 00 24 0 12 00 00 000 UTC "
                     "Coordinated Universal Time +0000 Z at '",
    1609372800000: "AD 2020 20 2021 2021 December Dec 12 Dec 31 366 1 5 5 Thu Thursday 4 AM 00 24 0 12 00 00 000 UTC "
                   "Coordinated Universal Time +0000 Z at '",
    253402300799999: "AD 9999 99 10000 10000 December Dec 12 Dec 31 365 1 5 5 Fri Friday 5 PM 23 23 11 11 59 59 999 UTC "
                     "Coordinated Universal Time +0000 Z at '",
    951782400000: "AD 2000 00 2000 2000 February Feb 02 Feb 29 60 10 5 5 Tue Tuesday 2 AM 00 24 0 12 00 00 000 UTC "
                  "Coordinated Universal Time +0000 Z at '",
}


@pytest.mark.parametrize("epoch_ms", sorted(DATES))
def test_simple_date_format_in_utc(epoch_ms: int) -> None:
    assert compile_date_pattern(PATTERN)(epoch_ms) == DATES[epoch_ms]


@pytest.mark.parametrize("pattern, message", [
    ("b", "Illegal pattern character 'b'"), ("yyyy'", "Unterminated quote"), ("XXXX", "invalid ISO 8601 format: length=4"),
])
def test_patterns_java_refuses(pattern: str, message: str) -> None:
    with pytest.raises(DatePatternError, match=message):
        compile_date_pattern(pattern)


def test_quotes_and_widths() -> None:
    format_ = compile_date_pattern("'abc''def' yyyyy SSSS ''")
    assert format_(1577934245123) == "abc'def 02020 0123 '"


# -- field paths -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path, steps", [
    ("a", ["a"]), ("a.b", ["a", "b"]), ("`a.b`", ["a.b"]), ("`a.b`.c", ["a.b", "c"]), ("a.`b.c`", ["a", "b.c"]),
    ("`a`b`.c", ["a`b", "c"]), ("a`.b", ["a`", "b"]), ("`a\\``.b", ["a\\`", "b"]), ("\\`a.b", ["\\`a", "b"]),
    ("a\\`.b`", ["a\\`", "b`"]), ("`a.b\\``", ["a.b\\`"]), ("a..b", ["a", "", "b"]), (".a", ["", "a"]), ("a.", ["a", ""]),
    ("", []), ("``", [""]), ("`a``", ["a`"]), ("`.`", ["."]), ("a.``.b", ["a", "", "b"]), ("`a`.`b`", ["a", "b"]),
    ("a.`b`c`.d", ["a", "b`c", "d"]), ("``a``", ["`a`"]), ("`a.b``.c", ["a.b`", "c"]), ("a`b`.c", ["a`b`", "c"]),
])
def test_v2_paths_split_as_kafka_splits_them(path: str, steps: list[str]) -> None:
    assert list(parse_field_path("p", path, "v2").steps) == steps
    assert parse_field_path("p", path, "v1").steps == (path,)


@pytest.mark.parametrize("path, position", [("a.`b", 2), ("`a.b\\`", 0), ("`a` .b", 0), ("a.`b`c.d", 2), ("`a\\\\`.b", 0)])
def test_v2_paths_with_an_open_backtick_are_refused(path: str, position: int) -> None:
    with pytest.raises(TransformConfigError) as caught:
        parse_field_path("transforms.x.field", path, "v2")
    assert caught.value.property == "transforms.x.field"
    assert f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position {position}" \
        in str(caught.value)
