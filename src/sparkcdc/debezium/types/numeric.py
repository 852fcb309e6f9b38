"""Integers, floating point, booleans, NUMERIC/DECIMAL in every decimal.handling.mode, and MONEY."""

from __future__ import annotations

import base64
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from ..connect import ConnectSchema, boolean, bytes_, float32, float64, int16, int32, int64, string, struct
from .base import ColumnType, ConversionError, MappingOptions, ValueMapping

__all__ = [
    "DECIMAL_NAME",
    "VARIABLE_SCALE_DECIMAL_NAME",
    "decimal_schema",
    "encode_unscaled",
    "json_float",
    "map_numeric_type",
]

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL_NAME = "io.debezium.data.VariableScaleDecimal"

# JsonConverter (Jackson) writes non-finite doubles as quoted strings.
_NON_FINITE = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}


def json_float(text: str) -> float | str:
    """PostgreSQL float text -> the JSON value Jackson writes (non-finite values as strings)."""
    special = _NON_FINITE.get(text)
    if special is not None:
        return special
    try:
        return float(text)
    except ValueError:
        raise ConversionError(f"{text!r} is not a floating point number") from None


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
    return struct(
        [("scale", int32()), ("value", bytes_())],
        name=VARIABLE_SCALE_DECIMAL_NAME,
        version=1,
        doc="Variable scaled decimal",
    )


def _parse_decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ConversionError(f"{text!r} is not a decimal number") from None


def _unscaled(value: Decimal, scale: int) -> int:
    return int(value.scaleb(scale).to_integral_value(rounding=ROUND_HALF_UP))


def _numeric_modifier(modifier: int) -> tuple[int | None, int | None]:
    """``numeric(p, s)`` typmod -> (precision, scale); (None, None) when unconstrained."""
    if modifier < 4:
        return None, None
    packed = modifier - 4
    precision = (packed >> 16) & 0xFFFF
    scale = packed & 0xFFFF
    if scale >= 0x8000:  # negative scales (PostgreSQL 15+) are stored as 11-bit two's complement
        scale -= 0x10000
    return precision, scale


def _special_decimal(text: str) -> str | None:
    if text == "NaN":
        return "NaN"
    if text == "Infinity":
        return "Infinity"
    if text == "-Infinity":
        return "-Infinity"
    return None


def _decimal_mapping(precision: int | None, scale: int | None, options: MappingOptions) -> ValueMapping:
    mode = options.decimal_handling_mode
    if mode == "double":
        return ValueMapping(float64(), json_float, zero=0.0)
    if mode == "string":
        def to_string(text: str) -> str:
            special = _special_decimal(text)
            if special is not None:
                return {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}[special]
            return format(_parse_decimal(text), "f")

        return ValueMapping(string(), to_string, zero="0")
    if scale is None:
        def to_variable(text: str) -> dict[str, object] | None:
            if _special_decimal(text) is not None:
                return None
            value = _parse_decimal(text)
            exponent = value.as_tuple().exponent
            value_scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
            return {"scale": value_scale, "value": encode_unscaled(_unscaled(value, value_scale))}

        return ValueMapping(_variable_scale_schema(), to_variable, zero={"scale": 0, "value": encode_unscaled(0)})

    fixed_scale = scale

    def to_fixed(text: str) -> str | None:
        if _special_decimal(text) is not None:
            return None
        return encode_unscaled(_unscaled(_parse_decimal(text), fixed_scale))

    return ValueMapping(decimal_schema(fixed_scale, precision), to_fixed, zero=encode_unscaled(0))


def _parse_money(text: str) -> Decimal:
    """``$1,234.11`` / ``-$1,234.11`` (lc_monetary=C) -> Decimal."""
    negative = text.startswith("-") or (text.startswith("(") and text.endswith(")"))
    digits = text.strip("-()").replace("$", "").replace(",", "").strip()
    value = _parse_decimal(digits)
    return -value if negative else value


def _money_mapping(options: MappingOptions) -> ValueMapping:
    mode = options.decimal_handling_mode
    if mode == "double":
        return ValueMapping(float64(), lambda text: float(_parse_money(text)), zero=0.0)
    if mode == "string":
        return ValueMapping(string(), lambda text: format(_parse_money(text), "f"), zero="0")
    scale = options.money_fraction_digits
    return ValueMapping(
        decimal_schema(scale), lambda text: encode_unscaled(_unscaled(_parse_money(text), scale)), zero=encode_unscaled(0)
    )


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConversionError(f"{text!r} is not an integer") from None


def _bool(text: str) -> bool:
    if text == "t":
        return True
    if text == "f":
        return False
    raise ConversionError(f"{text!r} is not a boolean")


def map_numeric_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    name = column.name
    if name == "int4":
        return ValueMapping(int32(), _int, zero=0)
    if name == "int8" or name == "oid":
        return ValueMapping(int64(), _int, zero=0)
    if name == "int2":
        return ValueMapping(int16(), _int, zero=0)
    if name == "float8":
        return ValueMapping(float64(), json_float, zero=0.0)
    if name == "float4":
        return ValueMapping(float32(), json_float, zero=0.0)
    if name == "bool":
        return ValueMapping(boolean(), _bool, zero=False)
    if name == "numeric":
        precision, scale = _numeric_modifier(column.modifier)
        return _decimal_mapping(precision, scale, options)
    if name == "money":
        return _money_mapping(options)
    return None

