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


_SERIALS = {"int2": "SMALLSERIAL", "int4": "SERIAL", "int8": "BIGSERIAL"}
UNCONSTRAINED_NUMERIC_LENGTH = 131089  # pgjdbc's display size of an unconstrained numeric


def source_type_parameters(
    column_name: str, column: ColumnType, *, snapshot: bool = False, default_expression: str | None = None
) -> dict[str, str]:
    """The parameters; ``snapshot``: for the snapshot's schema, which Debezium takes from pgjdbc's
    ``getColumns`` (streaming's comes from the Relation message and Debezium's type registry).

    The two differ for integer columns defaulting to ``nextval(...)``, which pgjdbc names
    ``SERIAL``/``SMALLSERIAL``/``BIGSERIAL``, and for an unconstrained ``numeric`` column: length 0
    and no scale in the snapshot, length 131089 and scale 0 when streaming (a domain over it has
    131089 and 0 in both).
    """
    type_name = column.declared_name.upper()
    if snapshot and default_expression is not None and "nextval(" in default_expression:
        type_name = _SERIALS.get(column.declared_name, type_name)
    parameters = {"__debezium.source.column.type": type_name}
    if column.name == "numeric" and column.modifier == -1 and column.element is None:
        if snapshot and column.declared_name == column.name:
            parameters["__debezium.source.column.length"] = "0"
        else:
            parameters["__debezium.source.column.length"] = str(UNCONSTRAINED_NUMERIC_LENGTH)
            parameters["__debezium.source.column.scale"] = "0"
    else:
        parameters["__debezium.source.column.length"] = str(column_length(column))
        parameters["__debezium.source.column.scale"] = str(column_scale(column))
    parameters["__debezium.source.column.name"] = column_name
    return parameters
