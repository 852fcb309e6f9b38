"""The streamed records' topic-files lines (:mod:`sparkcdc.debezium.topic_line`), a batch at a time.

Per record only its key and value texts are quoted (the serializer escapes a schema once and per
record only the payload), its numbers written and the line's constant pieces joined around them;
a header list, the same shared object record after record, is rendered once per batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from ...debezium.records import ChangeRecord
from ...debezium.serialization import JsonSerializer
from ...debezium.topic_line import headers_json, segments
from .encoded import BATCH_BYTES, Constant, EncodedBatch, Headers, joined

__all__ = ["encode_lines"]

# Every field is filled per record; the ordinal and the line's end make one %-template.
_OPEN, _BEFORE_VALUE, _BEFORE_HEADERS, _BEFORE_LSN, _BEFORE_COMMIT_LSN, _BEFORE_ORDINAL, _CLOSE = segments(
    "key", "value", "headers", "lsn", "commit_lsn", "ordinal"
)
_ORDINAL_TEMPLATE: Final = _BEFORE_ORDINAL.replace(b"%", b"%%") + b"%d" + _CLOSE.replace(b"%", b"%%")
_OPEN_LENGTH: Final = len(_OPEN)
_BEFORE_VALUE_LENGTH: Final = len(_BEFORE_VALUE)
_BEFORE_COMMIT_LSN_LENGTH: Final = len(_BEFORE_COMMIT_LSN)


def encode_lines(
    records: Iterable[ChangeRecord], serializer: JsonSerializer, batch_size: int = 8192, batch_bytes: int = BATCH_BYTES,
    line_end: bytes = b"",
) -> Iterator[EncodedBatch]:
    """Records as batches of their lines, at most ``batch_size`` records and about ``batch_bytes``
    of lines each: :func:`~.encoded.encode_records` for the ``lines`` layout. A batch carries the
    lines and what the layout's rows hold beside them (topic, lsn, commit_lsn, ordinal); its other
    columns are not built. ``line_end`` ends every line (a topic file's newline: the batch's lines
    are then that file's bytes as they are).

    A line's pieces go straight into the batch's one list, joined once per batch: a line is never
    a text of its own, and its biggest piece (the value's escaped schema, one object for every
    record of a table) is never copied before that join.
    """
    quoted_into, headers_of = serializer.quoted_into, serializer.headers
    key_schemas, value_schemas = serializer.key_schemas, serializer.value_schemas
    # Values another converter makes (CloudEvents) go through the serializer's record call; JsonConverter's stay inline.
    converted = serializer.value_converter is not None
    quoted_value_into = serializer.quoted_value_into
    unused = Constant(None)
    end_length = len(line_end)
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
                header_text = _BEFORE_HEADERS + headers_json(headers) + _BEFORE_LSN
                rendered[id(headers)] = (headers, header_text)
            record_lsn, record_commit_lsn, record_ordinal = record.lsn, record.commit_lsn, record.ordinal
            pieces.append(_OPEN)
            length = _OPEN_LENGTH + quoted_into(pieces, record.key, record.key_schema, with_schema=key_schemas)
            pieces.append(_BEFORE_VALUE)
            if converted:
                length += _BEFORE_VALUE_LENGTH + quoted_value_into(pieces, record)
            else:
                length += _BEFORE_VALUE_LENGTH + quoted_into(pieces, record.value, record.value_schema, with_schema=value_schemas)
            lsn_text = b"null" if record_lsn is None else b"%d" % record_lsn
            commit_lsn_text = b"null" if record_commit_lsn is None else b"%d" % record_commit_lsn
            ordinal_text = _ORDINAL_TEMPLATE % record_ordinal
            pieces.append(header_text)
            pieces.append(lsn_text)
            pieces.append(_BEFORE_COMMIT_LSN)
            pieces.append(commit_lsn_text)
            pieces.append(ordinal_text)
            pieces.append(line_end)
            length += (len(header_text) + len(lsn_text) + _BEFORE_COMMIT_LSN_LENGTH + len(commit_lsn_text) + len(ordinal_text)
                       + end_length)
            lengths.append(length)
            size += length
            topic.append(record.topic)
            lsn.append(record_lsn)
            commit_lsn.append(record_commit_lsn)
            ordinal.append(record_ordinal)
            if len(lengths) >= batch_size or size >= batch_bytes:
                break
        if not lengths:
            return
        line_column = joined(b"".join(pieces), lengths)
        yield EncodedBatch(len(lengths), topic, None, None, unused, unused, unused, unused, lsn, commit_lsn, ordinal, unused,
                           unused, unused, line_column, line_end)
