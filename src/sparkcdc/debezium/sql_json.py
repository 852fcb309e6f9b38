"""Debezium JSON payloads rendered by PostgreSQL itself: the fast path of the snapshot.

A snapshot reads whole tables, and most columns have types whose Debezium JSON is a simple
function of the value: an integer's digits, a boolean, a JSON string of the text output, an ISO
timestamp. For those, PostgreSQL can print the payload's JSON while it reads the rows (in C, on the
server's core), so that Python only joins bytes instead of parsing text, building dicts and
encoding JSON for every row.

This module turns a table's field plans into two SQL expressions, the key payload and the row
(``after``) payload, each a JSON text. A value outside what the SQL rendering covers (an infinite
timestamp, a year past 9999, ...) makes the expression NULL, and that row takes the Python
converters instead: the rendering is an optimisation of the converters and never a second
definition of them. ``tests/engine/test_snapshot_rendered.py`` checks the two agree, type by type,
on edge values.

The expressions assume ``standard_conforming_strings = on`` (the default since PostgreSQL 9.1) and
the session settings of :data:`sparkcdc.debezium.types.SESSION_SETTINGS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .types import ColumnType, ValueMapping
from .types.numeric import _bool, _int16, _int32, _int64, _oid, json_float
from .types.temporal import CONNECT_TIMESTAMP_NAME, MICRO_TIMESTAMP_NAME, TIMESTAMP_NAME, ZONED_TIMESTAMP_NAME, _precision
from .types.text import _identity

__all__ = ["PayloadSql", "payload_sql", "sql_literal", "value_renderer"]

#: Renders a non-NULL value given as an SQL expression; the result is SQL yielding JSON text or NULL.
Renderer = Callable[[str], str]

_INTEGERS = (_int16, _int32, _int64, _oid)


def sql_literal(text: str) -> str:
    """A standard SQL string literal (``standard_conforming_strings`` on: backslashes are plain)."""
    return "'" + text.replace("'", "''") + "'"


def value_renderer(column: ColumnType, mapping: ValueMapping) -> Renderer | None:
    """The SQL rendering of ``mapping.convert`` for this column type, or None when there is none.

    Dispatches on the converter itself where one function serves a whole family of types, so a
    column whose converter is wrapped (masking, truncation, hashing) or replaced is never rendered.
    """
    convert = mapping.convert
    if convert in _INTEGERS:
        return lambda e: f"({e})::text"
    if convert is _bool:
        return lambda e: f"CASE WHEN {e} THEN 'true' ELSE 'false' END"
    if convert is json_float:
        if column.name != "float8":
            return None  # a numeric in decimal.handling.mode=double: past float8's range a cast would fail the query
        # Jackson writes non-finite doubles as strings, and finite ones always as a JSON float
        # ("10.0", never "10"); PostgreSQL prints finite ones in shortest round-trip form
        # (extra_float_digits >= 1), which reads back as the same double once it is a float: plain
        # digits for an integral value below 1e15 (those get ".0"), an exponent from there on.
        return lambda e: (
            f"CASE WHEN {e} = 'NaN'::float8 THEN '\"NaN\"' WHEN {e} = 'Infinity'::float8 THEN '\"Infinity\"' "
            f"WHEN {e} = '-Infinity'::float8 THEN '\"-Infinity\"' WHEN {e} = trunc({e}) AND abs({e}) < '1e15'::float8 THEN ({e})::text || '.0' ELSE ({e})::text END"
        )
    if convert is _identity:
        if column.name in ("json", "jsonb"):
            return lambda e: f"to_json(({e})::text)::text"  # the document's text as a string, not the document
        # to_json of any other type here is its output function's text as a JSON string; a cast to
        # text is not always that (char(n) drops its padding, inet shows the netmask).
        return lambda e: f"to_json({e})::text"
    schema_name = mapping.schema.name
    if column.name == "timestamptz" and schema_name == ZONED_TIMESTAMP_NAME:
        width = _precision(column.modifier)
        fraction = "" if width == 0 else (".US" if width == 6 else f".FF{width}")
        return lambda e: (
            f"CASE WHEN {e} >= '0001-01-01 00:00:00+00' AND {e} < '10000-01-01 00:00:00+00' "
            f"THEN '\"' || to_char({e} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS{fraction}\"Z\"') || '\"' END"
        )
    if column.name == "timestamp" and schema_name in (MICRO_TIMESTAMP_NAME, TIMESTAMP_NAME, CONNECT_TIMESTAMP_NAME):
        # Within the Gregorian years both calendars agree on; the converters handle the rest.
        scaled = "(extract(epoch from {e}) * 1000000)" if schema_name == MICRO_TIMESTAMP_NAME else "floor(extract(epoch from {e}) * 1000)"
        template = (
            "CASE WHEN {e} >= '1583-01-01 00:00:00' AND {e} < '10000-01-01 00:00:00' THEN " + scaled + "::int8::text END"
        )
        return lambda e: template.format(e=e)
    return None


@dataclass(frozen=True)
class FieldSql:
    """What the payload rendering needs to know about one field of a table's key or row."""

    name: str
    position: int  # the column's index in the table's tuples; -1: the column is not read
    null_value: Any  # the payload value of a NULL (the default, the NOT NULL fallback, or null)
    renderer: Renderer | None


@dataclass(frozen=True)
class PayloadSql:
    key: str | None  # None: the table has no key
    row: str


def payload_sql(
    key_fields: Sequence[FieldSql] | None, row_fields: Sequence[FieldSql], column_expression: Callable[[int], str]
) -> PayloadSql | None:
    """SQL for the key and row payloads, or None when some field has no rendering.

    ``column_expression(position)`` is the SQL naming the column at that tuple position.
    """
    row = _object_sql(row_fields, column_expression)
    if row is None:
        return None
    if key_fields is None:
        return PayloadSql(None, row)
    key = _object_sql(key_fields, column_expression)
    return None if key is None else PayloadSql(key, row)


def _object_sql(fields: Sequence[FieldSql], column_expression: Callable[[int], str]) -> str | None:
    parts: list[str] = []
    text = "{"
    for index, field in enumerate(fields):
        text += ("," if index else "") + orjson.dumps(field.name).decode() + ":"
        null_json = orjson.dumps(field.null_value).decode()
        if field.position < 0:
            text += null_json
            continue
        if field.renderer is None:
            return None
        parts.append(sql_literal(text))
        text = ""
        expression = column_expression(field.position)
        parts.append(f"CASE WHEN {expression} IS NULL THEN {sql_literal(null_json)} ELSE {field.renderer(expression)} END")
    parts.append(sql_literal(text + "}"))
    return "(" + " || ".join(parts) + ")"
