"""How each view column is read from the parsed event, and how an unchanged TOAST value is recognised.

Debezium sends a placeholder (``toasted.value.placeholder``, typed like the column where it can
be) for a TOASTed value an update left unchanged. ``from_json`` reads a column's field as its
codec's raw type when the placeholder fits that type, and as its JSON text otherwise (then parsed a
second time), so the placeholder can be compared as it is and the value still typed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T

from .expressions import sql_literal
from .model import ViewColumn
from .type_map import Codec, codec_for

__all__ = ["ColumnReader", "conforms", "is_nested"]


def conforms(value: Any, raw: T.DataType) -> bool:
    """Whether ``from_json`` reads the JSON-ready ``value`` into ``raw`` as it is."""
    if value is None:
        return True
    if isinstance(raw, T.StringType):
        return isinstance(value, str)
    if isinstance(raw, T.BooleanType):
        return isinstance(value, bool)
    if isinstance(raw, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(raw, (T.FloatType, T.DoubleType)):
        return (isinstance(value, (int, float)) and not isinstance(value, bool)) or value in ("NaN", "Infinity", "-Infinity")
    if isinstance(raw, T.ArrayType):
        return isinstance(value, list) and all(conforms(item, raw.elementType) for item in value)
    if isinstance(raw, T.MapType):
        return isinstance(value, dict) and all(isinstance(k, str) and conforms(v, raw.valueType) for k, v in value.items())
    if isinstance(raw, T.StructType):
        names = set(raw.fieldNames())
        return isinstance(value, dict) and set(value) <= names and all(conforms(value[f.name], f.dataType) for f in raw.fields if f.name in value)
    return False


def is_nested(data_type: T.DataType) -> bool:
    return isinstance(data_type, (T.ArrayType, T.MapType, T.StructType))


@dataclass(frozen=True)
class ColumnReader:
    """How a view column is read from the parsed event: the type from_json reads its field as, and
    the SQL of its staged raw value, its unchanged-TOAST test and its typed value."""

    column: ViewColumn
    codec: Codec
    raw: T.DataType  # codec.raw, or string when the placeholder does not fit it (parsed a second time)
    key_codec: Codec | None

    @classmethod
    def of(cls, column: ViewColumn) -> ColumnReader:
        schema = column.connect_schema if column.in_value else column.key_schema
        assert schema is not None
        codec = codec_for(schema, column.name)
        raw = codec.raw if conforms(column.placeholder, codec.raw) else T.StringType()
        key_codec = codec_for(column.key_schema, column.name) if column.key_schema is not None else None
        return cls(column, codec, raw, key_codec)

    def unchanged(self, raw: str) -> str | None:
        """SQL: the raw value is the column's unchanged-TOAST placeholder (None: not detectable)."""
        placeholder = self.column.placeholder
        if placeholder is None or not self.column.in_value:
            return None
        if is_nested(self.raw):
            expected = f"to_json(from_json({sql_literal(json.dumps(placeholder))}, {sql_literal(self.raw.json())}))"
            return f"to_json({raw}) = {expected}"
        if isinstance(placeholder, str):
            return f"{raw} = {sql_literal(placeholder)}"
        return f"{raw} = CAST({sql_literal(json.dumps(placeholder))} AS {self.raw.simpleString()})"

    def reparsed(self, raw: str) -> str:
        """SQL: the raw value as the codec reads it (the field was read as its JSON text)."""
        if self.raw == self.codec.raw:
            return raw
        if is_nested(self.codec.raw):
            return f"from_json({raw}, {sql_literal(self.codec.raw.json())})"
        if isinstance(self.codec.raw, T.StringType):
            return raw
        return f"CAST({raw} AS {self.codec.raw.simpleString()})"
