"""Typed per-table views of the ``postgres-cdc`` source.

The source emits every table's changes as Debezium JSON (``key`` and ``value`` strings). A view
turns one table's changes into rows whose columns are the table's own columns as Spark types,
derived from the event schema the connector itself builds for that table (so column filters, key
overrides, name adjustment and every ``*.handling.mode`` are those of the events)::

    from sparkcdc.spark.views import describe_table, table_changes

    frame = spark.readStream.format("postgres-cdc").options(**options_for(props)).load()
    orders = table_changes(frame, "public.orders", props)      # or table_changes(frame, view)

    def batch(changes, batch_id):                               # a view works in foreachBatch too
        table_changes(changes, view).write ...

Output columns: the table's data columns (typed, named as in the events) then the metadata columns
:data:`METADATA_COLUMNS`. Rows: the table's c/u/d/r/t events; tombstones, transaction, heartbeat
and logical-message records are left out. c/u/r take their values from ``after``, d from
``before`` (key columns from the event key when ``before`` lacks them), t has every data column
null. An unchanged TOAST value (Debezium's placeholder) becomes NULL and the column's name is listed
in ``__unchanged``. Everything is Spark SQL expressions (``from_json`` with a schema derived from the
Connect schemas, then per-type conversions): no Python UDF, and the result stays lazy.

See ``docs/spark-source.md`` ("Typed per-table views") for the type mapping table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..debezium.connect import ConnectSchema
from ..debezium.types.geometric import GEOGRAPHY_NAME, GEOMETRY_NAME, POINT_NAME
from ..debezium.types.numeric import DECIMAL_NAME, VARIABLE_SCALE_DECIMAL_NAME
from ..debezium.types.temporal import (
    CONNECT_DATE_NAME,
    CONNECT_TIME_NAME,
    CONNECT_TIMESTAMP_NAME,
    DATE_NAME,
    INTERVAL_NAME,
    ISO_DATE_NAME,
    ISO_TIME_NAME,
    ISO_TIMESTAMP_NAME,
    MICRO_DURATION_NAME,
    MICRO_TIME_NAME,
    MICRO_TIMESTAMP_NAME,
    NANO_TIME_NAME,
    NANO_TIMESTAMP_NAME,
    TIME_NAME,
    TIMESTAMP_NAME,
    TIMESTAMP_NEGATIVE_INFINITY_MICROS,
    TIMESTAMP_POSITIVE_INFINITY_MICROS,
    ZONED_TIME_NAME,
    ZONED_TIMESTAMP_NAME,
)
from ..debezium.types.text import BITS_NAME, ENUM_NAME, JSON_NAME, LTREE_NAME, TSVECTOR_NAME, UUID_NAME, XML_NAME
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..debezium.config import ConnectorConfig
    from ..debezium.table import TableSchema

__all__ = [
    "CHANGE_OPS",
    "METADATA_COLUMNS",
    "OLD_KEY",
    "TableNotCapturedError",
    "TableView",
    "TableViewError",
    "UnknownTableError",
    "UnsupportedColumnError",
    "ViewColumn",
    "describe_table",
    "spark_type",
    "table_changes",
    "view_of",
]

#: The ``op`` values of row changes (snapshot read, create, update, delete, truncate).
CHANGE_OPS = ("c", "u", "d", "r", "t")

#: The metadata columns after the data columns, with their Spark types.
METADATA_COLUMNS: tuple[tuple[str, T.DataType], ...] = (
    ("__op", T.StringType()),
    ("__commit_lsn", T.LongType()),
    ("__lsn", T.LongType()),
    ("__ordinal", T.LongType()),
    ("__tx_id", T.LongType()),
    ("__source_ts", T.TimestampType()),
    ("__snapshot", T.StringType()),
    ("__unchanged", T.ArrayType(T.StringType())),
)

#: The last column: the old key of the create that ends a primary-key change (Debezium's
#: ``__debezium.oldkey`` header, typed like the key columns), null otherwise. Its value tells where a
#: column the create could not carry (unchanged TOAST) is stored: in the row of the old key.
OLD_KEY = "__old_key"
_OLD_KEY_HEADER = "__debezium.oldkey"

_METADATA_NAMES = frozenset([*(name for name, _ in METADATA_COLUMNS), OLD_KEY])
_SOURCE_COLUMNS = ("topic", "key", "value", "headers", "op", "schema", "table", "lsn", "commit_lsn", "ordinal", "tx_id",
                   "source_ts", "snapshot")

# Named string schemas whose value is kept as the string Debezium sends.
_STRING_NAMES = frozenset({JSON_NAME, XML_NAME, UUID_NAME, LTREE_NAME, ENUM_NAME, TSVECTOR_NAME, ZONED_TIME_NAME, INTERVAL_NAME})
_STRUCT_NAMES = frozenset({POINT_NAME, GEOMETRY_NAME, GEOGRAPHY_NAME})
_DATE_NAMES = frozenset({DATE_NAME, CONNECT_DATE_NAME})
_TIME_MILLIS_NAMES = frozenset({TIME_NAME, CONNECT_TIME_NAME})
_TIMESTAMP_MILLIS_NAMES = frozenset({TIMESTAMP_NAME, CONNECT_TIMESTAMP_NAME})
#: Spark's DecimalType holds at most 38 digits; VariableScaleDecimal (numeric without precision) becomes this.
VARIABLE_SCALE_DECIMAL_TYPE = T.DecimalType(38, 18)
_TWO_TO_64 = Decimal(2**64)


class TableViewError(ConfigurationError):
    """A typed view cannot be built or applied."""


class UnknownTableError(TableViewError, LookupError):
    """The table does not exist in the connector's database."""


class TableNotCapturedError(TableViewError, LookupError):
    """The table exists but the connector's include/exclude lists leave it out."""


class UnsupportedColumnError(TableViewError, TypeError):
    """A column's Connect schema has no faithful Spark type."""


# -- the view description ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ViewColumn:
    """One data column of a view.

    ``nullable`` is the column's optionality in the event schema (False for NOT NULL columns); the
    view's own Spark columns are always nullable (deletes and truncates leave columns null).
    ``placeholder`` is the JSON-ready value an unchanged TOAST value of this column carries in the
    events (``None``: Debezium emits null there, so it cannot be told from a NULL).
    """

    name: str
    spark_type: T.DataType
    connect_schema: ConnectSchema
    pg_type: str
    nullable: bool
    is_key: bool
    placeholder: Any = None
    in_value: bool = True  # False: a key column the column filters leave out of the value (taken from the key)
    key_schema: ConnectSchema | None = None  # the column's schema in the event key, for key columns
    in_delete_image: bool = True  # a delete's ``before`` carries the column (the table's replica identity)


@dataclass(frozen=True)
class TableView:
    """What :func:`table_changes` needs to know about one table: its columns and how its events are encoded."""

    table: str  # "schema.table"
    topic: str
    keys: tuple[str, ...]
    columns: tuple[ViewColumn, ...]
    schema_name: str = ""
    table_name: str = ""
    key_schemas_enable: bool = False
    value_schemas_enable: bool = False
    replica_identity: str = "d"  # pg_class.relreplident when described: d, n, f or i

    @property
    def spark_schema(self) -> T.StructType:
        return T.StructType([T.StructField(c.name, c.spark_type, True) for c in self.columns])

    def column(self, name: str) -> ViewColumn:
        for candidate in self.columns:
            if candidate.name == name:
                return candidate
        raise KeyError(f"{self.table} has no column {name!r}")


def _split_table(table: str) -> tuple[str, str]:
    schema, dot, name = table.partition(".")
    return (schema, name) if dot else ("public", schema)


def describe_table(properties: Mapping[str, str], table: str) -> TableView:
    """The view of ``table`` ("schema.table", or "table" in schema public) for these connector properties.

    Reads the catalog and builds the connector's own streaming event schema for the table.
    Raises :class:`UnknownTableError` or :class:`TableNotCapturedError` naming the table, and
    :class:`UnsupportedColumnError` naming the column whose schema has no Spark type.
    """
    from ..debezium.table import TableSchemaFactory
    from ..engine.connection import sql_connection
    from ..engine.filters import TableFilter
    from ..engine.tables import TableResolver
    from ..postgres.catalog import Catalog
    from .options import config_from_options

    config = config_from_options(properties)  # Debezium names, or data source options (sparkcdc.config)
    schema_name, table_name = _split_table(table)
    qualified = f"{schema_name}.{table_name}"
    table_filter = TableFilter(config)
    with sql_connection(config, application_name="sparkcdc-views") as conn:
        catalog = Catalog(conn)
        try:
            info = catalog.table_by_name(schema_name, table_name)
        except LookupError:
            raise UnknownTableError(
                f"table {qualified} does not exist in database {config.get('database.dbname')!r}"
            ) from None
        if info.kind not in ("r", "p"):
            raise UnknownTableError(f"{qualified} is not a table (pg_class.relkind {info.kind!r})")
        if not table_filter(schema_name, table_name):
            raise TableNotCapturedError(
                f"table {qualified} is not captured by this connector (see table.include.list / table.exclude.list, "
                "schema.include.list / schema.exclude.list)"
            )
        declared = dict(
            conn.execute(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute"
                " WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                (info.oid,),
            ).fetchall()
        )
        factory = TableSchemaFactory(config)
        resolver = TableResolver(catalog, factory, table_filter)
        # What a Relation message lists: the table's columns less generated ones, in attnum order.
        columns = [(c.name, c.type_oid, c.type_modifier) for c in info.columns if not c.generated]
        description = resolver._describe(schema_name, table_name, columns, info)  # noqa: SLF001 - the resolver's own path
        table_schema = factory.build(description)
    identity = {"d": info.primary_key, "i": info.replica_identity_index, "n": ()}.get(info.replica_identity)
    return view_of(
        table_schema, config, declared_types=declared, replica_identity=info.replica_identity, identity_columns=identity
    )


def view_of(
    table_schema: TableSchema,
    config: ConnectorConfig,
    *,
    declared_types: Mapping[str, str] | None = None,
    replica_identity: str = "f",
    identity_columns: Sequence[str] | None = None,
) -> TableView:
    """The view of a table whose event schema is ``table_schema`` (built for ``config``).

    ``declared_types``: column name -> PostgreSQL type text; ``identity_columns``: the columns a
    delete's ``before`` carries (None: all of them, REPLICA IDENTITY FULL).
    """
    description = table_schema.description
    qualified = description.qualified_name
    declared = declared_types or {}
    column_names = [c.name for c in description.columns]
    value_plans = table_schema._value_fields  # noqa: SLF001 - the field plans say which column each field reads
    key_plans = table_schema._key_fields if table_schema.key_schema is not None else ()  # noqa: SLF001
    key_fields = {f.name: f.schema for f in table_schema.key_schema.fields} if table_schema.key_schema is not None else {}

    def source_column(position: int, field_name: str) -> str:
        return column_names[position] if position >= 0 else field_name

    view_columns: list[ViewColumn] = []
    for plan, field in zip(value_plans, table_schema.row_schema.fields, strict=True):
        original = source_column(plan.position, field.name)
        toastable = plan.position < 0 or _toastable(description.columns[plan.position].type)
        view_columns.append(
            ViewColumn(
                name=field.name,
                spark_type=spark_type(field.schema, column=f"{qualified}.{field.name}"),
                connect_schema=field.schema,
                pg_type=declared.get(original, ""),
                nullable=field.schema.optional,
                is_key=field.name in key_fields,
                placeholder=plan.toast if toastable else None,
                key_schema=key_fields.get(field.name),
                in_delete_image=identity_columns is None or original in identity_columns or field.name in key_fields,
            )
        )
    in_value = {c.name for c in view_columns}
    for plan in key_plans:
        if plan.name in in_value:
            continue
        schema = key_fields[plan.name]
        view_columns.append(
            ViewColumn(
                name=plan.name,
                spark_type=spark_type(schema, column=f"{qualified}.{plan.name}"),
                connect_schema=schema,
                pg_type=declared.get(source_column(plan.position, plan.name), ""),
                nullable=schema.optional,
                is_key=True,
                in_value=False,
                key_schema=schema,
            )
        )
    clashing = [c.name for c in view_columns if c.name in _METADATA_NAMES]
    if clashing:
        raise UnsupportedColumnError(f"table {qualified}: column(s) {', '.join(clashing)} clash with the view's metadata columns")
    return TableView(
        table=qualified,
        topic=table_schema.topic,
        keys=tuple(key_fields),
        columns=tuple(view_columns),
        schema_name=description.schema,
        table_name=description.name,
        key_schemas_enable=config.key_schemas_enable,
        value_schemas_enable=config.value_schemas_enable,
        replica_identity=replica_identity,
    )


# Fixed-length types (pg_type.typlen > 0): PostgreSQL never TOASTs their values, so no placeholder
# can stand for them (Debezium's plan still has one; comparing every integer with it is wasted work).
_FIXED_LENGTH_TYPES = frozenset({
    "int2", "int4", "int8", "oid", "float4", "float8", "bool", "date", "time", "timetz", "timestamp", "timestamptz",
    "interval", "uuid", "money", "point", "macaddr", "macaddr8", "char", "box", "lseg", "line", "circle", "pg_lsn",
    "tid", "xid", "xid8", "cid",
})  # fmt: skip


def _toastable(column_type: Any) -> bool:
    """Whether values of this (domain-resolved) column type can be stored out of line (TOAST)."""
    if column_type.element is not None:
        return True
    return column_type.typtype != "e" and column_type.name not in _FIXED_LENGTH_TYPES


# -- Connect schema -> Spark type, and the conversion from what from_json reads ----------------------------
#
# Conversions are Spark SQL expression texts (one parse per column on the JVM side, instead of
# thousands of py4j calls building Column objects): a codec's ``convert`` maps the SQL text of the
# raw value to the SQL text of the typed value.

Convert = Callable[[str], str]


@dataclass(frozen=True)
class _Codec:
    """How one Connect schema is read: ``raw`` is what ``from_json`` parses the JSON value into,
    ``convert`` turns that into ``spark`` (None: nothing to do)."""

    spark: T.DataType
    raw: T.DataType
    convert: Convert | None = None

    def apply(self, raw: str) -> str:
        return raw if self.convert is None else self.convert(raw)


def spark_type(schema: ConnectSchema, column: str = "") -> T.DataType:
    """The Spark type of a Connect schema the connector produces (see docs/spark-source.md's table).

    Raises :class:`UnsupportedColumnError` naming ``column`` for a schema without a faithful type.
    """
    return _codec(schema, column or "<column>").spark


_PRIMITIVES: dict[str, T.DataType] = {
    "int8": T.ByteType(),
    "int16": T.ShortType(),
    "int32": T.IntegerType(),
    "int64": T.LongType(),
    "float": T.FloatType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "string": T.StringType(),
}


def _unsupported(schema: ConnectSchema, where: str, why: str = "") -> UnsupportedColumnError:
    described = schema.type + (f" ({schema.name})" if schema.name else "")
    return UnsupportedColumnError(f"column {where}: Connect schema {described} has no Spark type in table views{why}")


def _codec(schema: ConnectSchema, where: str, depth: int = 0) -> _Codec:
    name, kind = schema.name, schema.type
    if name is not None:
        codec = _named_codec(schema, where, depth)
        if codec is not None:
            return codec
        raise _unsupported(schema, where)
    if kind in _PRIMITIVES:
        return _Codec(_PRIMITIVES[kind], _PRIMITIVES[kind])
    if kind == "bytes":
        return _Codec(T.BinaryType(), T.StringType(), _unbase64)
    if kind == "array":
        assert schema.items is not None
        items = _codec(schema.items, f"{where}[]", depth + 1)
        convert = None if items.convert is None else _array_convert(items, depth)
        return _Codec(T.ArrayType(items.spark, True), T.ArrayType(items.raw, True), convert)
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        keys, values = _codec(schema.keys, f"{where}{{key}}", depth + 1), _codec(schema.values, f"{where}{{value}}", depth + 1)
        if keys.convert is not None or not isinstance(keys.raw, T.StringType):
            raise _unsupported(schema, where, ": map keys must be strings")
        convert = None if values.convert is None else _map_convert(values, depth)
        return _Codec(T.MapType(keys.spark, values.spark, True), T.MapType(T.StringType(), values.raw, True), convert)
    if kind == "struct":
        return _struct_codec(schema, where, depth)
    raise _unsupported(schema, where)


def _array_convert(items: _Codec, depth: int) -> Convert:
    variable = f"__x{depth}"
    return lambda raw: f"transform({raw}, {variable} -> {items.apply(variable)})"


def _map_convert(values: _Codec, depth: int) -> Convert:
    key, value = f"__k{depth}", f"__x{depth}"
    return lambda raw: f"transform_values({raw}, ({key}, {value}) -> {values.apply(value)})"


def _struct_codec(schema: ConnectSchema, where: str, depth: int) -> _Codec:
    fields = [(f.name, _codec(f.schema, f"{where}.{f.name}", depth)) for f in schema.fields]
    spark = T.StructType([T.StructField(n, c.spark, True) for n, c in fields])
    raw = T.StructType([T.StructField(n, c.raw, True) for n, c in fields])
    if all(c.convert is None for _, c in fields):
        return _Codec(spark, raw)

    def convert(value: str) -> str:
        built = ", ".join(f"{_literal(n)}, {c.apply(f'{value}.{_quote(n)}')}" for n, c in fields)
        return f"CASE WHEN {value} IS NULL THEN NULL ELSE named_struct({built}) END"

    return _Codec(spark, raw, convert)


def _named_codec(schema: ConnectSchema, where: str, depth: int) -> _Codec | None:
    name, kind = schema.name, schema.type
    if name == DECIMAL_NAME and kind == "bytes":
        return _decimal_codec(schema, where)
    if name == VARIABLE_SCALE_DECIMAL_NAME and kind == "struct":
        target = VARIABLE_SCALE_DECIMAL_TYPE
        problem = f"does not fit {target.simpleString()} (decimal.handling.mode=string keeps such values)"
        return _Codec(
            target,
            T.StructType([T.StructField("scale", T.IntegerType()), T.StructField("value", T.StringType())]),
            lambda raw: _checked(_decimal(f"{raw}.value", f"CAST(-{raw}.scale AS STRING)", target, wide=True), raw, where, problem),
        )
    if kind == "string" and name in _STRING_NAMES:
        return _Codec(T.StringType(), T.StringType())
    if kind == "bytes" and name == BITS_NAME:
        return _Codec(T.BinaryType(), T.StringType(), _unbase64)
    if kind == "struct" and name in _STRUCT_NAMES:
        return _struct_codec(schema, where, depth)
    if kind == "int32" and name in _DATE_NAMES:
        return _Codec(T.DateType(), T.IntegerType(), lambda raw: f"date_from_unix_date({raw})")
    if kind == "int32" and name in _TIME_MILLIS_NAMES:
        return _Codec(T.LongType(), T.IntegerType(), lambda raw: f"(CAST({raw} AS BIGINT) * 1000L)")
    if kind == "int64" and name in (MICRO_TIME_NAME, MICRO_DURATION_NAME):
        return _Codec(T.LongType(), T.LongType())
    if kind == "int64" and name == NANO_TIME_NAME:
        return _Codec(T.LongType(), T.LongType(), lambda raw: _floor_div(raw, 1000))
    if kind == "int64" and name in _TIMESTAMP_MILLIS_NAMES:
        return _Codec(T.TimestampNTZType(), T.LongType(), lambda raw: _ntz(raw, "MILLISECOND"))
    if kind == "int64" and name == MICRO_TIMESTAMP_NAME:
        return _Codec(T.TimestampNTZType(), T.LongType(), lambda raw: _ntz(raw, "MICROSECOND"))
    if kind == "int64" and name == NANO_TIMESTAMP_NAME:
        return _Codec(T.TimestampNTZType(), T.LongType(), lambda raw: _ntz(_floor_div(raw, 1000), "MICROSECOND"))
    if kind == "string" and name == ZONED_TIMESTAMP_NAME:
        return _Codec(T.TimestampType(), T.StringType(), lambda raw: _zoned_timestamp(raw, where))
    if kind == "string" and name == ISO_DATE_NAME:
        return _Codec(T.DateType(), T.StringType(), lambda raw: _checked(f"try_cast({_strip_z(raw)} AS DATE)", raw, where, "is not a date"))
    if kind == "string" and name == ISO_TIMESTAMP_NAME:
        return _Codec(
            T.TimestampNTZType(), T.StringType(),
            lambda raw: _checked(f"try_cast({_strip_z(raw)} AS TIMESTAMP_NTZ)", raw, where, "is not a timestamp"),
        )
    if kind == "string" and name == ISO_TIME_NAME:
        return _Codec(T.LongType(), T.StringType(), lambda raw: _checked(_iso_time_micros(raw), raw, where, "is not a time"))
    return None


def _decimal_codec(schema: ConnectSchema, where: str) -> _Codec:
    parameters = dict(schema.parameters or ())
    scale = int(parameters.get("scale", "0"))
    precision_text = parameters.get("connect.decimal.precision")
    precision = int(precision_text) if precision_text is not None else 38  # MONEY: no precision parameter
    if not 0 <= scale <= precision <= 38:
        raise _unsupported(
            schema, where,
            f": numeric({precision},{scale}) does not fit Spark's DecimalType (at most 38 digits, 0 <= scale <= precision);"
            " use decimal.handling.mode=string or double",
        )
    target = T.DecimalType(precision, scale)
    # Up to 18 digits the unscaled value is a long (8 bytes); Debezium has already rescaled it to the column's scale.
    wide = precision > 18
    return _Codec(
        target, T.StringType(),
        lambda raw: _checked(_decimal(raw, f"'{-scale}'", target, wide=wide), raw, where, f"does not fit {target.simpleString()}"),
    )


# -- conversion expressions (SQL text) -------------------------------------------------------------------


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
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


def _unbase64(raw: str) -> str:
    return f"unbase64({raw})"


def _checked(result: str, raw: str, where: str, problem: str) -> str:
    """``result``, or a query error naming the column where a present value gave no result."""
    message = f"concat({_literal(f'sparkcdc table view: column {where}: value ')}, CAST({raw} AS STRING), {_literal(' ' + problem)})"
    return f"coalesce({result}, CASE WHEN {raw} IS NOT NULL THEN raise_error({message}) END)"


def _decimal(base64_value: str, exponent: str, target: T.DecimalType, *, wide: bool) -> str:
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


def _floor_div(raw: str, divisor: int) -> str:
    """Exact integer division rounding down (a double would lose nanoseconds)."""
    return f"(({raw} - pmod({raw}, {divisor}L)) div {divisor}L)"


def _ntz(amount: str, unit: str) -> str:
    """Epoch + amount as TIMESTAMP_NTZ, independent of the session time zone."""
    return f"timestampadd({unit}, {amount}, TIMESTAMP_NTZ'1970-01-01 00:00:00')"


def _strip_z(raw: str) -> str:
    return f"regexp_replace({raw}, 'Z$', '')"


def _zoned_timestamp(raw: str, where: str) -> str:
    """ZonedTimestamp (ISO-8601 in UTC) -> TIMESTAMP; ``infinity``/``-infinity`` -> pgjdbc's sentinel
    instants, as TIMESTAMP columns carry them."""
    parsed = _checked(f"try_cast({raw} AS TIMESTAMP)", raw, where, "is not a timestamp")
    return (
        f"CASE {raw} WHEN 'infinity' THEN timestamp_micros({TIMESTAMP_POSITIVE_INFINITY_MICROS}L)"
        f" WHEN '-infinity' THEN timestamp_micros({TIMESTAMP_NEGATIVE_INFINITY_MICROS}L) ELSE {parsed} END"
    )


def _iso_time_micros(raw: str) -> str:
    """``HH:MM:SS[.fffffffff]Z`` -> microseconds since midnight."""
    parts = f"split({_strip_z(raw)}, ':')"
    seconds = f"CAST(floor(try_cast({parts}[2] AS DECIMAL(18,9)) * 1000000) AS BIGINT)"
    return f"(try_cast({parts}[0] AS BIGINT) * 3600000000L + try_cast({parts}[1] AS BIGINT) * 60000000L + {seconds})"


# -- unchanged TOAST placeholders -------------------------------------------------------------------------


def _conforms(value: Any, raw: T.DataType) -> bool:
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
        return isinstance(value, list) and all(_conforms(item, raw.elementType) for item in value)
    if isinstance(raw, T.MapType):
        return isinstance(value, dict) and all(isinstance(k, str) and _conforms(v, raw.valueType) for k, v in value.items())
    if isinstance(raw, T.StructType):
        names = set(raw.fieldNames())
        return isinstance(value, dict) and set(value) <= names and all(_conforms(value[f.name], f.dataType) for f in raw.fields if f.name in value)
    return False


def _is_nested(data_type: T.DataType) -> bool:
    return isinstance(data_type, (T.ArrayType, T.MapType, T.StructType))


@dataclass(frozen=True)
class _ColumnReader:
    """How a view column is read from the parsed event: the type from_json reads its field as, and
    the SQL of its staged raw value, its unchanged-TOAST test and its typed value."""

    column: ViewColumn
    codec: _Codec
    raw: T.DataType  # codec.raw, or string when the placeholder does not fit it (parsed a second time)
    key_codec: _Codec | None

    @classmethod
    def of(cls, column: ViewColumn) -> _ColumnReader:
        schema = column.connect_schema if column.in_value else column.key_schema
        assert schema is not None
        codec = _codec(schema, column.name)
        raw = codec.raw if _conforms(column.placeholder, codec.raw) else T.StringType()
        key_codec = _codec(column.key_schema, column.name) if column.key_schema is not None else None
        return cls(column, codec, raw, key_codec)

    def unchanged(self, raw: str) -> str | None:
        """SQL: the raw value is the column's unchanged-TOAST placeholder (None: not detectable)."""
        placeholder = self.column.placeholder
        if placeholder is None or not self.column.in_value:
            return None
        if _is_nested(self.raw):
            expected = f"to_json(from_json({_literal(json.dumps(placeholder))}, {_literal(self.raw.json())}))"
            return f"to_json({raw}) = {expected}"
        if isinstance(placeholder, str):
            return f"{raw} = {_literal(placeholder)}"
        return f"{raw} = CAST({_literal(json.dumps(placeholder))} AS {self.raw.simpleString()})"

    def reparsed(self, raw: str) -> str:
        """SQL: the raw value as the codec reads it (the field was read as its JSON text)."""
        if self.raw == self.codec.raw:
            return raw
        if _is_nested(self.codec.raw):
            return f"from_json({raw}, {_literal(self.codec.raw.json())})"
        if isinstance(self.codec.raw, T.StringType):
            return raw
        return f"CAST({raw} AS {self.codec.raw.simpleString()})"


# -- the view ------------------------------------------------------------------------------------------


def _envelope_type(readers: list[_ColumnReader]) -> T.StructType:
    row = T.StructType([T.StructField(r.column.name, r.raw, True) for r in readers if r.column.in_value])
    return T.StructType([T.StructField("before", row, True), T.StructField("after", row, True)])


def _key_type(readers: list[_ColumnReader]) -> T.StructType:
    return T.StructType([T.StructField(r.column.name, r.key_codec.raw, True) for r in readers if r.key_codec is not None])


def _parse(text: Column, schema: T.StructType, wrapped: bool) -> Column:
    if not wrapped:
        return F.from_json(text, schema)
    return F.from_json(text, T.StructType([T.StructField("payload", schema, True)])).getField("payload")


def table_changes(frame: DataFrame, table: str | TableView, properties: Mapping[str, str] | None = None) -> DataFrame:
    """One table's changes from the ``postgres-cdc`` source (default "columns" layout), typed.

    ``table`` is a :class:`TableView` (from :func:`describe_table`) or a table name, then described
    with ``properties`` (the connector properties the source was started with).
    """
    if isinstance(table, TableView):
        view = table
    else:
        if properties is None:
            raise TypeError(f"table_changes({table!r}): pass the connector properties, or a TableView from describe_table")
        view = describe_table(properties, table)
    missing = [name for name in _SOURCE_COLUMNS if name not in frame.columns]
    if missing:
        raise TableViewError(
            f"table_changes needs the postgres-cdc source's default 'columns' layout; the frame lacks {', '.join(missing)}"
        )
    readers = [_ColumnReader.of(column) for column in view.columns]
    has_key = any(r.key_codec is not None for r in readers)
    meta_names = [name for name, _ in METADATA_COLUMNS[:-1]]

    events = frame.where(
        (F.col("schema") == view.schema_name) & (F.col("table") == view.table_name)
        & F.col("op").isin(*CHANGE_OPS) & F.col("value").isNotNull()
    )
    parsed = events.select(
        _parse(F.col("value"), _envelope_type(readers), view.value_schemas_enable).alias("__value"),
        (_parse(F.col("key"), _key_type(readers), view.key_schemas_enable) if has_key else F.lit(None)).alias("__key"),
        # Headers are always serialized with their schema (as Debezium's JsonConverter for headers does).
        (_parse(F.expr(f"CAST(try_element_at(filter(headers, __h -> __h.key = {_literal(_OLD_KEY_HEADER)}), 1).value AS STRING)"),
                _key_type(readers), True) if has_key else F.lit(None)).alias("__oldkey"),
        F.col("op").alias("__op"),
        F.col("commit_lsn").cast("long").alias("__commit_lsn"),
        F.col("lsn").cast("long").alias("__lsn"),
        F.col("ordinal").cast("long").alias("__ordinal"),
        F.col("tx_id").cast("long").alias("__tx_id"),
        F.col("source_ts").cast("timestamp").alias("__source_ts"),
        F.col("snapshot").alias("__snapshot"),
    )
    # The image: c/u/r read ``after``, d ``before`` (t has neither). Each parsed value is read once.
    picked = parsed.selectExpr("CASE WHEN __op = 'd' THEN __value.before ELSE __value.after END AS __image", "__key", "__oldkey",
                               *meta_names)

    # Per column, as plain columns: the raw value (placeholders and a delete's missing columns already
    # null, read as the codec reads it), the key's raw value and the unchanged-TOAST flag.
    flag_exprs: list[str] = []
    value_exprs: list[str] = []
    plans: list[tuple[_ColumnReader, str | None, str | None, str | None]] = []
    for index, reader in enumerate(readers):
        column = reader.column
        raw_name = key_name = flag_name = None
        if column.in_value:
            raw = f"__image.{_quote(column.name)}"
            test = reader.unchanged(raw)
            if test is not None:
                flag_name = f"__f{index}"
                # A create carries placeholders only as the second half of a primary-key change.
                flag_exprs.append(f"(__op IN ('u', 'c') AND coalesce({test}, false)) AS {flag_name}")
                raw = f"CASE WHEN {flag_name} THEN NULL ELSE {raw} END"
            if not column.in_delete_image:  # a delete's before-image lacks it: Debezium's fallback, not data
                raw = f"CASE WHEN __op = 'd' THEN NULL ELSE {raw} END"
            raw_name = f"__r{index}"
            value_exprs.append(f"{reader.reparsed(raw)} AS {raw_name}")
        if reader.key_codec is not None:
            key_name = f"__k{index}"
            value_exprs.append(f"__key.{_quote(column.name)} AS {key_name}")
        plans.append((reader, raw_name, key_name, flag_name))
    # The raw values use the flags: the flags come first, in a projection of their own.
    flagged = picked.selectExpr("*", *flag_exprs) if flag_exprs else picked
    flag_names = [flag for _, _, _, flag in plans if flag is not None]
    stage = flagged.selectExpr(*value_exprs, *flag_names, *meta_names, "__oldkey")

    data: list[str] = []
    unchanged: list[str] = []
    for reader, raw_name, key_name, flag_name in plans:
        column = reader.column
        value = reader.codec.apply(raw_name) if raw_name is not None else None
        if key_name is not None:
            assert reader.key_codec is not None
            from_key = reader.key_codec.apply(key_name)
            value = from_key if value is None else f"coalesce({value}, {from_key})"
        assert value is not None
        data.append(f"CAST({value} AS {column.spark_type.simpleString()}) AS {_quote(column.name)}")
        if flag_name is not None:
            flag = flag_name if key_name is None else f"{flag_name} AND {key_name} IS NULL"  # a key column comes from the key
            unchanged.append(f"CASE WHEN {flag} THEN {_literal(column.name)} END")
    unchanged_names = f"filter(array({', '.join(unchanged)}), __n -> __n IS NOT NULL)" if unchanged else "array()"
    old_key_fields = [
        f"{_literal(reader.column.name)}, CAST({reader.key_codec.apply(f'__oldkey.{_quote(reader.column.name)}')} "
        f"AS {reader.column.spark_type.simpleString()})"
        for reader in readers if reader.key_codec is not None
    ]
    old_key = (f"CASE WHEN __oldkey IS NULL THEN NULL ELSE named_struct({', '.join(old_key_fields)}) END" if old_key_fields
               else "CAST(NULL AS STRUCT<>)")
    return stage.selectExpr(*data, *meta_names, f"CAST({unchanged_names} AS ARRAY<STRING>) AS __unchanged",
                            f"{old_key} AS {OLD_KEY}")
