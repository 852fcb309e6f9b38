"""Spark SQL expression texts that turn what ``from_json`` read into typed values.

Conversions are Spark SQL expression texts (one parse per column on the JVM side, instead of
thousands of py4j calls building Column objects). Each function here maps the SQL text of a raw
value to the SQL text of its converted value; a present value that gives no result raises a query
error naming the column (:func:`checked`) instead of becoming a silent NULL.
"""

from __future__ import annotations

from pyspark.sql import types as T

from ...debezium.types.temporal import TIMESTAMP_NEGATIVE_INFINITY_MICROS, TIMESTAMP_POSITIVE_INFINITY_MICROS

__all__ = [
    "checked",
    "decimal_from_bytes",
    "epoch_ntz",
    "floor_div",
    "iso_time_micros",
    "quote_name",
    "sql_literal",
    "strip_z",
    "unbase64",
    "zoned_timestamp",
]


def quote_name(name: str) -> str:
    """A Spark SQL identifier, back-quoted (a column name may hold dots, spaces or back quotes)."""
    return "`" + name.replace("`", "``") + "`"


def sql_literal(text: str) -> str:
    """A Spark SQL string literal of any text (backslash escapes; control characters as \\uXXXX)."""
    out = []
    for char in text:
        if char in ("\\", "'"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "'" + "".join(out) + "'"


def unbase64(raw: str) -> str:
    return f"unbase64({raw})"


def checked(result: str, raw: str, where: str, problem: str) -> str:
    """``result``, or a query error naming the column where a present value gave no result."""
    prefix, suffix = sql_literal(f"sparkcdc table view: column {where}: value "), sql_literal(" " + problem)
    message = f"concat({prefix}, CAST({raw} AS STRING), {suffix})"
    return f"coalesce({result}, CASE WHEN {raw} IS NOT NULL THEN raise_error({message}) END)"


def decimal_from_bytes(base64_value: str, exponent: str, target: T.DecimalType, *, wide: bool) -> str:
    """Base64 of a big-endian two's-complement unscaled value (Connect Decimal bytes), times
    10^exponent, as ``target``; exact, or rounded half up to the target's scale. Null when it does not fit.

    Not ``wide``: at most 8 bytes, read as one signed 64-bit integer. ``wide``: at most 16 bytes,
    sign-extended to 32 hex digits and read as a signed high and an unsigned low half in decimal(38,0).
    """
    hexed = f"hex(unbase64({base64_value}))"
    fill = f"CASE WHEN {hexed} >= '8' THEN 'F' ELSE '0' END"
    if not wide:
        unscaled = f"conv(lpad({hexed}, 16, {fill}), 16, -10)"
    else:
        padded = f"lpad({hexed}, 32, {fill})"
        high = f"CAST(conv(substring({padded}, 1, 16), 16, -10) AS DECIMAL(38,0))"
        low = f"CAST(conv(substring({padded}, 17, 16), 16, 10) AS DECIMAL(38,0))"
        combined = f"try_add(try_multiply({high}, 18446744073709551616BD), {low})"
        unscaled = f"CASE WHEN length({hexed}) <= 32 THEN CAST({combined} AS STRING) END"
    return f"try_cast(concat({unscaled}, 'E', {exponent}) AS DECIMAL({target.precision},{target.scale}))"


def floor_div(raw: str, divisor: int) -> str:
    """Exact integer division rounding down (a double would lose nanoseconds)."""
    return f"(({raw} - pmod({raw}, {divisor}L)) div {divisor}L)"


def epoch_ntz(amount: str, unit: str) -> str:
    """Epoch + amount as TIMESTAMP_NTZ, independent of the session time zone."""
    return f"timestampadd({unit}, {amount}, TIMESTAMP_NTZ'1970-01-01 00:00:00')"


def strip_z(raw: str) -> str:
    return f"regexp_replace({raw}, 'Z$', '')"


def zoned_timestamp(raw: str, where: str) -> str:
    """ZonedTimestamp (ISO-8601 in UTC) -> TIMESTAMP; ``infinity``/``-infinity`` -> pgjdbc's sentinel
    instants, as TIMESTAMP columns carry them."""
    parsed = checked(f"try_cast({raw} AS TIMESTAMP)", raw, where, "is not a timestamp")
    return (
        f"CASE {raw} WHEN 'infinity' THEN timestamp_micros({TIMESTAMP_POSITIVE_INFINITY_MICROS}L)"
        f" WHEN '-infinity' THEN timestamp_micros({TIMESTAMP_NEGATIVE_INFINITY_MICROS}L) ELSE {parsed} END"
    )


def iso_time_micros(raw: str) -> str:
    """``HH:MM:SS[.fffffffff]Z`` -> microseconds since midnight."""
    parts = f"split({strip_z(raw)}, ':')"
    seconds = f"CAST(floor(try_cast({parts}[2] AS DECIMAL(18,9)) * 1000000) AS BIGINT)"
    return f"(try_cast({parts}[0] AS BIGINT) * 3600000000L + try_cast({parts}[1] AS BIGINT) * 60000000L + {seconds})"
