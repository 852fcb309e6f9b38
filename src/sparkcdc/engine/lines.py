"""The topic-files line of a record: ``{"key", "value", "headers", "lsn", "commit_lsn", "ordinal"}``.

Key and value are the record's Debezium JSON texts as JSON strings (null for none), each header's
value its bytes as a UTF-8 string (or null). Quoting a text as a JSON string is orjson's
string escaping; the parts of a text that do not change from record to record (a schema, a
snapshot template) are escaped once, not per record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import orjson

from ..debezium.records import ChangeRecord
from ..debezium.serialization import JsonSerializer, escape_json_text
from .encoded import BATCH_BYTES, Constant, EncodedBatch, Headers, joined

__all__ = ["encode_lines", "escape", "headers_json", "json_string", "line_middle"]


escape = escape_json_text


def json_string(text: bytes | None) -> bytes:
    """``text`` (UTF-8) as a JSON string; None as ``null``."""
    return b"null" if text is None else orjson.dumps(text.decode("utf-8"))


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
    """Records as batches of their lines, at most ``batch_size`` records and about ``batch_bytes``
    of lines each: :func:`~.encoded.encode_records` for the ``lines`` layout. A batch carries the
    lines and what the layout's rows hold beside them (topic, lsn, commit_lsn, ordinal); its other
    columns are not built."""
    quoted, headers_of = serializer.quoted, serializer.headers
    key_schemas, value_schemas = serializer.key_schemas, serializer.value_schemas
    unused = Constant(None)
    remaining = iter(records)
    while True:
        topic: list[str] = []
        lsn: list[int | None] = []
        commit_lsn: list[int | None] = []
        ordinal: list[int] = []
        lengths: list[int] = []
        pieces: list[bytes] = []
        # Header lists of constant headers are shared objects (the serializer caches them): each is
        # rendered once. The cache holds the list itself, so that a per-record list (a key change's
        # headers) freed after its record cannot hand its id, and so its text, to a later one.
        rendered: dict[int, tuple[Headers, bytes]] = {}
        size = 0
        for record in remaining:
            headers = headers_of(record)
            cached = rendered.get(id(headers))
            if cached is not None and cached[0] is headers:
                header_text = cached[1]
            else:
                header_text = b',"headers":' + headers_json(headers) + b',"lsn":'
                rendered[id(headers)] = (headers, header_text)
            record_lsn, record_commit_lsn, record_ordinal = record.lsn, record.commit_lsn, record.ordinal
            line = b"".join((
                b'{"key":', quoted(record.key, record.key_schema, with_schema=key_schemas),
                b',"value":', quoted(record.value, record.value_schema, with_schema=value_schemas),
                header_text, b"null" if record_lsn is None else b"%d" % record_lsn,
                b',"commit_lsn":', b"null" if record_commit_lsn is None else b"%d" % record_commit_lsn,
                b',"ordinal":%d}' % record_ordinal,
            ))
            pieces.append(line)
            lengths.append(len(line))
            size += len(line)
            topic.append(record.topic)
            lsn.append(record_lsn)
            commit_lsn.append(record_commit_lsn)
            ordinal.append(record_ordinal)
            if len(pieces) >= batch_size or size >= batch_bytes:
                break
        if not pieces:
            return
        line_column = joined(b"".join(pieces), lengths)
        yield EncodedBatch(len(pieces), topic, None, None, unused, unused, unused, unused, lsn, commit_lsn, ordinal, unused,
                           unused, unused, line_column)
