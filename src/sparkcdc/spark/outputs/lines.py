"""Each record as its topic-files line, built in the Python reader: the ``lines`` output layout.

``sparkcdc run`` writes one JSON line per record (:mod:`sparkcdc.debezium.topic_line`), with the
record's key and value (Debezium JSON texts) as JSON strings. Built in the JVM with ``to_json``,
every value is decoded from UTF-8, escaped by Jackson and encoded again: measured, that cost five
times what the reader spends making the record. Here the reader already holds each text as UTF-8
bytes that the serializer made, and quotes it with orjson's string escaping.

With ``sparkcdc.output.layout=lines`` the source's rows are ``topic, line, lsn, commit_lsn,
ordinal``; the topic files sink writes ``line`` as it is. The readers build the lines of their
batches (:func:`sparkcdc.engine.core.lines.encode_lines`, the rendered snapshot's templates); a batch of
key and value texts gets them here. They are the lines the sink's Spark SQL builds from the
``columns`` layout, byte for byte (tests/spark/test_lines.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from ...debezium.topic_line import line
from ...engine.core.encoded import EncodedBatch, cells
from .base import Output, PlannedPartition
from .columns import column_array, utf8_array

if TYPE_CHECKING:
    from pyspark.sql import Column

    from ...debezium.config import ConnectorConfig

__all__ = ["LINES_ARROW_SCHEMA", "LINES_DDL_SCHEMA", "LINE_END_KEY", "LinesOutput", "line_batch", "line_end"]

#: The lines batch's schema metadata key saying what ends each ``line`` (absent: nothing does).
LINE_END_KEY = b"sparkcdc.line_end"

LINES_DDL_SCHEMA = "topic string, line string, lsn long, commit_lsn long, ordinal long"
LINES_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("line", pa.string()), ("lsn", pa.int64()), ("commit_lsn", pa.int64()), ("ordinal", pa.int64()),
])


class LinesOutput(Output):
    """Each record as its topic-files line, built by the reader: ``topic, line, lsn, commit_lsn,
    ordinal`` rows, for the query's own sink (the topic files sink writes ``line`` as it is)."""

    name = "lines"

    def schema(self) -> str:
        return LINES_DDL_SCHEMA

    def record_count(self) -> Column:
        from pyspark.sql import functions as F

        return F.count(F.lit(1))  # a row is a record

    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        from ...engine.work import read_work

        return map(line_batch, read_work(config, partition.work, run_id=partition.run_id, lines=True))


def line_batch(batch: EncodedBatch) -> pa.RecordBatch:
    """The batch's records as (topic, line, lsn, commit_lsn, ordinal) rows."""
    if batch.line is not None:
        return _record_batch(batch, utf8_array(batch.line))
    if batch.key is None or batch.value is None:
        raise ValueError("an encoded batch without key and value must have lines")
    size = batch.size
    lines = list(map(line, batch.key, batch.value, cells(batch.headers, size), cells(batch.lsn, size),  # type: ignore[arg-type]
                     cells(batch.commit_lsn, size), batch.ordinal))
    return _record_batch(batch, utf8_array(lines))


def line_end(batch: pa.RecordBatch) -> bytes:
    """What ends each ``line`` of a lines batch (``EncodedBatch.line_end``): the topic files sink
    writes lines that end with a newline as they are."""
    metadata = batch.schema.metadata
    return b"" if not metadata else metadata.get(LINE_END_KEY, b"")


def _record_batch(batch: EncodedBatch, line_column: pa.Array) -> pa.RecordBatch:
    size = batch.size
    schema = LINES_ARROW_SCHEMA.with_metadata({LINE_END_KEY: batch.line_end}) if batch.line_end else LINES_ARROW_SCHEMA
    return pa.RecordBatch.from_arrays(
        [
            column_array(batch.topic, pa.string(), size),
            line_column,
            column_array(batch.lsn, pa.int64(), size),
            column_array(batch.commit_lsn, pa.int64(), size),
            pa.array(batch.ordinal, type=pa.int64()),
        ],
        schema=schema,
    )
