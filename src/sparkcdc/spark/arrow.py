"""Change records as Arrow record batches: the fast path from Python to Spark."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from ..debezium.records import ChangeRecord
from ..debezium.serialization import JsonSerializer

__all__ = ["ARROW_SCHEMA", "DDL_SCHEMA", "record_batches"]

# topic/key/value/headers follow the layout of Spark's Kafka sink (headers as key + binary value).
DDL_SCHEMA = (
    "topic string, key string, value string, headers array<struct<key: string, value: binary>>, op string, "
    "schema string, table string, lsn long, commit_lsn long, ordinal long, tx_id long, source_ts timestamp, snapshot string"
)
_HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("key", pa.string()), ("value", pa.string()), ("headers", pa.list_(_HEADER)),
    ("op", pa.string()), ("schema", pa.string()), ("table", pa.string()), ("lsn", pa.int64()),
    ("commit_lsn", pa.int64()), ("ordinal", pa.int64()), ("tx_id", pa.int64()),
    ("source_ts", pa.timestamp("us", tz="UTC")), ("snapshot", pa.string()),
])


def record_batches(
    records: Iterable[ChangeRecord], serializer: JsonSerializer, batch_size: int = 8192
) -> Iterator[pa.RecordBatch]:
    columns: list[list] = [[] for _ in range(13)]
    (topic, key, value, headers, op, schema, table, lsn, commit_lsn, ordinal, tx_id, source_ts, snapshot) = columns
    header_cache: dict[int, tuple[object, list[dict]]] = {}
    count = 0
    for record in records:
        k, v, hs = serializer.record(record)
        topic.append(record.topic)
        key.append(k)
        value.append(v)
        cached = header_cache.get(id(hs))
        if cached is None or cached[0] is not hs:
            cached = (hs, [{"key": name, "value": raw} for name, raw in hs])
            header_cache[id(hs)] = cached
        headers.append(cached[1])
        op.append(record.op)
        schema.append(record.schema)
        table.append(record.table)
        lsn.append(record.lsn)
        commit_lsn.append(record.commit_lsn)
        ordinal.append(record.ordinal)
        tx_id.append(record.tx_id)
        source_ts.append(record.source_ts_us)
        snapshot.append(record.snapshot)
        count += 1
        if count >= batch_size:
            yield _batch(columns)
            for column in columns:
                column.clear()
            header_cache.clear()
            count = 0
    if count:
        yield _batch(columns)


def _batch(columns: list[list]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=field.type) for column, field in zip(columns, ARROW_SCHEMA, strict=True)], schema=ARROW_SCHEMA
    )
