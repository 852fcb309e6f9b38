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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

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

__all__ = [
    "CHANGE_OPS",
    "METADATA_COLUMNS",
    "TableNotCapturedError",
    "TableView",
    "TableViewError",
    "UnknownTableError",
    "UnsupportedColumnError",
    "ViewColumn",
    "describe_table",
    "spark_type",
    "table_changes",
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

_SOURCE_COLUMNS = ("topic", "key", "value", "op", "schema", "table", "lsn", "commit_lsn", "ordinal", "tx_id", "source_ts", "snapshot")

# Named string schemas whose value is kept as the string Debezium sends.
_STRING_NAMES = frozenset({JSON_NAME, XML_NAME, UUID_NAME, LTREE_NAME, ENUM_NAME, TSVECTOR_NAME, ZONED_TIME_NAME, INTERVAL_NAME})
_STRUCT_NAMES = frozenset({POINT_NAME, GEOMETRY_NAME, GEOGRAPHY_NAME})
_DATE_NAMES = frozenset({DATE_NAME, CONNECT_DATE_NAME})
_TIME_MILLIS_NAMES = frozenset({TIME_NAME, CONNECT_TIME_NAME})
_TIMESTAMP_MILLIS_NAMES = frozenset({TIMESTAMP_NAME, CONNECT_TIMESTAMP_NAME})
#: Spark's DecimalType holds at most 38 digits; VariableScaleDecimal (numeric without precision) becomes this.
VARIABLE_SCALE_DECIMAL_TYPE = T.DecimalType(38, 18)
_TWO_TO_64 = Decimal(2**64)


class TableViewError(Exception):
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
    column_names = [c.name for c in description.columns]
    value_plans = table_schema._value_fields  # noqa: SLF001 - the field plans say which column each field reads
    key_plans = table_schema._key_fields if table_schema.key_schema is not None else ()  # noqa: SLF001
    key_fields = {f.name: f.schema for f in table_schema.key_schema.fields} if table_schema.key_schema is not None else {}
    keys = tuple(key_fields)

    def source_column(position: int, field_name: str) -> str:
        return column_names[position] if position >= 0 else field_name

    view_columns: list[ViewColumn] = []
    for plan, field in zip(value_plans, table_schema.row_schema.fields, strict=True):
        original = source_column(plan.position, field.name)
        view_columns.append(
            ViewColumn(
                name=field.name,
                spark_type=spark_type(field.schema, column=f"{qualified}.{field.name}"),
                connect_schema=field.schema,
                pg_type=declared.get(original, ""),
                nullable=field.schema.optional,
                is_key=field.name in key_fields,
                placeholder=plan.toast,
                key_schema=key_fields.get(field.name),
                in_delete_image=identity is None or original in identity or field.name in key_fields,
            )
        )
    in_value = {c.name for c in view_columns}
    for plan in key_plans:
        if plan.name in in_value:
            continue
        schema = key_fields[plan.name]
        original = source_column(plan.position, plan.name)
        view_columns.append(
            ViewColumn(
                name=plan.name,
                spark_type=spark_type(schema, column=f"{qualified}.{plan.name}"),
                connect_schema=schema,
                pg_type=declared.get(original, ""),
                nullable=schema.optional,
                is_key=True,
                in_value=False,
                key_schema=schema,
            )
        )
    return TableView(
        table=qualified,
        topic=table_schema.topic,
        keys=keys,
        columns=tuple(view_columns),
        schema_name=schema_name,
        table_name=table_name,
        key_schemas_enable=config.key_schemas_enable,
        value_schemas_enable=config.value_schemas_enable,
        replica_identity=info.replica_identity,
    )


# -- Connect schema -> Spark type, and the conversion from what from_json reads ----------------------------

Convert = Callable[[Column], Column]


@dataclass(frozen=True)
class _Codec:
    """How one Connect schema is read: ``raw`` is what ``from_json`` parses the JSON value into,
    ``convert`` turns that into ``spark`` (None: nothing to do)."""

    spark: T.DataType
    raw: T.DataType
    convert: Convert | None = None

    def apply(self, raw: Column) -> Column:
        return raw if self.convert is None else self.convert(raw)


def spark_type(schema: ConnectSchema, column: str = "") -> T.DataType:
    """The Spark type of a Connect schema the connector produces (see the module docs' table).

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


def _codec(schema: ConnectSchema, where: str) -> _Codec:
    name, kind = schema.name, schema.type
    if name is not None:
        codec = _named_codec(schema, where)
        if codec is not None:
            return codec
        raise _unsupported(schema, where)
    if kind in _PRIMITIVES:
        return _Codec(_PRIMITIVES[kind], _PRIMITIVES[kind])
    if kind == "bytes":
        return _Codec(T.BinaryType(), T.StringType(), F.unbase64)
    if kind == "array":
        assert schema.items is not None
        items = _codec(schema.items, f"{where}[]")
        convert = None if items.convert is None else _array_convert(items.convert)
        return _Codec(T.ArrayType(items.spark, schema.items.optional), T.ArrayType(items.raw, True), convert)
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        keys, values = _codec(schema.keys, f"{where}{{key}}"), _codec(schema.values, f"{where}{{value}}")
        if keys.convert is not None or not isinstance(keys.raw, T.StringType):
            raise _unsupported(schema, where, ": map keys must be strings")
        convert = None if values.convert is None else _map_convert(values.convert)
        return _Codec(T.MapType(keys.spark, values.spark, schema.values.optional), T.MapType(T.StringType(), values.raw, True), convert)
    if kind == "struct":
        return _struct_codec(schema, where)
    raise _unsupported(schema, where)


def _array_convert(convert: Convert) -> Convert:
    return lambda raw: F.transform(raw, convert)


def _map_convert(convert: Convert) -> Convert:
    return lambda raw: F.transform_values(raw, lambda _key, value: convert(value))


def _struct_codec(schema: ConnectSchema, where: str) -> _Codec:
    fields = [(f.name, f.schema.optional, _codec(f.schema, f"{where}.{f.name}")) for f in schema.fields]
    spark = T.StructType([T.StructField(n, c.spark, optional) for n, optional, c in fields])
    raw = T.StructType([T.StructField(n, c.raw, True) for n, _, c in fields])
    if all(c.convert is None for _, _, c in fields):
        return _Codec(spark, raw)

    def convert(value: Column) -> Column:
        built = F.struct(*[c.apply(value.getField(n)).alias(n) for n, _, c in fields])
        return F.when(value.isNull(), F.lit(None).cast(spark)).otherwise(built)

    return _Codec(spark, raw, convert)


def _named_codec(schema: ConnectSchema, where: str) -> _Codec | None:
    name, kind = schema.name, schema.type
    if name == DECIMAL_NAME and kind == "bytes":
        return _decimal_codec(schema, where)
    if name == VARIABLE_SCALE_DECIMAL_NAME and kind == "struct":
        return _Codec(
            VARIABLE_SCALE_DECIMAL_TYPE,
            T.StructType([T.StructField("scale", T.IntegerType()), T.StructField("value", T.StringType())]),
            lambda raw: _checked(_scaled_decimal(raw.getField("value"), -raw.getField("scale"), VARIABLE_SCALE_DECIMAL_TYPE),
                                 raw, where, f"does not fit {VARIABLE_SCALE_DECIMAL_TYPE.simpleString()}"
                                 " (use decimal.handling.mode=string for such values)"),
        )
    if kind == "string" and name in _STRING_NAMES:
        return _Codec(T.StringType(), T.StringType())
    if kind == "bytes" and name == BITS_NAME:
        return _Codec(T.BinaryType(), T.StringType(), F.unbase64)
    if kind == "struct" and name in _STRUCT_NAMES:
        return _struct_codec(schema, where)
    if kind == "int32" and name in _DATE_NAMES:
        return _Codec(T.DateType(), T.IntegerType(), F.date_from_unix_date)
    if kind == "int32" and name in _TIME_MILLIS_NAMES:
        return _Codec(T.LongType(), T.IntegerType(), lambda raw: raw.cast("long") * 1000)
    if kind == "int64" and name == MICRO_TIME_NAME:
        return _Codec(T.LongType(), T.LongType())
    if kind == "int64" and name == NANO_TIME_NAME:
        return _Codec(T.LongType(), T.LongType(), lambda raw: _floor_div(raw, 1000))
    if kind == "int64" and name in _TIMESTAMP_MILLIS_NAMES:
        return _Codec(T.TimestampNTZType(), T.LongType(), lambda raw: _ntz(raw, "MILLISECOND"))
    if kind == "int64" and name == MICRO_TIMESTAMP_NAME:
        return _Codec(T.TimestampNTZType(), T.LongType(), lambda raw: _ntz(raw, "MICROSECOND"))
    if kind == "int64" and name == NANO_TIMESTAMP_NAME:
        return _Codec(T.TimestampNTZType(), T.LongType(), lambda raw: _ntz(_floor_div(raw, 1000), "MICROSECOND"))
    if kind == "int64" and name == MICRO_DURATION_NAME:
        return _Codec(T.LongType(), T.LongType())
    if kind == "string" and name == ZONED_TIMESTAMP_NAME:
        return _Codec(T.TimestampType(), T.StringType(), lambda raw: _zoned_timestamp(raw, where))
    if kind == "string" and name == ISO_DATE_NAME:
        return _Codec(T.DateType(), T.StringType(), lambda raw: _checked(_strip_z(raw).try_cast(T.DateType()), raw, where, "is not a date"))
    if kind == "string" and name == ISO_TIMESTAMP_NAME:
        return _Codec(
            T.TimestampNTZType(), T.StringType(),
            lambda raw: _checked(_strip_z(raw).try_cast(T.TimestampNTZType()), raw, where, "is not a timestamp"),
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
    return _Codec(
        target, T.StringType(),
        lambda raw: _checked(_scaled_decimal(raw, F.lit(-scale), target), raw, where, f"does not fit {target.simpleString()}"),
    )


# -- conversion expressions ------------------------------------------------------------------------------


def _checked(result: Column, raw: Column, where: str, problem: str) -> Column:
    """``result``, or a query error naming the column where a present value gave no result."""
    message = F.concat(F.lit(f"sparkcdc table view: column {where}: value "), F.coalesce(raw.cast("string"), F.lit("?")), F.lit(f" {problem}"))
    return F.when(raw.isNotNull() & result.isNull(), F.raise_error(message)).otherwise(result)


def _unscaled_text(base64_value: Column) -> Column:
    """Base64 of a big-endian two's-complement integer (Connect Decimal bytes) -> its decimal digits.

    Up to 16 bytes: the value sign-extended to 32 hex digits, as a signed high and an unsigned low
    64-bit half, combined in decimal(38,0). Null when longer or beyond 38 digits.
    """
    hexed = F.hex(F.unbase64(base64_value))
    negative = F.substring(hexed, 1, 1) >= F.lit("8")
    padded = F.when(negative, F.lpad(hexed, 32, "F")).otherwise(F.lpad(hexed, 32, "0"))
    high = F.conv(F.substring(padded, 1, 16), 16, -10).cast(T.DecimalType(38, 0))
    low = F.conv(F.substring(padded, 17, 16), 16, 10).cast(T.DecimalType(38, 0))
    unscaled = F.try_add(F.try_multiply(high, F.lit(_TWO_TO_64)), low)
    return F.when(F.length(hexed) <= 32, unscaled.cast("string"))


def _scaled_decimal(base64_value: Column, exponent: Column, target: T.DecimalType) -> Column:
    """``unscaled * 10^exponent`` as ``target`` (exact, or rounded HALF_UP to the target's scale)."""
    text = F.concat(_unscaled_text(base64_value), F.lit("E"), exponent.cast("string"))
    return text.try_cast(target)


def _floor_div(raw: Column, divisor: int) -> Column:
    """Exact integer division rounding down (decimal arithmetic: a double would lose nanoseconds)."""
    return F.floor(raw.cast(T.DecimalType(20, 0)) / F.lit(Decimal(divisor))).cast("long")


def _ntz(amount: Column, unit: str) -> Column:
    """Epoch + amount as TIMESTAMP_NTZ, independent of the session time zone."""
    return F.timestamp_add(unit, amount, F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'"))


def _strip_z(raw: Column) -> Column:
    return F.regexp_replace(raw, "Z$", "")


def _zoned_timestamp(raw: Column, where: str) -> Column:
    """ZonedTimestamp (ISO-8601 in UTC) -> TIMESTAMP; ``infinity``/``-infinity`` -> pgjdbc's sentinel
    instants, as TIMESTAMP columns carry them."""
    parsed = _checked(raw.try_cast(T.TimestampType()), raw, where, "is not a timestamp")
    return (
        F.when(raw == "infinity", F.timestamp_micros(F.lit(TIMESTAMP_POSITIVE_INFINITY_MICROS)))
        .when(raw == "-infinity", F.timestamp_micros(F.lit(TIMESTAMP_NEGATIVE_INFINITY_MICROS)))
        .otherwise(parsed)
    )


def _iso_time_micros(raw: Column) -> Column:
    """``HH:MM:SS[.fffffffff]Z`` -> microseconds since midnight."""
    parts = F.split(_strip_z(raw), ":")
    seconds = parts.getItem(2).try_cast(T.DecimalType(18, 9))
    micros = F.floor(seconds * F.lit(Decimal(1_000_000))).cast("long")
    return parts.getItem(0).try_cast("long") * 3_600_000_000 + parts.getItem(1).try_cast("long") * 60_000_000 + micros


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


@dataclass(frozen=True)
class _ColumnReader:
    """How a view column is read from the parsed event: the raw type from_json uses for its field, and
    the expressions for its value and its unchanged-TOAST test."""

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

    def unchanged(self, raw: Column) -> Column | None:
        placeholder = self.column.placeholder
        if placeholder is None or not self.column.in_value:
            return None
        if isinstance(self.raw, (T.ArrayType, T.MapType, T.StructType)):
            expected = F.to_json(F.from_json(F.lit(json.dumps(placeholder)), self.raw))
            return F.to_json(raw) == expected
        return raw == F.lit(placeholder).cast(self.raw)

    def value(self, raw: Column) -> Column:
        if self.raw != self.codec.raw:  # the JSON text of the field: parse it as what it is
            if isinstance(self.codec.raw, (T.ArrayType, T.MapType, T.StructType)):
                raw = F.from_json(raw, self.codec.raw)
            elif not isinstance(self.codec.raw, T.StringType):
                raw = raw.cast(self.codec.raw)
        return self.codec.apply(raw)


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

    events = frame.where(
        (F.col("schema") == view.schema_name) & (F.col("table") == view.table_name)
        & F.col("op").isin(*CHANGE_OPS) & F.col("value").isNotNull()
    )
    metadata = [
        F.col("op").alias("__op"),
        F.col("commit_lsn").cast("long").alias("__commit_lsn"),
        F.col("lsn").cast("long").alias("__lsn"),
        F.col("ordinal").cast("long").alias("__ordinal"),
        F.col("tx_id").cast("long").alias("__tx_id"),
        F.col("source_ts").cast("timestamp").alias("__source_ts"),
        F.col("snapshot").alias("__snapshot"),
    ]
    parsed = events.select(
        _parse(F.col("value"), _envelope_type(readers), view.value_schemas_enable).alias("__value"),
        (_parse(F.col("key"), _key_type(readers), view.key_schemas_enable) if has_key else F.lit(None)).alias("__key"),
        *metadata,
    )
    op = F.col("__op")
    image = F.when(op == "d", F.col("__value.before")).otherwise(F.col("__value.after"))
    # One projection picks the image; the next converts (each parsed value is read once).
    picked = parsed.select(image.alias("__image"), "__key", *[name for name, _ in METADATA_COLUMNS[:-1]])

    data: list[Column] = []
    unchanged: list[Column] = []
    for reader in readers:
        column = reader.column
        value: Column | None = None
        flag: Column | None = None
        if column.in_value:
            raw = F.col("__image").getField(column.name)
            flag = reader.unchanged(raw)
            if flag is not None:
                flag = (op == "u") & F.coalesce(flag, F.lit(False))
                raw = F.when(flag, F.lit(None)).otherwise(raw)
            if not column.in_delete_image:  # a delete's before-image does not carry it: Debezium's fallback, not data
                raw = F.when(op == "d", F.lit(None)).otherwise(raw)
            value = reader.value(raw)
        if reader.key_codec is not None:
            key_raw = F.col("__key").getField(column.name)
            from_key = reader.key_codec.apply(key_raw)
            value = from_key if value is None else F.coalesce(value, from_key)
            if flag is not None and column.in_value:
                flag = flag & key_raw.isNull()
        assert value is not None
        data.append(value.cast(column.spark_type).alias(column.name))
        if column.in_value and flag is not None:
            unchanged.append(F.when(flag, F.lit(column.name)))
    if unchanged:
        unchanged_names = F.filter(F.array(*unchanged), lambda name: name.isNotNull())
    else:
        unchanged_names = F.array()
    result = picked.select(
        *data,
        *[F.col(name) for name, _ in METADATA_COLUMNS[:-1]],
        unchanged_names.cast(T.ArrayType(T.StringType())).alias("__unchanged"),
    )
    return result
