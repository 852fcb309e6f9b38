"""Connect schema -> Spark type, per handling mode, and how each value is read.

The connector's event schemas already encode every ``*.handling.mode`` (a ``numeric`` column is a
Connect Decimal, a double or a string; a timestamp is MicroTimestamp or ZonedTimestamp ...), so the
Spark type of a view column follows from its Connect schema alone. A :class:`Codec` says what
``from_json`` parses the JSON value into and which Spark SQL expression (:mod:`.expressions`) turns
that into the column's type. See docs/spark-source.md's table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import types as T

from ...debezium.connect import ConnectSchema
from ...debezium.types.geometric import GEOGRAPHY_NAME, GEOMETRY_NAME, POINT_NAME
from ...debezium.types.numeric import DECIMAL_NAME, VARIABLE_SCALE_DECIMAL_NAME
from ...debezium.types.temporal import (
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
    ZONED_TIME_NAME,
    ZONED_TIMESTAMP_NAME,
)
from ...debezium.types.text import BITS_NAME, ENUM_NAME, JSON_NAME, LTREE_NAME, TSVECTOR_NAME, UUID_NAME, XML_NAME
from ...debezium.types.vectors import DOUBLE_VECTOR_NAME, FLOAT_VECTOR_NAME, SPARSE_VECTOR_NAME
from . import kernels
from .errors import UnsupportedColumnError
from .expressions import (
    checked,
    decimal_from_bytes,
    epoch_ntz,
    floor_div,
    iso_time_micros,
    quote_name,
    sql_literal,
    strip_z,
    unbase64,
    zoned_timestamp,
)

__all__ = ["VARIABLE_SCALE_DECIMAL_TYPE", "Codec", "Convert", "codec_for", "spark_type"]

# Named string schemas whose value is kept as the string Debezium sends.
_STRING_NAMES = frozenset({JSON_NAME, XML_NAME, UUID_NAME, LTREE_NAME, ENUM_NAME, TSVECTOR_NAME, ZONED_TIME_NAME, INTERVAL_NAME})
_STRUCT_NAMES = frozenset({POINT_NAME, GEOMETRY_NAME, GEOGRAPHY_NAME, SPARSE_VECTOR_NAME})
# pgvector's dense vectors: arrays of double (vector) and float (halfvec).
_ARRAY_NAMES = frozenset({DOUBLE_VECTOR_NAME, FLOAT_VECTOR_NAME})
_DATE_NAMES = frozenset({DATE_NAME, CONNECT_DATE_NAME})
_TIME_MILLIS_NAMES = frozenset({TIME_NAME, CONNECT_TIME_NAME})
_TIMESTAMP_MILLIS_NAMES = frozenset({TIMESTAMP_NAME, CONNECT_TIMESTAMP_NAME})
#: Spark's DecimalType holds at most 38 digits; VariableScaleDecimal (numeric without precision) becomes this.
VARIABLE_SCALE_DECIMAL_TYPE = T.DecimalType(38, 18)

Convert = Callable[[str], str]


@dataclass(frozen=True)
class Codec:
    """How one Connect schema is read: ``raw`` is what ``from_json`` parses the JSON value into,
    ``convert`` turns that into ``spark`` (None: nothing to do). ``kernel``: the same conversion on
    Arrow values (:mod:`.kernels`), where one gives exactly the expression's result."""

    spark: T.DataType
    raw: T.DataType
    convert: Convert | None = None
    kernel: kernels.Kernel | None = None

    def apply(self, raw: str) -> str:
        return raw if self.convert is None else self.convert(raw)

    @property
    def arrow_kernel(self) -> kernels.Kernel | None:
        """The conversion on Arrow values; None when only Spark SQL does it."""
        return kernels.identity if self.convert is None else self.kernel


def spark_type(schema: ConnectSchema, column: str = "") -> T.DataType:
    """The Spark type of a Connect schema the connector produces (see docs/spark-source.md's table).

    Raises :class:`UnsupportedColumnError` naming ``column`` for a schema without a faithful type.
    """
    return codec_for(schema, column or "<column>").spark


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


def codec_for(schema: ConnectSchema, where: str, depth: int = 0) -> Codec:
    name, kind = schema.name, schema.type
    if name is not None:
        codec = _named_codec(schema, where, depth)
        if codec is not None:
            return codec
        raise _unsupported(schema, where)
    if kind in _PRIMITIVES:
        return Codec(_PRIMITIVES[kind], _PRIMITIVES[kind])
    if kind == "bytes":
        return Codec(T.BinaryType(), T.StringType(), unbase64)
    if kind == "array":
        assert schema.items is not None
        items = codec_for(schema.items, f"{where}[]", depth + 1)
        convert = None if items.convert is None else _array_convert(items, depth)
        return Codec(T.ArrayType(items.spark, True), T.ArrayType(items.raw, True), convert)
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        keys, values = codec_for(schema.keys, f"{where}{{key}}", depth + 1), codec_for(schema.values, f"{where}{{value}}", depth + 1)
        if schema.keys.name is None and schema.keys.type in _PAIR_KEYS and schema.values.name is None and schema.values.type in _PAIR_VALUES:
            return _pairs_codec(keys, values, depth)
        if keys.convert is not None or not isinstance(keys.raw, T.StringType):
            raise _unsupported(schema, where, ": map keys must be strings")
        convert = None if values.convert is None else _map_convert(values, depth)
        return Codec(T.MapType(keys.spark, values.spark, True), T.MapType(T.StringType(), values.raw, True), convert)
    if kind == "struct":
        return _struct_codec(schema, where, depth)
    raise _unsupported(schema, where)


def _array_convert(items: Codec, depth: int) -> Convert:
    variable = f"__x{depth}"
    return lambda raw: f"transform({raw}, {variable} -> {items.apply(variable)})"


#: Map key and value types a double holds exactly: the ``[[key, value], ...]`` JSON JsonConverter
#: writes for a map whose keys are not strings (pgvector's sparsevec: ``map<int16, double>``) is
#: read as ``array<array<double>>`` and rebuilt as a Spark map.
_PAIR_KEYS = frozenset({"int8", "int16", "int32"})
_PAIR_VALUES = frozenset({"int8", "int16", "int32", "float", "double"})


def _pairs_codec(keys: Codec, values: Codec, depth: int) -> Codec:
    entry = f"__e{depth}"

    def convert(raw: str) -> str:
        return (f"map_from_entries(transform({raw}, {entry} -> named_struct('key', CAST({entry}[0] AS {keys.spark.simpleString()}), "
                f"'value', CAST({entry}[1] AS {values.spark.simpleString()}))))")

    return Codec(T.MapType(keys.spark, values.spark, True), T.ArrayType(T.ArrayType(T.DoubleType(), True), True), convert)


def _map_convert(values: Codec, depth: int) -> Convert:
    key, value = f"__k{depth}", f"__x{depth}"
    return lambda raw: f"transform_values({raw}, ({key}, {value}) -> {values.apply(value)})"


def _struct_codec(schema: ConnectSchema, where: str, depth: int) -> Codec:
    fields = [(f.name, codec_for(f.schema, f"{where}.{f.name}", depth)) for f in schema.fields]
    spark = T.StructType([T.StructField(n, c.spark, True) for n, c in fields])
    raw = T.StructType([T.StructField(n, c.raw, True) for n, c in fields])
    if all(c.convert is None for _, c in fields):
        return Codec(spark, raw)

    def convert(value: str) -> str:
        built = ", ".join(f"{sql_literal(n)}, {c.apply(f'{value}.{quote_name(n)}')}" for n, c in fields)
        return f"CASE WHEN {value} IS NULL THEN NULL ELSE named_struct({built}) END"

    return Codec(spark, raw, convert)


def _named_codec(schema: ConnectSchema, where: str, depth: int) -> Codec | None:
    name, kind = schema.name, schema.type
    if name == DECIMAL_NAME and kind == "bytes":
        return _decimal_codec(schema, where)
    if name == VARIABLE_SCALE_DECIMAL_NAME and kind == "struct":
        target = VARIABLE_SCALE_DECIMAL_TYPE
        problem = f"does not fit {target.simpleString()} (decimal.handling.mode=string keeps such values)"
        return Codec(
            target,
            T.StructType([T.StructField("scale", T.IntegerType()), T.StructField("value", T.StringType())]),
            lambda raw: checked(decimal_from_bytes(f"{raw}.value", f"CAST(-{raw}.scale AS STRING)", target, wide=True), raw, where, problem),
        )
    if kind == "string" and name in _STRING_NAMES:
        return Codec(T.StringType(), T.StringType())
    if kind == "bytes" and name == BITS_NAME:
        return Codec(T.BinaryType(), T.StringType(), unbase64)
    if kind == "struct" and name in _STRUCT_NAMES:
        return _struct_codec(schema, where, depth)
    if kind == "array" and name in _ARRAY_NAMES:
        return codec_for(schema.with_name(None), where, depth)
    if kind == "int32" and name in _DATE_NAMES:
        return Codec(T.DateType(), T.IntegerType(), lambda raw: f"date_from_unix_date({raw})", kernels.date_from_days)
    if kind == "int32" and name in _TIME_MILLIS_NAMES:
        return Codec(T.LongType(), T.IntegerType(), lambda raw: f"(CAST({raw} AS BIGINT) * 1000L)", kernels.millis_to_micros)
    if kind == "int64" and name in (MICRO_TIME_NAME, MICRO_DURATION_NAME):
        return Codec(T.LongType(), T.LongType())
    if kind == "int64" and name == NANO_TIME_NAME:
        return Codec(T.LongType(), T.LongType(), lambda raw: floor_div(raw, 1000))
    if kind == "int64" and name in _TIMESTAMP_MILLIS_NAMES:
        return Codec(T.TimestampNTZType(), T.LongType(), lambda raw: epoch_ntz(raw, "MILLISECOND"))
    if kind == "int64" and name == MICRO_TIMESTAMP_NAME:
        return Codec(T.TimestampNTZType(), T.LongType(), lambda raw: epoch_ntz(raw, "MICROSECOND"), kernels.micros_since_epoch_ntz)
    if kind == "int64" and name == NANO_TIMESTAMP_NAME:
        return Codec(T.TimestampNTZType(), T.LongType(), lambda raw: epoch_ntz(floor_div(raw, 1000), "MICROSECOND"))
    if kind == "string" and name == ZONED_TIMESTAMP_NAME:
        return Codec(T.TimestampType(), T.StringType(), lambda raw: zoned_timestamp(raw, where), kernels.zoned_timestamp)
    if kind == "string" and name == ISO_DATE_NAME:
        return Codec(T.DateType(), T.StringType(), lambda raw: checked(f"try_cast({strip_z(raw)} AS DATE)", raw, where, "is not a date"))
    if kind == "string" and name == ISO_TIMESTAMP_NAME:
        return Codec(
            T.TimestampNTZType(), T.StringType(),
            lambda raw: checked(f"try_cast({strip_z(raw)} AS TIMESTAMP_NTZ)", raw, where, "is not a timestamp"),
        )
    if kind == "string" and name == ISO_TIME_NAME:
        return Codec(T.LongType(), T.StringType(), lambda raw: checked(iso_time_micros(raw), raw, where, "is not a time"))
    return None


def _decimal_codec(schema: ConnectSchema, where: str) -> Codec:
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
    return Codec(
        target, T.StringType(),
        lambda raw: checked(decimal_from_bytes(raw, f"'{-scale}'", target, wide=wide), raw, where, f"does not fit {target.simpleString()}"),
    )
