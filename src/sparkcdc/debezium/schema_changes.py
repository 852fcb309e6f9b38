"""Schema change records (``include.schema.changes``): a table's structure after a change, on the
``<topic.prefix>`` topic, in the shape of Debezium's schema change topic.

Debezium's PostgreSQL connector has no schema change topic (its Db2, MySQL, SQL Server ... connectors
have one); sparkcdc offers it for PostgreSQL with the shapes those connectors use, named under the
PostgreSQL connector: key ``io.debezium.connector.postgresql.SchemaChangeKey`` (``databaseName``),
value ``io.debezium.connector.postgresql.SchemaChangeValue`` (``source``, ``ts_ms``,
``databaseName``, ``schemaName``, ``ddl``, ``tableChanges``), and each table change as
``io.debezium.connector.schema.Change`` / ``Table`` / ``Column``.

A record is built from a :class:`~sparkcdc.debezium.table.TableDescription` (what the server says
of the table: its Relation message completed from the catalog, or the catalog alone in a
snapshot), the change's type and the source block the row events of the same place would carry.
When the records are made (and why ``ddl`` is always null): docs/schema-change-topic.md.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from .connect import ConnectSchema, array, boolean, int32, int64, string, struct
from .events import EventFactory
from .records import ChangeRecord
from .schemas import source_schema
from .source_types import source_type_parameters
from .table import ColumnDescription, TableDescription
from .types import ColumnType

__all__ = [
    "CHANGE_TYPES",
    "column_struct",
    "jdbc_type",
    "quoted_table_id",
    "schema_change_key_schema",
    "schema_change_record",
    "schema_change_value_schema",
    "table_change",
]

#: The ``type`` of a table change. sparkcdc emits CREATE and ALTER; DROP is never seen (pgoutput
#: says nothing of a dropped table).
CHANGE_TYPES = ("CREATE", "ALTER", "DROP")

KEY_SCHEMA_NAME = "io.debezium.connector.postgresql.SchemaChangeKey"
VALUE_SCHEMA_NAME = "io.debezium.connector.postgresql.SchemaChangeValue"

# java.sql.Types codes
_ARRAY, _STRUCT, _OTHER, _VARCHAR = 2003, 2002, 1111, 12

#: pgjdbc's TypeInfoCache: the SQL type of each core type (by name, in pg_catalog). Every other
#: type is an ARRAY (an array type), a STRUCT (composite), a VARCHAR (enum) or OTHER.
_CORE_JDBC_TYPES = {
    "int2": 5, "int4": 4, "oid": -5, "int8": -5, "money": 8, "numeric": 2, "float4": 7, "float8": 8, "char": 1,
    "bpchar": 1, "varchar": 12, "text": 12, "name": 12, "bytea": -2, "bool": -7, "bit": -7, "date": 91, "time": 92,
    "timetz": 92, "timestamp": 93, "timestamptz": 93, "refcursor": 2012, "json": _OTHER, "point": _OTHER,
}


@cache
def schema_change_key_schema() -> ConnectSchema:
    return struct([("databaseName", string())], name=KEY_SCHEMA_NAME, version=1)


@cache
def _column_schema() -> ConnectSchema:
    return struct(
        [
            ("name", string()),
            ("jdbcType", int32()),
            ("nativeType", int32(optional=True)),
            ("typeName", string()),
            ("typeExpression", string(optional=True)),
            ("charsetName", string(optional=True)),
            ("length", int32(optional=True)),
            ("scale", int32(optional=True)),
            ("position", int32()),
            ("optional", boolean(optional=True)),
            ("autoIncremented", boolean(optional=True)),
            ("generated", boolean(optional=True)),
            ("comment", string(optional=True)),
            ("defaultValueExpression", string(optional=True)),
            ("enumValues", array(string(), optional=True)),
        ],
        name="io.debezium.connector.schema.Column",
        version=1,
    )


@cache
def _change_schema() -> ConnectSchema:
    table = struct(
        [
            ("defaultCharsetName", string(optional=True)),
            ("primaryKeyColumnNames", array(string(), optional=True)),
            ("columns", array(_column_schema())),
            ("comment", string(optional=True)),
        ],
        optional=True,
        name="io.debezium.connector.schema.Table",
        version=1,
    )
    return struct([("type", string()), ("id", string()), ("table", table)], name="io.debezium.connector.schema.Change", version=1)


@cache
def schema_change_value_schema() -> ConnectSchema:
    return struct(
        [
            ("source", source_schema()),
            ("ts_ms", int64()),
            ("databaseName", string(optional=True)),
            ("schemaName", string(optional=True)),
            ("ddl", string(optional=True)),
            ("tableChanges", array(_change_schema())),
        ],
        name=VALUE_SCHEMA_NAME,
        version=1,
    )


def jdbc_type(column_type: ColumnType) -> int:
    """The ``java.sql.Types`` code pgjdbc reports for the type (domains resolved to their base, as
    Debezium takes the root type's)."""
    if column_type.is_array:
        return _ARRAY
    if column_type.namespace == "pg_catalog" and column_type.name in _CORE_JDBC_TYPES:
        return _CORE_JDBC_TYPES[column_type.name]
    if column_type.typtype == "c":
        return _STRUCT
    if column_type.typtype == "e":
        return _VARCHAR
    return _OTHER


def _quoted(part: str) -> str:
    """One part of Debezium's ``TableId.toDoubleQuotedString``: quoted, inner quotes doubled, unless
    it already starts or ends with a quote (then as it is)."""
    if not part:
        return '""'
    if part[0] == '"' or part[-1] == '"':
        return part
    return '"' + part.replace('"', '""') + '"'


def quoted_table_id(database: str, schema: str, table: str) -> str:
    """``"db"."schema"."table"``: a PostgreSQL table's id as Debezium renders it (its catalog part is
    the database, as pgjdbc's ``getTables`` reports it); empty parts before the table are left out."""
    return "".join(f"{_quoted(part)}." for part in (database, schema) if part) + _quoted(table)


def column_struct(column: ColumnDescription, position: int, *, snapshot: bool = False) -> dict[str, Any]:
    """A column as ``io.debezium.connector.schema.Column``; ``position`` counts from 1.

    Length and scale are those ``column.propagate.source.type`` gives the column's field (the
    snapshot's rules for a snapshot, streaming's otherwise); a scale the type has not is null."""
    parameters = source_type_parameters(column.name, column.type, snapshot=snapshot, default_expression=column.default_expression)
    length = parameters.get("__debezium.source.column.length")
    scale = parameters.get("__debezium.source.column.scale")
    default = column.default_expression
    return {
        "name": column.name,
        "jdbcType": jdbc_type(column.type),
        "nativeType": column.type.oid,
        "typeName": column.type.declared_name,
        "typeExpression": column.type.declared_name,
        "charsetName": None,
        "length": None if length is None else int(length),
        "scale": None if scale is None else int(scale),
        "position": position,
        "optional": not column.not_null,
        "autoIncremented": column.identity in ("a", "d") or (default is not None and "nextval(" in default),
        "generated": False,  # pgoutput leaves generated columns out (PostgreSQL < 18 always; 18 by default)
        "comment": None,
        "defaultValueExpression": default,
        "enumValues": list(column.type.enum_labels) if column.type.enum_labels else None,
    }


def table_change(
    kind: str, database: str, description: TableDescription, *, snapshot: bool = False,
    selected: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """One ``io.debezium.connector.schema.Change``: the table as it is after the change.

    ``selected`` (``column.include.list`` / ``column.exclude.list`` on ``schema.table.column``)
    leaves out the columns the row events leave out; positions still count every column."""
    qualified = description.qualified_name
    columns = [
        column_struct(column, index + 1, snapshot=snapshot)
        for index, column in enumerate(description.columns)
        if selected is None or selected(f"{qualified}.{column.name}")
    ]
    return {
        "type": kind,
        "id": quoted_table_id(database, description.schema, description.name),
        "table": {
            "defaultCharsetName": None,
            "primaryKeyColumnNames": list(description.primary_key),
            "columns": columns,
            "comment": None,
        },
    }


def schema_change_record(
    events: EventFactory, kind: str, description: TableDescription, source: dict[str, Any], *, snapshot: bool = False,
    selected: Callable[[str], bool] | None = None,
) -> ChangeRecord:
    """The record of one table change. Not a row change: ``op`` None and no ``table_schema`` (as
    heartbeats and transaction records), no headers; ``schema``/``table`` name the table. The caller
    places it (``lsn``, ``commit_lsn``, ``ordinal`` ...)."""
    if kind not in CHANGE_TYPES:
        raise ValueError(f"{kind!r} is not a table change type ({', '.join(CHANGE_TYPES)})")
    database = events.database
    value = {
        "source": source,
        "ts_ms": events.clock_ns() // 1_000_000,
        "databaseName": database,
        "schemaName": description.schema,
        "ddl": None,  # pgoutput carries no DDL text, and the catalog cannot give an ALTER's
        "tableChanges": [table_change(kind, database, description, snapshot=snapshot, selected=selected)],
    }
    return ChangeRecord(
        events.server_name, {"databaseName": database}, schema_change_key_schema(), value, schema_change_value_schema(),
        schema=description.schema, table=description.name,
    )
