"""Integers, floating point, booleans, NUMERIC/DECIMAL in every decimal.handling.mode, and MONEY.

What Debezium 3.6.3 does, and so what the converters here reproduce (checked against the real
connector, see ``tests/conformance/test_scalar_types_conformance.py``):

* REAL values are Java ``float``s that JsonConverter prints with ``Float.toString``, and JSON readers
  parse that decimal as a double. Java 17's ``Float.toString`` is not the shortest representation
  PostgreSQL prints (``1e-45`` becomes ``1.4E-45``, ``3.5559107e+08`` becomes ``3.55591072E8``), so
  :func:`java_float_text_value` reproduces its digit generation exactly.
* NUMERIC with a scale (``numeric(p, s)``) is always rescaled to the column's scale: a Decimal's
  unscaled value, a ``string`` mode text and the NOT NULL fallback all carry exactly ``s``
  fractional digits. PostgreSQL 15 allows negative scales, which pgjdbc and Debezium read as the
  11-bit field unsigned (``numeric(3,-1)`` has scale 2047), so such values carry 2047 zeros.
* Unconstrained NUMERIC in ``precise`` mode is a VariableScaleDecimal of the value with its
  trailing zeros stripped (``1.000`` -> scale 0, value 1), never with a negative scale; NaN and
  ±Infinity are null there. In ``string`` mode the value's own text is kept (``1.000``).
* MONEY uses ``money.fraction.digits`` as its scale in ``precise`` mode (HALF_UP rounding); in
  ``string`` mode the value keeps PostgreSQL's two digits but the NOT NULL fallback has
  ``money.fraction.digits`` of them.
"""

from __future__ import annotations

import base64
import functools
import math
import re
import struct
from decimal import Decimal
from typing import Final

from ..connect import ConnectSchema, boolean, bytes_, float32, float64, int16, int32, int64, string
from ..connect import struct as struct_schema
from .base import ColumnType, ConversionError, MappingOptions, ValueMapping

__all__ = [
    "DECIMAL_NAME",
    "NEGATIVE_SCALE_BITS",
    "VARIABLE_SCALE_DECIMAL_NAME",
    "decimal_schema",
    "encode_unscaled",
    "java_float",
    "java_float_text_value",
    "json_float",
    "map_numeric_type",
    "numeric_modifier",
    "parse_decimal",
]

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL_NAME = "io.debezium.data.VariableScaleDecimal"

#: PostgreSQL 15 stores a numeric scale in 11 bits of the type modifier; pgjdbc reads the field as
#: unsigned, so a negative scale s shows up as ``s & NEGATIVE_SCALE_BITS`` (-1 -> 2047).
NEGATIVE_SCALE_BITS = 0x7FF

# JsonConverter (Jackson) writes non-finite doubles and floats as quoted strings.
_NON_FINITE: Final = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}

# PostgreSQL's numeric output: optional sign, digits, optional fraction (never an exponent).
_NUMERIC_TEXT = re.compile(r"-?\d+(?:\.\d+)?")


def json_float(text: str) -> float | str:
    """PostgreSQL double text -> the JSON value Jackson writes (non-finite values as strings).

    Any decimal that rounds to the same double is equivalent once read back, so the value itself
    is returned; Java's ``Double.toString`` digits need not be reproduced.
    """
    special = _NON_FINITE.get(text)
    if special is not None:
        return special
    try:
        return float(text)
    except ValueError:
        raise ConversionError(f"{text!r} is not a floating point number") from None


# -- Java's Float.toString ----------------------------------------------------------------------
#
# Java 17's Float.toString (sun.misc.FloatingDecimal) generates digits with a stopping rule based
# on half an ulp, forces a second digit in scientific notation, and prints integral floats below
# 2^63 from the exact integer minus "insignificant" trailing digits. The decimal it picks is not
# always PostgreSQL's shortest one, and read back as a double it is a different number, so the
# algorithm is reproduced below (a re-derivation, verified against the JVM on millions of floats
# by tests/debezium/test_numeric.py's vectors).

_EXP_SHIFT = 52  # the algorithm works on the float's bits laid out as a double's fraction
_FIVE_BITS = tuple(0 if i == 0 else (5**i).bit_length() for i in range(27))


def _wrap(value: int, bits: int) -> int:
    """Two's-complement overflow of a Java int (32) or long (64)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _estimate_decimal_exponent(fraction_bits: int, binary_exponent: int) -> int:
    # floor(log10(value)), estimated in doubles exactly as Java does (the error is corrected later).
    mantissa = struct.unpack("<d", struct.pack("<Q", 0x3FF0000000000000 | (fraction_bits & 0xFFFFFFFFFFFFF)))[0]
    estimate = (mantissa - 1.5) * 0.289529654 + 0.176091259 + float(binary_exponent) * 0.301029995663981
    return math.floor(estimate)


def _java_float_digits(binary_exponent: int, fraction_bits: int, significant_bits: int) -> tuple[int, int]:
    """(digits, exponent) of Java's decimal for a positive float: the value is ``digits * 10**exponent``."""
    tail_zeros = (fraction_bits & -fraction_bits).bit_length() - 1
    fraction_count = _EXP_SHIFT + 1 - tail_zeros
    tiny_bits = max(0, fraction_count - binary_exponent - 1)
    if tiny_bits == 0 and -21 <= binary_exponent <= 62:
        # An integer: its digits, less those below the float's precision (rounded half up).
        integer = fraction_bits << (binary_exponent - _EXP_SHIFT) if binary_exponent >= _EXP_SHIFT else (
            fraction_bits >> (_EXP_SHIFT - binary_exponent))
        p2 = binary_exponent - significant_bits - 1
        insignificant = int(p2 * math.log10(2)) if binary_exponent > significant_bits and 1 < p2 < 64 else 0
        if insignificant:
            power = 10**insignificant
            integer, residue = divmod(integer, power)
            if residue >= power >> 1:
                integer += 1
        return integer, insignificant

    decimal_exponent = _estimate_decimal_exponent(fraction_bits, binary_exponent)
    b5 = max(0, -decimal_exponent)
    b2 = b5 + tiny_bits + binary_exponent
    s5 = max(0, decimal_exponent)
    s2 = s5 + tiny_bits
    m5 = b5
    m2 = b2 - significant_bits
    fraction_bits >>= tail_zeros
    b2 -= fraction_count - 1
    common = min(b2, s2)
    b2 -= common
    s2 -= common
    m2 -= common
    if fraction_count == 1:  # below a power of two the next float is only half as far
        m2 -= 1
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0
    b_bits = fraction_count + b2 + (_FIVE_BITS[b5] if b5 < len(_FIVE_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_FIVE_BITS[s5 + 1] if s5 + 1 < len(_FIVE_BITS) else (s5 + 1) * 3)

    digits: list[int] = []
    if b_bits < 64 and ten_s_bits < 64:
        # Java computes in ints or longs here: overflow included, and a strict "high" test.
        width = 32 if b_bits < 32 and ten_s_bits < 32 else 64
        b = _wrap((fraction_bits * 5**b5) << b2, width)
        s = _wrap(5**s5 << s2, width)
        m = _wrap(5**m5 << m2, width)
        tens = _wrap(s * 10, width)
        q, b = divmod(b, s)
        b = _wrap(10 * b, width)
        m = _wrap(m * 10, width)
        low = b < m
        high = _wrap(b + m, width) > tens
        if q == 0 and not high:
            decimal_exponent -= 1
        else:
            digits.append(q)
        if decimal_exponent < -3 or decimal_exponent >= 8:
            low = high = False  # scientific notation: at least one digit after the point
        while not low and not high:
            q, b = divmod(b, s)
            b = _wrap(10 * b, width)
            m = _wrap(m * 10, width)
            if m > 0:
                low = b < m
                high = _wrap(b + m, width) > tens
            else:
                low = high = True
            digits.append(q)
        low_difference = _wrap((b << 1) - tens, width)
    else:
        # Arbitrary precision: the "high" test is not strict here.
        s = 5**s5 << s2
        b = (fraction_bits * 5**b5) << b2
        m = 10 * (5**m5 << m2)
        tens = 10 * s
        q, b = divmod(b, s)
        b *= 10
        low = b < m
        high = tens <= b + m
        if q == 0 and not high:
            decimal_exponent -= 1
        else:
            digits.append(q)
        if decimal_exponent < -3 or decimal_exponent >= 8:
            low = high = False
        while not low and not high:
            q, b = divmod(b, s)
            b *= 10
            m *= 10
            low = b < m
            high = tens <= b + m
            digits.append(q)
        low_difference = (b << 1) - tens if high and low else 0

    value = 0
    for digit in digits:
        value = value * 10 + digit
    if high and (not low or low_difference > 0 or (low_difference == 0 and digits[-1] & 1)):
        value += 1  # round the last digit up (a carry only lengthens the digits)
    return value, decimal_exponent + 1 - len(digits)


def _java_binary_digits(bits: int, fraction_width: int, exponent_width: int) -> tuple[int, int]:
    """The decimal digits and exponent Java 17 prints for the finite, non-zero IEEE 754 binary value
    with ``bits`` (its sign left out), of the format with these field widths."""
    fraction = bits & ((1 << fraction_width) - 1)
    biased = (bits >> fraction_width) & ((1 << exponent_width) - 1)
    if biased == (1 << exponent_width) - 1:
        raise ValueError("NaN and infinities have no digits")
    width = 1 + exponent_width + fraction_width
    if biased == 0:  # subnormal: normalise the fraction, as FloatingDecimal does
        leading = width - fraction.bit_length()
        shift = leading - exponent_width
        fraction <<= shift
        biased = 1 - shift
        significant = width - leading
    else:
        fraction |= 1 << fraction_width
        significant = fraction_width + 1
    bias = (1 << (exponent_width - 1)) - 1
    return _java_float_digits(biased - bias, fraction << (_EXP_SHIFT - fraction_width), significant)


def java_float32_digits(bits: int) -> tuple[int, int]:
    """The decimal digits (an integer) and exponent of Java 17's ``Float.toString`` of the finite,
    non-zero float with ``bits`` (its sign left out)."""
    return _java_binary_digits(bits, 23, 8)


def java_float64_digits(bits: int) -> tuple[int, int]:
    """The decimal digits (an integer) and exponent of Java 17's ``Double.toString`` of the finite,
    non-zero double with ``bits`` (its sign left out)."""
    return _java_binary_digits(bits, 52, 11)


def java_float_text_value(bits: int) -> float:
    """The double a JSON reader gets from Java 17's ``Float.toString`` of the float with ``bits``."""
    negative = bits >> 31
    if bits & 0x7FFFFFFF == 0:
        return -0.0 if negative else 0.0
    digits, exponent = java_float32_digits(bits)
    value = float(f"{digits}e{exponent}")
    return -value if negative else value


@functools.lru_cache(maxsize=8192)  # ~5 us per uncached value; columns repeat values
def java_float(text: str) -> float | str:
    """PostgreSQL real text -> the JSON value of Debezium's float: what Java prints, read back.

    The text is rounded to a float first (PostgreSQL prints reals exactly enough for that).
    """
    special = _NON_FINITE.get(text)
    if special is not None:
        return special
    try:
        bits = struct.unpack("<I", struct.pack("<f", float(text)))[0]
    except (ValueError, OverflowError):
        bits = 0x7F800000
    if bits & 0x7F800000 == 0x7F800000:  # not a number's text, or beyond a float's range
        raise ConversionError(f"{text!r} is not a real (float4) number")
    return java_float_text_value(bits)


# -- NUMERIC ----------------------------------------------------------------------------------


def encode_unscaled(unscaled: int) -> str:
    """Base64 of the big-endian two's-complement bytes of ``unscaled`` (Java's BigInteger.toByteArray)."""
    bits = unscaled.bit_length() if unscaled >= 0 else (-unscaled - 1).bit_length()
    return base64.b64encode(unscaled.to_bytes(bits // 8 + 1, "big", signed=True)).decode("ascii")


def decimal_schema(scale: int, precision: int | None = None) -> ConnectSchema:
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return bytes_(name=DECIMAL_NAME, version=1).with_parameters(parameters)


def _variable_scale_schema() -> ConnectSchema:
    return struct_schema(
        [("scale", int32()), ("value", bytes_())],
        name=VARIABLE_SCALE_DECIMAL_NAME,
        version=1,
        doc="Variable scaled decimal",
    )


# Python refuses int <-> str conversions beyond 4300 digits; a numeric can have 147455.
_INT_TEXT_LIMIT = 4000


def _int(digits: str) -> int:
    return int(digits) if len(digits) <= _INT_TEXT_LIMIT else int(Decimal(digits))


def _digits(value: int) -> str:
    text = str(Decimal(value)) if value.bit_length() > 3 * _INT_TEXT_LIMIT else str(value)
    return text


def parse_decimal(text: str) -> tuple[int, int]:
    """PostgreSQL numeric text -> (unscaled, scale), exactly: ``-12.30`` -> (-1230, 2)."""
    if not _NUMERIC_TEXT.fullmatch(text):
        raise ConversionError(f"{text[:60]!r} is not a decimal number")
    point = text.find(".")
    if point < 0:
        return _int(text), 0
    return _int(text[:point] + text[point + 1 :]), len(text) - point - 1


def _rescale(unscaled: int, scale: int, target: int) -> int:
    """The unscaled value at scale ``target``; rounding (HALF_UP) when digits are dropped."""
    if target >= scale:
        return unscaled * 10 ** (target - scale)
    divisor = 10 ** (scale - target)
    quotient, remainder = divmod(abs(unscaled), divisor)
    if 2 * remainder >= divisor:
        quotient += 1
    return -quotient if unscaled < 0 else quotient


def plain_string(unscaled: int, scale: int) -> str:
    """Java's ``BigDecimal.toPlainString`` for a non-negative scale."""
    digits = _digits(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    if scale <= 0:
        return sign + digits + "0" * -scale
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def numeric_modifier(modifier: int) -> tuple[int | None, int | None]:
    """``numeric(p, s)`` typmod -> (precision, scale) as pgjdbc and Debezium read it; (None, None) when unconstrained.

    The scale is the low 16 bits unsigned, so a negative scale (PostgreSQL 15+, 11 bits) reads as
    ``s & 0x7FF`` (Debezium's quirk: ``numeric(3,-1)`` has scale 2047).
    """
    if modifier < 4:
        return None, None
    packed = modifier - 4
    return (packed >> 16) & 0xFFFF, packed & 0xFFFF


_SPECIAL_STRINGS = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}


def _decimal_mapping(precision: int | None, scale: int | None, options: MappingOptions) -> ValueMapping:
    mode = options.decimal_handling_mode
    if mode == "double":
        return ValueMapping(float64(), json_float, zero=0.0)
    if mode == "string":
        if scale is None:
            def to_string(text: str) -> str:
                special = _SPECIAL_STRINGS.get(text)
                if special is not None:
                    return special
                parse_decimal(text)  # validates
                return text

            return ValueMapping(string(), to_string, zero="0")
        column_scale = scale

        def to_scaled_string(text: str) -> str:
            special = _SPECIAL_STRINGS.get(text)
            if special is not None:
                return special
            unscaled, value_scale = parse_decimal(text)
            if value_scale == column_scale:
                return text
            return plain_string(_rescale(unscaled, value_scale, column_scale), column_scale)

        return ValueMapping(string(), to_scaled_string, zero=plain_string(0, column_scale))
    if scale is None:
        def to_variable(text: str) -> dict[str, object] | None:
            if text in _SPECIAL_STRINGS:
                return None  # not representable: Debezium emits null
            unscaled, value_scale = parse_decimal(text)
            while value_scale > 0 and unscaled % 10 == 0:  # BigDecimal.stripTrailingZeros, never below scale 0
                unscaled //= 10
                value_scale -= 1
            return {"scale": value_scale, "value": encode_unscaled(unscaled)}

        return ValueMapping(_variable_scale_schema(), to_variable, zero={"scale": 0, "value": encode_unscaled(0)})

    fixed_scale = scale

    def to_fixed(text: str) -> str | None:
        if text in _SPECIAL_STRINGS:
            return None
        unscaled, value_scale = parse_decimal(text)
        return encode_unscaled(_rescale(unscaled, value_scale, fixed_scale))

    return ValueMapping(decimal_schema(fixed_scale, precision), to_fixed, zero=encode_unscaled(0))


# -- MONEY ------------------------------------------------------------------------------------

_MONEY_TEXT = re.compile(r"(-)?\$?((?:\d{1,3}(?:,\d{3})*|\d+)(?:\.\d+)?)")


def parse_money(text: str) -> tuple[int, int]:
    """``$1,234.11`` / ``-$1,234.11`` (``lc_monetary=C``) -> (unscaled, scale)."""
    match = _MONEY_TEXT.fullmatch(text)
    if not match:
        raise ConversionError(f"{text!r} is not a money amount")
    unscaled, scale = parse_decimal(match.group(2).replace(",", ""))
    return (-unscaled if match.group(1) else unscaled), scale


def _money_mapping(options: MappingOptions) -> ValueMapping:
    mode = options.decimal_handling_mode
    digits = options.money_fraction_digits
    if mode == "double":
        def to_double(text: str) -> float:
            unscaled, scale = parse_money(text)
            return float(f"{unscaled}e-{scale}")

        return ValueMapping(float64(), to_double, zero=0.0)
    if mode == "string":
        return ValueMapping(string(), lambda text: plain_string(*parse_money(text)), zero=plain_string(0, digits))

    def to_decimal(text: str) -> str:
        unscaled, scale = parse_money(text)
        return encode_unscaled(_rescale(unscaled, scale, digits))

    return ValueMapping(decimal_schema(digits), to_decimal, zero=encode_unscaled(0))


# -- integers and booleans ---------------------------------------------------------------------

_INTEGER_TEXT = re.compile(r"-?\d+")


def _integer_converter(kind: str, bits: int):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    # Texts this short always fit, so need no range check (compiled, a bigint's bounds are not
    # machine integers and comparing with them is slow).
    always_fits = len(str(high)) - 1

    def convert(text: str) -> int:
        # Strict (ASCII digits, optional minus; no '+', spaces or '_' that int() accepts), but
        # with string methods rather than a regular expression: this runs for every integer.
        if text.isascii() and (text.isdigit() or (text.startswith("-") and text[1:].isdigit())):
            value = int(text)
            if len(text) <= always_fits or low <= value <= high:
                return value
        raise ConversionError(f"{text!r} is not a {kind}")

    return convert


_int16 = _integer_converter("smallint (int2)", 16)
_int32 = _integer_converter("integer (int4)", 32)
_int64 = _integer_converter("bigint (int8)", 64)


def _oid(text: str) -> int:
    if _INTEGER_TEXT.fullmatch(text) and 0 <= int(text) <= 0xFFFFFFFF:
        return int(text)
    raise ConversionError(f"{text!r} is not an oid")


def _bool(text: str) -> bool:
    if text == "t":
        return True
    if text == "f":
        return False
    raise ConversionError(f"{text!r} is not a boolean")


def map_numeric_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    name = column.name
    if name == "int4":
        return ValueMapping(int32(), _int32, zero=0)
    if name == "int8":
        return ValueMapping(int64(), _int64, zero=0)
    if name == "oid":
        return ValueMapping(int64(), _oid, zero=0)
    if name == "int2":
        return ValueMapping(int16(), _int16, zero=0)
    if name == "float8":
        return ValueMapping(float64(), json_float, zero=0.0)
    if name == "float4":
        return ValueMapping(float32(), java_float, zero=0.0)
    if name == "bool":
        return ValueMapping(boolean(), _bool, zero=False)
    if name == "numeric":
        precision, scale = numeric_modifier(column.modifier)
        return _decimal_mapping(precision, scale, options)
    if name == "money":
        return _money_mapping(options)
    return None
