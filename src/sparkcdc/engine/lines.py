"""The topic-files line of a record: ``{"key", "value", "headers", "lsn", "commit_lsn", "ordinal"}``.

Key and value are the record's Debezium JSON texts as JSON strings (null for none), each header's
value its bytes as a UTF-8 string (or null). The texts come from sparkcdc's serializer: UTF-8
without control characters (JSON text has none outside strings, and orjson escapes those inside),
so quoting one as a JSON string only escapes ``\\`` and ``"`` — and the parts of a text that do not
change from record to record (a schema, a snapshot template) are escaped once, not per record.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from itertools import accumulate

import orjson

from ..debezium.records import ChangeRecord
from ..debezium.serialization import JsonSerializer, escape_json_text
from .encoded import BATCH_BYTES, EncodedBatch, Headers, Joined

__all__ = ["encode_lines", "escape", "headers_json", "json_string", "line_middle"]


escape = escape_json_text


def json_string(text: bytes | None) -> bytes:
    """``text`` as a JSON string; None as ``null``."""
    if text is None:
        return b"null"
    return b'"' + escape(text) + b'"'


def headers_json(headers: Headers) -> bytes:
    return orjson.dumps([{"name": name, "value": None if raw is None else raw.decode("utf-8")} for name, raw in headers])


def line_middle(headers: Headers, lsn: int | None, commit_lsn: int | None) -> bytes:
    """What follows the value up to the ordinal's digits: ``,"headers":[...],"lsn":N,"commit_lsn":N,"ordinal":``."""
    return (b',"headers":' + headers_json(headers) + b',"lsn":' + _number(lsn) + b',"commit_lsn":' + _number(commit_lsn)
            + b',"ordinal":')


def _number(value: int | None) -> bytes:
    return b"null" if value is None else b"%d" % value


def encode_lines(
    records: Iterable[ChangeRecord], serializer: JsonSerializer, batch_size: int = 8192, batch_bytes: int = BATCH_BYTES
) -> Iterator[EncodedBatch]:
    """Records as batches of their lines (``line`` set, key and value not built), at most
    ``batch_size`` records and about ``batch_bytes`` of lines each: :func:`~.encoded.encode_records`
    for the ``lines`` layout."""
    quoted, headers_of = serializer.quoted, serializer.headers
    key_schemas, value_schemas = serializer.key_schemas, serializer.value_schemas
    remaining = iter(records)
    while True:
        columns: list[list] = [[] for _ in range(12)]
        topic, headers_column, op, schema, table, lsn, commit_lsn, ordinal, tx_id, source_ts, snapshot, lengths = columns
        pieces: list[bytes] = []
        rendered: dict[int, bytes] = {}  # header lists are shared objects (the serializer caches them)
        size = 0
        for record in remaining:
            headers = headers_of(record)
            header_text = rendered.get(id(headers))
            if header_text is None:
                header_text = rendered[id(headers)] = headers_json(headers)
            line = b"".join((
                b'{"key":', quoted(record.key, record.key_schema, with_schema=key_schemas),
                b',"value":', quoted(record.value, record.value_schema, with_schema=value_schemas),
                b',"headers":', header_text, b',"lsn":', _number(record.lsn), b',"commit_lsn":', _number(record.commit_lsn),
                b',"ordinal":', b"%d}" % record.ordinal,
            ))
            pieces.append(line)
            lengths.append(len(line))
            size += len(line)
            topic.append(record.topic)
            headers_column.append(headers)
            op.append(record.op)
            schema.append(record.schema)
            table.append(record.table)
            lsn.append(record.lsn)
            commit_lsn.append(record.commit_lsn)
            ordinal.append(record.ordinal)
            tx_id.append(record.tx_id)
            source_ts.append(record.source_ts_us)
            snapshot.append(record.snapshot)
            if len(pieces) >= batch_size or size >= batch_bytes:
                break
        if not pieces:
            return
        line_column = Joined(b"".join(pieces), array("i", accumulate(lengths, initial=0)))
        yield EncodedBatch(len(pieces), topic, None, None, headers_column, op, schema, table, lsn, commit_lsn, ordinal, tx_id,
                           source_ts, snapshot, line_column)
