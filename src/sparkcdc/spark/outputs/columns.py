"""The ``columns`` output (the default): each record's columns, for the query's own sink; and how
encoded record batches become Arrow record batches, the fast path from Python to Spark.

Each column is built from whole buffers where it can be: keys and values (already UTF-8 JSON bytes)
are joined into one data buffer with an offsets buffer, without Arrow re-validating or re-encoding
each string; a column constant over the batch is one scalar repeated; headers, the same few lists
over and over, are built once per distinct list and gathered with ``take``.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

import pyarrow as pa

from ...debezium.records import ChangeRecord
from ...debezium.serialization import JsonSerializer
from ...engine.core.encoded import OFFSET_LIMIT, Constant, EncodedBatch, Headers, Joined, encode_records
from .base import Output, PlannedPartition

if TYPE_CHECKING:
    from pyspark.sql import Column

    from ...debezium.config import ConnectorConfig

__all__ = ["ARROW_SCHEMA", "DDL_SCHEMA", "ColumnsOutput", "column_array", "record_batches", "to_arrow", "utf8_array"]

# topic/key/value/headers follow the layout of Spark's Kafka sink (headers as key + binary value).
DDL_SCHEMA = (
    "topic string, key string, value string, headers array<struct<key: string, value: binary>>, op string, "
    "schema string, table string, lsn long, commit_lsn long, ordinal long, tx_id long, source_ts timestamp, snapshot string"
)
_HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
_HEADERS = pa.list_(_HEADER)
ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("key", pa.string()), ("value", pa.string()), ("headers", _HEADERS),
    ("op", pa.string()), ("schema", pa.string()), ("table", pa.string()), ("lsn", pa.int64()),
    ("commit_lsn", pa.int64()), ("ordinal", pa.int64()), ("tx_id", pa.int64()),
    ("source_ts", pa.timestamp("us", tz="UTC")), ("snapshot", pa.string()),
])


class ColumnsOutput(Output):
    """Each record as a row of its columns: key, value and headers as Spark's Kafka sink reads them,
    and the record's place (op, table, positions, snapshot marker). The query's sink writes them."""

    name = "columns"
    carries_events = True

    def schema(self) -> str:
        return DDL_SCHEMA

    def record_count(self) -> Column:
        from pyspark.sql import functions as F

        return F.count(F.lit(1))  # a row is a record

    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        from ...engine.work import read_work

        return map(to_arrow, read_work(config, partition.work, run_id=partition.run_id))


def record_batches(
    records: Iterable[ChangeRecord], serializer: JsonSerializer, batch_size: int = 8192
) -> Iterator[pa.RecordBatch]:
    for batch in encode_records(records, serializer, batch_size):
        yield to_arrow(batch)


def to_arrow(batch: EncodedBatch) -> pa.RecordBatch:
    size = batch.size
    if batch.key is None or batch.value is None:
        raise ValueError("this encoded batch was built with lines only; read it with sparkcdc.spark.outputs.lines.line_batch")
    return pa.RecordBatch.from_arrays(
        [
            column_array(batch.topic, pa.string(), size),
            utf8_array(batch.key),
            utf8_array(batch.value),
            _headers(batch.headers, size),
            column_array(batch.op, pa.string(), size),
            column_array(batch.schema, pa.string(), size),
            column_array(batch.table, pa.string(), size),
            column_array(batch.lsn, pa.int64(), size),
            column_array(batch.commit_lsn, pa.int64(), size),
            pa.array(batch.ordinal, type=pa.int64()),
            column_array(batch.tx_id, pa.int64(), size),
            column_array(batch.source_ts_us, ARROW_SCHEMA.field("source_ts").type, size),
            column_array(batch.snapshot, pa.string(), size),
        ],
        schema=ARROW_SCHEMA,
    )


def column_array(column: Sequence[object] | Constant, type_: pa.DataType, size: int) -> pa.Array:
    if isinstance(column, Constant):
        return pa.repeat(pa.scalar(column.value, type=type_), size)
    return pa.array(column, type=type_)


def utf8_array(items: Sequence[bytes | None] | Joined) -> pa.Array:
    """UTF-8 byte strings (``None`` for null) as a string array, straight from one buffer."""
    if isinstance(items, Joined):
        return pa.StringArray.from_buffers(len(items), pa.py_buffer(items.offsets), pa.py_buffer(items.data))
    size = len(items)
    nulls = sum(1 for item in items if item is None) if None in items else 0
    present = items if not nulls else [b"" if item is None else item for item in items]
    data = b"".join(present)  # type: ignore[arg-type]
    if len(data) >= OFFSET_LIMIT:
        return pa.array([None if item is None else item.decode("utf-8") for item in items], type=pa.string())
    offsets = array("i", accumulate(map(len, present), initial=0))  # type: ignore[arg-type]
    validity = None
    if nulls:
        validity = pa.array([item is not None for item in items], type=pa.bool_()).buffers()[1]
    return pa.StringArray.from_buffers(size, pa.py_buffer(offsets), pa.py_buffer(data), validity, nulls)


def _headers(column: Sequence[Headers] | Constant, size: int) -> pa.Array:
    if isinstance(column, Constant):
        distinct: list[Headers] = [column.value]  # type: ignore[list-item]
        indices: Sequence[int] | pa.Array = pa.repeat(pa.scalar(0, type=pa.int32()), size)
    else:
        # Records share header lists (the serializer caches constant ones): one entry per list object.
        position: dict[int, int] = {}
        distinct, indices = [], []
        for headers in column:
            index = position.get(id(headers))
            if index is None:
                index = position[id(headers)] = len(distinct)
                distinct.append(headers)
            indices.append(index)
    lists = pa.array([[{"key": name, "value": raw} for name, raw in headers] for headers in distinct], type=_HEADERS)
    return lists.take(pa.array(indices, type=pa.int32()) if not isinstance(indices, pa.Array) else indices)
