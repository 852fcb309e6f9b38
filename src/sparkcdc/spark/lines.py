"""Each record as its topic-files line, built in the Python reader: the ``lines`` output layout.

``sparkcdc run`` writes one JSON line per record, with the record's key and value (Debezium JSON
texts) as JSON strings. Built in the JVM with ``to_json``, every value is decoded from UTF-8,
escaped by Jackson and encoded again: measured, that cost five times what the reader spends making
the record. Here the reader already holds each text as UTF-8 bytes that the serializer made, with
no control character in them (JSON text has none outside strings, and orjson escapes those inside),
so quoting one as a JSON string is two byte replacements: ``\\`` and ``"``.

With ``sparkcdc.output.layout=lines`` the source's rows are ``topic, line, lsn, commit_lsn,
ordinal``; the topic files sink writes ``line`` as it is. The line is the one
:func:`sparkcdc.spark.sinks.topic_files.line_column` builds from the ``columns`` layout, field for
field (tests/spark/test_lines.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..engine.encoded import Constant, EncodedBatch, joined
from ..engine.lines import headers_json, json_string, line_middle
from .arrow import column_array, utf8_array

__all__ = ["LINES_ARROW_SCHEMA", "LINES_DDL_SCHEMA", "line_batch"]

LINES_DDL_SCHEMA = "topic string, line string, lsn long, commit_lsn long, ordinal long"
LINES_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("line", pa.string()), ("lsn", pa.int64()), ("commit_lsn", pa.int64()), ("ordinal", pa.int64()),
])


def line_batch(batch: EncodedBatch) -> pa.RecordBatch:
    """The batch's records as (topic, line, lsn, commit_lsn, ordinal) rows."""
    size = batch.size
    if batch.line is not None:
        return _record_batch(batch, utf8_array(batch.line))
    if batch.key is None or batch.value is None:
        raise ValueError("an encoded batch without key and value must have lines")
    keys = list(batch.key)
    values = list(batch.value)
    ordinals = batch.ordinal
    pieces: list[bytes] = []
    append = pieces.append
    lengths: list[int] = []
    if isinstance(batch.headers, Constant) and isinstance(batch.lsn, Constant) and isinstance(batch.commit_lsn, Constant):
        # One record layout for the whole batch (a snapshot chunk): only key, value and ordinal vary.
        middle = line_middle(batch.headers.value, batch.lsn.value, batch.commit_lsn.value)  # type: ignore[arg-type]
        fixed = len(b'{"key":') + len(b',"value":') + len(middle) + len(b"}")
        extend = pieces.extend
        for key, value, ordinal in zip(keys, values, ordinals, strict=True):
            quoted_key, quoted_value, number = json_string(key), json_string(value), b"%d" % ordinal
            extend((b'{"key":', quoted_key, b',"value":', quoted_value, middle, number, b"}"))
            lengths.append(fixed + len(quoted_key) + len(quoted_value) + len(number))
    else:
        header_column = _cells(batch.headers, size)
        lsns, commit_lsns = _cells(batch.lsn, size), _cells(batch.commit_lsn, size)
        rendered: dict[int, bytes] = {}  # header lists are shared objects: each rendered once
        for i in range(size):
            headers = header_column[i]
            header_text = rendered.get(id(headers))
            if header_text is None:
                header_text = rendered[id(headers)] = headers_json(headers)  # type: ignore[arg-type]
            line = b"".join((
                b'{"key":', json_string(keys[i]), b',"value":', json_string(values[i]), b',"headers":', header_text,
                b',"lsn":', b"null" if lsns[i] is None else b"%d" % lsns[i], b',"commit_lsn":',  # type: ignore[str-format]
                b"null" if commit_lsns[i] is None else b"%d" % commit_lsns[i], b',"ordinal":', b"%d}" % ordinals[i],  # type: ignore[str-format]
            ))
            append(line)
            lengths.append(len(line))
    line_column = utf8_array(joined(b"".join(pieces), lengths))
    return _record_batch(batch, line_column)


def _record_batch(batch: EncodedBatch, line_column: pa.Array) -> pa.RecordBatch:
    size = batch.size
    return pa.RecordBatch.from_arrays(
        [
            column_array(batch.topic, pa.string(), size),
            line_column,
            column_array(batch.lsn, pa.int64(), size),
            column_array(batch.commit_lsn, pa.int64(), size),
            pa.array(batch.ordinal, type=pa.int64()),
        ],
        schema=LINES_ARROW_SCHEMA,
    )


def _cells(column: Sequence[object] | Constant, size: int) -> Sequence[object]:
    return [column.value] * size if isinstance(column, Constant) else column
