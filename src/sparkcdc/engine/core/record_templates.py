"""The byte templates of a rendered snapshot chunk's records (:mod:`sparkcdc.engine.snapshot_rendered`).

Everything in a snapshot record but its key and row payloads, the ``snapshot`` marker and the
envelope's clock fields is the same for every row of a chunk. The templates are cut from one record
built by the regular event model with sentinel payloads and a sentinel clock, and serialized by the
regular serializer, so the rendered path cannot drift from the regular one in layout; rows are then
assembled by joining bytes (:meth:`RecordTemplates.batch`, :meth:`RecordTemplates.line_batch`).
No I/O: the payloads come from the caller, as the server rendered them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from operator import add

import orjson

from ...debezium.events import EventFactory
from ...debezium.serialization import JsonSerializer
from ...debezium.table import TableSchema
from ...debezium.topic_line import segments as line_segments
from ...debezium.topic_line import text_template
from ...errors import PipelineError
from .encoded import Constant, EncodedBatch, Joined, joined
from .snapshot import SnapshotContext, snapshot_change

__all__ = ["RecordTemplates", "TemplateError"]

_KEY = "\x00sparkcdc:key\x00"
_AFTER = "\x00sparkcdc:after\x00"
_CLOCK_NS = 1_111_111_111_111_111_111  # the sentinel clock of the templates (2005-03-18)


class TemplateError(PipelineError):
    """The serialized template record does not have the layout the fast path relies on."""


@dataclass(frozen=True)
class _ValueTemplate:
    prefix: bytes  # up to the row payload
    tail: bytes  # after it, with %d for the envelope's ts_ms, ts_us and ts_ns


class RecordTemplates:
    """The bytes of one table's snapshot records around their payloads, per marker."""

    def __init__(
        self, events: EventFactory, serializer: JsonSerializer, context: SnapshotContext, table: TableSchema
    ) -> None:
        self._events = EventFactory(events.config, events.database, events.topics, clock_ns=lambda: _CLOCK_NS)
        self._events.context_headers = events.context_headers
        self._serializer = serializer
        self._context = context
        self._table = table
        self._values: dict[str, _ValueTemplate] = {}
        self._segments: tuple[bytes, ...] | None = None  # the line's, around key, value and ordinal
        record = self._record("true")
        self.headers = serializer.headers(record)
        key = serializer.encode(_KEY, table.key_schema, with_schema=serializer.key_schemas) if table.has_key else None
        self.key_prefix, self.key_suffix = _split(key, orjson.dumps(_KEY)) if key is not None else (b"", b"")
        self._constants = _Constants(
            Constant(table.topic), Constant(self.headers), Constant("r"), Constant(table.schema_name), Constant(table.table_name),
            Constant(context.lsn), Constant(context.tx_id), Constant(context.ts_us),
        )

    def _record(self, marker: str):  # noqa: ANN202 - a ChangeRecord
        key = _KEY if self._table.has_key else None
        return snapshot_change(self._events, self._context, self._table, key, _AFTER, marker, 0)

    def value(self, marker: str) -> _ValueTemplate:
        template = self._values.get(marker)
        if template is None:
            record = self._record(marker)
            serialized = self._serializer.encode(record.value, record.value_schema, with_schema=self._serializer.value_schemas)
            assert serialized is not None
            prefix, tail = _split(serialized, orjson.dumps(_AFTER))
            clock = [str(_CLOCK_NS // 1_000_000).encode(), str(_CLOCK_NS // 1000).encode(), str(_CLOCK_NS).encode()]
            pieces = re.split(rb"(?<=:)(" + b"|".join(re.escape(c) for c in clock) + rb")(?=[,}])", tail)
            if len(pieces) != 7 or pieces[1::2] != clock:
                raise TemplateError(f"the envelope of {self._table.qualified_name} does not end with ts_ms, ts_us, ts_ns as expected")
            text = b"%d".join(piece.replace(b"%", b"%%") for piece in pieces[0::2])
            template = self._values[marker] = _ValueTemplate(prefix, text)
        return template


    def batch(
        self, keys: list[bytes | None], afters: list[bytes], markers: list[str], ordinals: range, clock_ns: Callable[[], int],
    ) -> EncodedBatch:
        """An encoded batch from the rows' payloads and markers (only the first and the last row's
        marker can differ from ``"true"``).

        The records of a batch share one reading of the clock (the envelope's ``ts_ms``, ``ts_us``,
        ``ts_ns``): they are made together, so every row but the edges is ``prefix + payload + tail``
        with the same prefix and tail, and the whole value column is a handful of joins.
        """
        size = len(afters)
        now = clock_ns()
        stamp = (now // 1_000_000, now // 1000, now)
        c = self._constants
        true = self.value("true")
        tail = true.tail % stamp
        first = 1 if markers[0] != "true" else 0
        last = size - 1 if size > first and markers[-1] != "true" else size
        lengths = list(map(add, map(len, afters), repeat(len(true.prefix) + len(tail), size)))
        pieces: list[bytes] = []
        if first:
            pieces.append(self._value(markers[0], afters[0], stamp))
            lengths[0] = len(pieces[0])
        if last > first:
            pieces += (true.prefix, (tail + true.prefix).join(afters[first:last]), tail)
        if last < size:
            pieces.append(self._value(markers[-1], afters[-1], stamp))
            lengths[-1] = len(pieces[-1])
        values = joined(b"".join(pieces), lengths)
        encoded_keys: list[bytes | None] | Joined
        if self._table.has_key:
            prefix, suffix = self.key_prefix, self.key_suffix
            data = b"".join((prefix, (suffix + prefix).join(keys), suffix))  # type: ignore[arg-type]
            encoded_keys = joined(data, list(map(add, map(len, keys), repeat(len(prefix) + len(suffix), size))))  # type: ignore[arg-type]
        else:
            encoded_keys = [None] * size
        return EncodedBatch(
            size, c.topic, encoded_keys, values, c.headers, c.op, c.schema, c.table, c.lsn, c.lsn, ordinals,
            c.tx_id, c.ts, markers,
        )

    @property
    def value_overhead(self) -> int:
        """About how many bytes a record's value has beyond its row payload."""
        true = self.value("true")
        return len(true.prefix) + len(true.tail)

    def line_batch(
        self, payloads: list[bytes], markers: list[str], ordinals: range, clock_ns: Callable[[], int], *, line_end: bytes = b"",
    ) -> EncodedBatch:
        """A lines-only batch from its rows' payloads quoted as JSON strings' insides (see
        :func:`sparkcdc.engine.snapshot_rendered._escaped_rows`): the key's and the row's of each
        row, one after the other (the row's alone for a table without a key). Each line ends with ``line_end`` (``b"\\n"``: as a topic
        file holds it, see :attr:`EncodedBatch.line_end`).

        The same bytes as the lines of :meth:`batch`'s records, made with one join per batch: a
        line is the constant start, the key's payload, the constant bytes between the payloads, the
        row's, the constant bytes up to the ordinal, the ordinal and the constant end. Only a
        batch's first and last rows can carry another marker (other constant bytes after the row's
        payload): those two lines are built apart.
        """
        size = len(ordinals)
        now = clock_ns()
        stamp = (now // 1_000_000, now // 1000, now)
        start, close = self._line_ends()
        close += line_end
        between, after = self._row_parts("true", stamp)
        has_key = self._table.has_key
        width = 2 if has_key else 1
        if not has_key:  # nothing comes before the row's payload but constant bytes
            start, between = start + between, b""
        first = 1 if markers[0] != "true" else 0
        last = size - 1 if size > first and markers[-1] != "true" else size
        numbers = list(map(b"%d".__mod__, ordinals))
        count = last - first
        parts: list[bytes] = []
        if count:
            step = 2 + 2 * width
            pieces: list[bytes] = [close + start] * (step * count + 1)  # the rows' pieces; the starts, ends between them
            pieces[0] = start
            if has_key:
                pieces[1::step] = payloads[2 * first:2 * last:2]
                pieces[2::step] = [between] * count
                pieces[3::step] = payloads[2 * first + 1:2 * last:2]
            else:
                pieces[1::step] = payloads[first:last]
            pieces[step - 2::step] = [after] * count
            pieces[step - 1::step] = numbers[first:last]
            pieces[-1] = close
            parts.append(b"".join(pieces))
        fixed = len(start) + len(between) + len(after) + len(close)
        sizes = map(len, payloads) if not has_key else map(add, map(len, payloads[0::2]), map(len, payloads[1::2]))
        lengths = list(map(add, map(add, sizes, map(len, numbers)), repeat(fixed, size)))
        for index in sorted({0, size - 1}):
            if index < first or index >= last:
                _, special_after = self._row_parts(markers[index], stamp)
                row = payloads[width * index:width * index + width]
                line = b"".join((start, *([row[0], between, row[1]] if has_key else row), special_after, numbers[index], close))
                lengths[index] = len(line)
                parts.insert(0 if index < first else len(parts), line)
        data = b"".join(parts) if len(parts) != 1 else parts[0]
        c = self._constants
        return EncodedBatch(
            size, c.topic, None, None, c.headers, c.op, c.schema, c.table, c.lsn, c.lsn, ordinals, c.tx_id, c.ts, markers,
            joined(data, lengths), line_end,
        )

    def _line_ends(self) -> tuple[bytes, bytes]:
        """The constant bytes of a line before its key's payload (before the row's, without a key),
        and after its ordinal."""
        open_key, _, _, close = self._line_segments()
        key_before = text_template(self.key_prefix, self.key_suffix)[0] if self._table.has_key else b""
        return open_key + key_before, close

    def _line_segments(self) -> tuple[bytes, ...]:
        segments = self._segments
        if segments is None:
            lsn = self._context.lsn
            if self._table.has_key:
                segments = line_segments("key", "value", "ordinal", headers=self.headers, lsn=lsn, commit_lsn=lsn)
            else:  # the key is null: all before the value is constant, and nothing comes before the key's part
                segments = (b"", *line_segments("value", "ordinal", key=None, headers=self.headers, lsn=lsn, commit_lsn=lsn))
            self._segments = segments
        return segments

    def _row_parts(self, marker: str, stamp: tuple[int, int, int]) -> tuple[bytes, bytes]:
        """The constant bytes between the key's payload and the row's (all before the row's
        without a key: the line's start is then empty), and after the row's up to the ordinal."""
        _, before_value, before_ordinal, _ = self._line_segments()
        key_after = text_template(self.key_prefix, self.key_suffix)[1] if self._table.has_key else b""
        template = self.value(marker)
        value_before, value_after = text_template(template.prefix, template.tail % stamp)
        return key_after + before_value + value_before, value_after + before_ordinal

    def _value(self, marker: str, after: bytes, stamp: tuple[int, int, int]) -> bytes:
        template = self.value(marker)
        return b"".join((template.prefix, after, template.tail % stamp))


@dataclass(frozen=True)
class _Constants:
    topic: Constant
    headers: Constant
    op: Constant
    schema: Constant
    table: Constant
    lsn: Constant
    tx_id: Constant
    ts: Constant


def _split(serialized: bytes, sentinel: bytes) -> tuple[bytes, bytes]:
    parts = serialized.split(sentinel)
    if len(parts) != 2:
        raise TemplateError("a serialized template holds its sentinel payload more than once or not at all")
    return parts[0], parts[1]
