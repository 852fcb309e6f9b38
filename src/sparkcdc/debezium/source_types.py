"""``column.propagate.source.type``: the source column's type, length and scale as schema parameters.

Debezium takes length and scale from the PostgreSQL JDBC driver's rules (``TypeInfoCache``
precision, display size and scale per type OID and modifier), so those rules are reproduced here.
"""

from __future__ import annotations

from .types.base import ColumnType

__all__ = ["column_length", "column_scale", "source_type_parameters"]

UNKNOWN_LENGTH = 2147483647

_FIXED_PRECISION = {"int2": 5, "int4": 10, "oid": 10, "int8": 19, "float4": 8, "float8": 17, "bool": 1, "char": 1}
_TEMPORAL = frozenset({"time", "timetz", "timestamp", "timestamptz"})


def _seconds_size(modifier: int) -> int:
    if modifier == -1:
        return 7
    if modifier == 0:
        return 0
    if modifier == 1:
        return 3
    return modifier + 1


def _display_size(name: str, modifier: int) -> int:
    if name == "date":
        return 13
    if name == "interval":
        return 49
    seconds = _seconds_size(modifier)
    return {"time": 8 + seconds, "timetz": 8 + seconds + 6, "timestamp": 22 + seconds, "timestamptz": 28 + seconds}[name]


def column_length(column: ColumnType) -> int:
    name, modifier = column.name, column.modifier
    if name in _FIXED_PRECISION:
        return _FIXED_PRECISION[name]
    if name == "numeric":
        return 0 if modifier == -1 else ((modifier - 4) >> 16) & 0xFFFF
    if name in ("bpchar", "varchar"):
        return UNKNOWN_LENGTH if modifier == -1 else modifier - 4
    if name in _TEMPORAL or name in ("date", "interval"):
        return _display_size(name, modifier)
    if name == "bit":
        return modifier
    if name == "varbit":
        return UNKNOWN_LENGTH if modifier == -1 else modifier
    return UNKNOWN_LENGTH


def column_scale(column: ColumnType) -> int:
    name, modifier = column.name, column.modifier
    if name == "float4":
        return 8
    if name == "float8":
        return 17
    if name == "numeric":
        return 0 if modifier == -1 else (modifier - 4) & 0xFFFF
    if name in _TEMPORAL:
        return 6 if modifier == -1 else modifier
    if name == "interval":
        return 6 if modifier == -1 else modifier & 0xFFFF
    return 0


def source_type_parameters(column_name: str, column: ColumnType) -> dict[str, str]:
    return {
        "__debezium.source.column.type": column.declared_name.upper(),
        "__debezium.source.column.length": str(column_length(column)),
        "__debezium.source.column.scale": str(column_scale(column)),
        "__debezium.source.column.name": column_name,
    }
