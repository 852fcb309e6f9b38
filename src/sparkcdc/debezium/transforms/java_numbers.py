"""Java's number semantics, as Kafka Connect's ``Cast`` and ``MaskField`` apply them to record values.

A transform that casts or masks a value must write what JsonConverter writes for the Java result,
and Java's conversions are not Python's: narrowing wraps (``(byte) 300`` is 44), a double converted
to an int saturates (NaN is 0), ``Double.toString`` prints ``1.0E7``, ``BigDecimal.toString`` prints
``1E-8``, ``Float.parseFloat`` rounds a decimal to a float exactly once and accepts ``1.5f`` and
hexadecimal, and ``Integer.parseInt`` accepts any Unicode digits but no spaces. Everything here was
checked against the JVM that the conformance suite runs (Java 17, Kafka 4.3).

Values are JSON-ready (see :mod:`sparkcdc.debezium.connect`): a FLOAT32 is the double a JSON reader
gets from Java's ``Float.toString``, non-finite FLOAT32/FLOAT64 values are the strings Jackson
writes (``"NaN"``, ``"Infinity"``, ``"-Infinity"``).
"""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction
from typing import Final

from ..types.numeric import java_float32_digits, java_float64_digits, java_float_text_value

__all__ = [
    "FLOAT32_MAX_EXPONENT",
    "big_decimal_text",
    "double_json",
    "float32_json",
    "float32_of_json",
    "float_of_json",
    "java_double_text",
    "java_float_text",
    "narrow_float",
    "parse_big_decimal",
    "parse_java_double",
    "parse_java_float",
    "parse_java_integer",
    "round_to_float32",
    "wrap",
]

_NON_FINITE_JSON: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
FLOAT32_MAX_EXPONENT: Final = 127
_FLOAT32_MAX: Final = 3.4028234663852886e38


def wrap(value: int, bits: int) -> int:
    """Two's-complement narrowing of an integer to ``bits`` (Java's ``(byte)``, ``(short)``, ``(int)``)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def narrow_float(value: float, bits: int) -> int:
    """Java's ``Number.byteValue()``/``shortValue()``/``intValue()``/``longValue()`` of a Float or
    Double: truncated toward zero, saturated to int (long for 64 bits), NaN 0; bytes and shorts are
    then wrapped from the int, as Java narrows ``(byte) (int) value``."""
    if math.isnan(value):
        return 0
    limit_bits = 64 if bits == 64 else 32
    low, high = -(1 << (limit_bits - 1)), (1 << (limit_bits - 1)) - 1
    whole = low if value == -math.inf else high if value == math.inf else max(low, min(high, int(value)))
    return wrap(whole, bits) if bits < 32 else whole


# -- JSON-ready floats --------------------------------------------------------------------------

def float_of_json(payload: float | int | str) -> float:
    """The double of a JSON-ready FLOAT64 (or FLOAT32) payload."""
    if isinstance(payload, str):
        return _NON_FINITE_JSON[payload]
    return float(payload)


def float32_of_json(payload: float | int | str) -> float:
    """The exact float value of a JSON-ready FLOAT32 payload (Java's ``Float.toString`` text read
    back as a double rounds to the float it was printed from)."""
    value = float_of_json(payload)
    if not math.isfinite(value):
        return value
    return struct.unpack("<f", struct.pack("<f", value))[0]


def double_json(value: float) -> float | str:
    """The JSON-ready form of a double."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _float32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def float32_json(value: float) -> float | str:
    """The JSON-ready form of a float (``value`` holds a float32 value exactly, or is non-finite)."""
    if not math.isfinite(value):
        return double_json(value)
    return java_float_text_value(_float32_bits(value))


def round_to_float32(value: Fraction | int | float) -> float:
    """``value`` rounded once to the nearest float (ties to even), as Java's ``(float)`` conversions
    and ``Float.parseFloat`` round: beyond the largest float it is infinite."""
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0:
            return value
        value = Fraction(value)
    exact = Fraction(value)
    if exact == 0:
        return 0.0
    negative = exact < 0
    exact = -exact if negative else exact
    numerator, denominator = exact.numerator, exact.denominator
    exponent = numerator.bit_length() - denominator.bit_length()  # 2**(exponent-1) < exact < 2**(exponent+1)
    if exact < Fraction(2) ** exponent:
        exponent -= 1
    if exponent > FLOAT32_MAX_EXPONENT:
        return -math.inf if negative else math.inf
    quantum = max(exponent - 23, -149)  # 24 significant bits; subnormals share the smallest quantum
    if quantum >= 0:
        numerator, denominator = numerator, denominator << quantum
    else:
        numerator, denominator = numerator << -quantum, denominator
    units, remainder = divmod(numerator, denominator)
    if 2 * remainder > denominator or (2 * remainder == denominator and units & 1):
        units += 1
    result = math.ldexp(units, quantum)
    if result > _FLOAT32_MAX:
        return -math.inf if negative else math.inf
    return -result if negative else result


# -- Java's toString of numbers -----------------------------------------------------------------

def _java_format(digits: int, exponent: int, negative: bool) -> str:
    """``FloatingDecimal``'s layout of ``digits * 10**exponent``: plain from 10^-3 to below 10^7,
    else ``d.dddE<n>``; always a digit after the point."""
    text = str(digits).rstrip("0") or "0"
    exponent += len(str(digits)) - len(text)
    decimal_exponent = exponent + len(text)  # value = 0.<text> * 10**decimal_exponent
    sign = "-" if negative else ""
    if 0 < decimal_exponent <= 7:
        whole = text[:decimal_exponent].ljust(decimal_exponent, "0")
        return f"{sign}{whole}.{text[decimal_exponent:] or '0'}"
    if -3 < decimal_exponent <= 0:
        return f"{sign}0.{'0' * -decimal_exponent}{text}"
    return f"{sign}{text[0]}.{text[1:] or '0'}E{decimal_exponent - 1}"


def java_double_text(value: float) -> str:
    """Java 17's ``Double.toString(value)``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    negative = bool(bits >> 63)
    if value == 0:
        return "-0.0" if negative else "0.0"
    digits, exponent = java_float64_digits(bits)
    return _java_format(digits, exponent, negative)


def java_float_text(value: float) -> str:
    """Java 17's ``Float.toString`` of the float ``value`` (a float32 value held in a double)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    bits = _float32_bits(value)
    negative = bool(bits >> 31)
    if value == 0:
        return "-0.0" if negative else "0.0"
    digits, exponent = java_float32_digits(bits)
    return _java_format(digits, exponent, negative)


def big_decimal_text(unscaled: int, scale: int) -> str:
    """Java's ``BigDecimal.toString``: plain unless the scale is negative or the adjusted exponent
    is below -6, then ``d.dddE±n`` (``0.00000001`` with scale 8 is ``1E-8``)."""
    coefficient = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    adjusted = len(coefficient) - 1 - scale
    if scale == 0:
        return sign + coefficient
    if scale > 0 and adjusted >= -6:
        if len(coefficient) > scale:
            return f"{sign}{coefficient[:-scale]}.{coefficient[-scale:]}"
        return f"{sign}0.{coefficient.rjust(scale, '0')}"
    mantissa = coefficient[0] + ("." + coefficient[1:] if len(coefficient) > 1 else "")
    return f"{sign}{mantissa}E{'+' if adjusted >= 0 else '-'}{abs(adjusted)}"


# -- Java's parsing of numbers ------------------------------------------------------------------

# Integer.parseInt: an optional sign and digits (any Unicode decimal digits), nothing else.
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_JAVA_DECIMAL_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?", re.ASCII)
_JAVA_HEX_FLOAT = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+))[pP]([+-]?\d+)[fFdD]?", re.ASCII)
_JAVA_SPECIAL_FLOAT = re.compile(r"([+-]?)(NaN|Infinity)[fFdD]?")
# new BigDecimal(String): sign, digits (any Unicode decimal digits) with an optional point, an
# optional exponent; no spaces, no underscores.
_BIG_DECIMAL = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")


def parse_java_integer(text: str, bits: int) -> int | None:
    """``Byte/Short/Integer/Long.parseX(text)``, or None where Java throws (not an integer, or out of range)."""
    if not _JAVA_INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def _java_float_exact(text: str) -> Fraction | float | None:
    """The exact value of a ``Double.parseDouble``/``Float.parseFloat`` text (leading and trailing
    characters up to U+0020 trimmed, as Java does), or None when Java refuses it."""
    text = text.strip("".join(chr(code) for code in range(0x21)))
    special = _JAVA_SPECIAL_FLOAT.fullmatch(text)
    if special:
        if special.group(2) == "NaN":
            return math.nan
        return -math.inf if special.group(1) == "-" else math.inf
    if _JAVA_DECIMAL_FLOAT.fullmatch(text):
        body = text[:-1] if text[-1] in "fFdD" else text
        mantissa, _, exponent = body.replace("E", "e").partition("e")
        whole, _, fraction = mantissa.lstrip("+-").partition(".")
        unscaled = int((whole + fraction) or "0")
        power = (int(exponent) if exponent else 0) - len(fraction)
        if power > 400 and unscaled:
            return -math.inf if mantissa.startswith("-") else math.inf
        if power < -800 - len(whole + fraction):  # far below the smallest subnormal
            return Fraction(0) if not mantissa.startswith("-") else -0.0
        exact = Fraction(unscaled) * Fraction(10) ** power
        if mantissa.startswith("-"):
            return -exact if exact else -0.0
        return exact
    hexadecimal = _JAVA_HEX_FLOAT.fullmatch(text)
    if hexadecimal:
        sign, mantissa, exponent = hexadecimal.groups()
        whole, _, fraction = mantissa.partition(".")
        unscaled = int((whole + fraction) or "0", 16)
        power = int(exponent) - 4 * len(fraction)
        if power > 2000 and unscaled:
            return -math.inf if sign == "-" else math.inf
        exact = Fraction(unscaled) * Fraction(2) ** power
        if sign == "-":
            return -exact if exact else -0.0
        return exact
    return None


def parse_java_double(text: str) -> float | None:
    """``Double.parseDouble(text)`` (correctly rounded), or None where Java throws."""
    exact = _java_float_exact(text)
    if exact is None or isinstance(exact, float):
        return exact
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def parse_java_float(text: str) -> float | None:
    """``Float.parseFloat(text)``: rounded once to a float (not through a double), or None."""
    exact = _java_float_exact(text)
    if exact is None or isinstance(exact, float):
        return exact
    return round_to_float32(exact)


def parse_big_decimal(text: str) -> tuple[int, int] | None:
    """``new BigDecimal(text)`` as (unscaled, scale), or None where Java throws (``NaN``, spaces, ``_``)."""
    match = _BIG_DECIMAL.fullmatch(text)
    if match is None:
        return None
    sign, whole, fraction, exponent = match.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        return None
    unscaled = int(whole + fraction)
    scale = len(fraction) - (int(exponent) if exponent else 0)
    return (-unscaled if sign == "-" else unscaled), scale
