"""The ``changes`` output's rows and its blocks' Arrow schema, which both sides read.

The source's rows in this layout: ``topic, schema, table, op, commit_lsn, lsn, ordinal, snapshot,
rows, truncates, key_changes, partial_key_changes, shape, description, block`` (:mod:`.blocks` says
what each holds). A block is an Arrow IPC stream of one table version's changes: its *raw* columns
(the typed view's codecs' raw values, each with its column's identity as field metadata), then the
view's metadata columns. :mod:`.blocks` writes blocks in the reader tasks, :mod:`.typed` reads them
in the query; both build the same schema here, from the same view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ...views.model import OLD_KEY, ViewColumn
from ...views.reader import ColumnReader

__all__ = ["CHANGES_ARROW_SCHEMA", "CHANGES_DDL_SCHEMA", "SOURCE_TS", "block_schema", "has_changes_columns", "is_changes_layout",
           "typed_array"]

CHANGES_DDL_SCHEMA = (
    "topic string, schema string, table string, op string, commit_lsn long, lsn long, ordinal long, snapshot string, "
    "rows int, truncates int, key_changes int, partial_key_changes int, shape string, description string, block binary"
)
CHANGES_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("schema", pa.string()), ("table", pa.string()), ("op", pa.string()),
    ("commit_lsn", pa.int64()), ("lsn", pa.int64()), ("ordinal", pa.int64()), ("snapshot", pa.string()),
    ("rows", pa.int32()), ("truncates", pa.int32()), ("key_changes", pa.int32()), ("partial_key_changes", pa.int32()),
    ("shape", pa.string()), ("description", pa.string()), ("block", pa.binary()),
])
SOURCE_TS = pa.timestamp("us", tz="UTC")


def is_changes_layout(frame: DataFrame) -> bool:
    return has_changes_columns(frame.columns)


def has_changes_columns(columns: Sequence[str]) -> bool:
    """Whether a frame with these columns is the source's ``changes`` layout."""
    return "block" in columns and "rows" in columns


def _arrow_type(spark_type: T.DataType) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type)


def block_schema(readers: Sequence[ColumnReader]) -> pa.Schema:
    """The Arrow schema of a table's blocks: raw data columns (each with its column's identity as
    field metadata: :func:`_identity`), then the metadata columns."""
    fields = [pa.field(f"__r{i}", _arrow_type(_raw_type(r)), metadata=_identity(r.column)) for i, r in enumerate(readers)]
    fields += [
        pa.field("__op", pa.string()), pa.field("__commit_lsn", pa.int64()), pa.field("__lsn", pa.int64()),
        pa.field("__ordinal", pa.int64()), pa.field("__tx_id", pa.int64()), pa.field("__source_ts", SOURCE_TS),
        pa.field("__snapshot", pa.string()), pa.field("__unchanged", pa.list_(pa.string())),
    ]
    key_fields = [pa.field(r.column.name, _arrow_type(r.key_codec.raw)) for r in readers if r.key_codec is not None]
    if key_fields:  # a table without a key has no old key (and Spark takes no empty struct from Arrow)
        fields.append(pa.field(OLD_KEY, pa.struct(key_fields)))
    return pa.schema(fields)


def _identity(column: ViewColumn) -> dict[bytes, bytes]:
    """A raw column's field metadata: the source column's ``attnum`` (0: not known), its name, and
    how its raw values read (:func:`_reading`)."""
    return {b"attnum": str(column.attnum).encode(), b"name": column.name.encode(), b"reading": _reading(column).encode()}


def _reading(column: ViewColumn) -> str:
    """What decides how a raw value of ``column`` is typed, besides its Arrow type: the Connect type,
    its logical name and a decimal's scale (a Decimal's raw bytes are read at the schema's scale:
    ``numeric(10,2)`` to ``numeric(12,4)`` keeps the raw type but not the reading). Raw values are
    taken across versions only where it is the same."""
    schema = column.connect_schema if column.in_value else column.key_schema
    if schema is None:
        return ""
    kind = schema.type
    if schema.name is None:  # a plain number: a wider one reads the same values
        kind = {"int8": "int", "int16": "int", "int32": "int", "int64": "int", "float32": "float", "float64": "float"}.get(kind, kind)
    scale = dict(schema.parameters or ()).get("scale", "")
    return f"{kind}|{schema.name or ''}|{scale}"


def _raw_type(reader: ColumnReader) -> T.DataType:
    """What a column's block values are: the codec's raw type (of the key codec for a key column the
    value leaves out)."""
    if reader.column.in_value:
        return reader.codec.raw
    assert reader.key_codec is not None
    return reader.key_codec.raw


def typed_array(values: list[Any] | pa.Array, arrow_type: pa.DataType, name: str) -> pa.Array:
    if isinstance(values, pa.Array):  # typed by an Arrow kernel (text_columns)
        if values.type == arrow_type:
            return values
        values = values.to_pylist()  # what pa.array of the converters' values would make of them
    try:
        return pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([_conformed(v, arrow_type) for v in values], arrow_type)


def _conformed(value: Any, arrow_type: pa.DataType) -> Any:
    """A JSON-ready value as Arrow takes it: Debezium writes NaN and infinities of floats as text,
    and maps as objects."""
    if value is None:
        return None
    if pa.types.is_floating(arrow_type) and isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    if pa.types.is_map(arrow_type) and isinstance(value, dict):
        return [(k, _conformed(v, arrow_type.item_type)) for k, v in value.items()]
    if pa.types.is_list(arrow_type) and isinstance(value, list):
        return [_conformed(v, arrow_type.value_type) for v in value]
    if pa.types.is_struct(arrow_type) and isinstance(value, dict):
        return {f.name: _conformed(value.get(f.name), f.type) for f in arrow_type}
    return value

