"""A snapshot chunk whose payloads PostgreSQL renders: the snapshot's fast path.

For a table whose every field has an SQL rendering (:mod:`sparkcdc.debezium.sql_json`), the chunk's
COPY returns each row's key and row payloads as JSON text, and the records are assembled from byte
templates: everything in a snapshot record but those payloads, the ``snapshot`` marker and the
envelope's clock fields is the same for every row of a chunk. The templates come from the regular
event model (one record built with sentinel payloads and a sentinel clock, serialized by the
regular serializer), so the two paths cannot drift apart in layout.

A row with a value the SQL does not render (its payload came back NULL) carries its columns' text
too, and goes through the Python converters, as every row of the regular path does.

Markers, ordinals and the probes are those of :mod:`sparkcdc.engine.snapshot_reader`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from itertools import repeat
from operator import add

import orjson

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.serialization import JsonSerializer
from ..debezium.table import TableSchema
from ..debezium.topic_line import escape, text_template
from ..debezium.topic_line import segments as line_segments
from ..errors import PipelineError
from ..postgres.replication import quote_ident
from ..postgres.snapshot import COPY_NULL, SnapshotTransaction, copy_text
from .core.emission import emitted
from .core.encoded import BATCH_BYTES, Constant, EncodedBatch, Joined, encode_records, joined
from .core.lines import encode_lines
from .core.snapshot import SnapshotContext, snapshot_change, snapshot_marker
from .snapshot_plan import SnapshotChunk
from .snapshot_reader import (
    SnapshotChunkError,
    chunk_ordinal,
    chunk_row_limit,
    chunk_session,
    last_row_marker,
    open_chunk,
    opened_chunk_records,
)

__all__ = ["RecordTemplates", "TemplateError", "read_encoded_chunk", "rendered_chunk_batches", "rendered_query"]

_KEY = "\x00sparkcdc:key\x00"
_AFTER = "\x00sparkcdc:after\x00"
_CLOCK_NS = 1_111_111_111_111_111_111  # the sentinel clock of the templates (2005-03-18)
_KEY_ALIAS, _ROW_ALIAS = "__sparkcdc_key", "__sparkcdc_row"
_NULL = COPY_NULL
BLOCK_BYTES = 983040  # COPY data handled per step; a batch ends at the first step boundary past batch_rows


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
        :func:`_escaped_rows`): the key's and the row's of each row, one after the other (the row's
        alone for a table without a key). Each line ends with ``line_end`` (``b"\\n"``: as a topic
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


def rendered_query(table: TableSchema, chunk: SnapshotChunk) -> str | None:
    """The chunk's COPY query with rendered payloads, or None when the table has no full rendering.

    Output fields: the key payload (when the table has a key), the row payload, then every column's
    value, which is NULL unless a payload is (the row then needs the Python converters).
    """
    columns = table.description.columns
    names = {c.position: c.name for c in columns}
    payloads = table.payload_sql(lambda position: quote_ident(names[position]))
    if payloads is None:
        return None
    inner = ([f"{payloads.key} AS {_KEY_ALIAS}"] if payloads.key is not None else []) + [f"{payloads.row} AS {_ROW_ALIAS}"]
    inner += [f"{quote_ident(c.name)} AS __sparkcdc_c{c.position}" for c in columns]
    missing = f"s.{_ROW_ALIAS} IS NULL" + (f" OR s.{_KEY_ALIAS} IS NULL" if payloads.key is not None else "")
    outer = ([f"s.{_KEY_ALIAS}"] if payloads.key is not None else []) + [f"s.{_ROW_ALIAS}"]
    outer += [f"CASE WHEN {missing} THEN s.__sparkcdc_c{c.position} END" for c in columns]
    where = chunk.ctid_condition()
    source = f"SELECT {', '.join(inner)} FROM {chunk.qualified_table}" + (f" WHERE {where}" if where else "")
    # OFFSET 0 keeps the subquery from being flattened, so each payload is computed once per row.
    return f"COPY (SELECT {', '.join(outer)} FROM ({source} OFFSET 0) s) TO STDOUT"


def rendered_chunk_batches(
    tx: SnapshotTransaction,
    config: ConnectorConfig,
    serializer: JsonSerializer,
    events: EventFactory,
    table: TableSchema,
    chunk: SnapshotChunk,
    query: str,
    *,
    first_of_table: bool,
    batch_rows: int = 8192,
    batch_bytes: int = BATCH_BYTES,
    clock_ns: Callable[[], int] = time.time_ns,
    lines: bool = False,
    line_end: bytes = b"",
) -> Iterator[EncodedBatch]:
    """The chunk's records in batches of about ``batch_rows`` rows or ``batch_bytes`` of values.

    ``query`` is :func:`rendered_query`'s; ``tx`` sees the chunk's snapshot and has been through :func:`~sparkcdc.engine.snapshot_reader.open_chunk`."""
    tx.use_rendering_settings()
    templates = RecordTemplates(events, serializer, chunk.context, table)
    first_ordinal = chunk_ordinal(chunk, 0)
    row_limit = chunk_row_limit(chunk)
    first_marker = snapshot_marker(table_index=chunk.table_index, first_of_table=first_of_table, last_of_table=False, final=False)
    has_key = table.has_key
    positions = [c.position for c in table.description.columns]
    overhead = templates.value_overhead

    row_tail = b"\t\\N" * len(positions) + b"\n"  # after the payloads, a rendered row's column fields: all NULL

    width = 2 if lines and has_key else 1  # items of afters per row

    def batch(keys: list[bytes | None], afters: list[bytes], start: int, last_marker: str | None) -> EncodedBatch:
        size = len(afters) // width
        markers = ["true"] * size
        if start == 0:
            markers[0] = first_marker
        if last_marker is not None:
            markers[-1] = last_marker
        ordinals = range(first_ordinal + start, first_ordinal + start + size)
        if lines:  # afters holds the rows' quoted payloads, width per row (see _escaped_rows)
            return templates.line_batch(afters, markers, ordinals, clock_ns, line_end=line_end)
        return templates.batch(keys, afters, markers, ordinals, clock_ns)

    held: tuple[list[bytes | None], list[bytes], int] | None = None  # the latest batch, until it is known not to be the last
    rows = 0
    keys: list[bytes | None] = []
    afters: list[bytes] = []
    pending = 0  # COPY bytes of the rows in afters
    with closing(tx.copy_blocks(query, max(1, min(BLOCK_BYTES, batch_bytes // 4)))) as blocks:  # an abandoned read ends its COPY
        for block in blocks:
            pending += len(block)
            escaped = _escaped_rows(block, row_tail) if lines else None
            if escaped is not None:
                afters += escaped
            else:
                for line in block.split(b"\n"):
                    if not line:
                        continue
                    if has_key:
                        key, after, raw = line.split(b"\t", 2)
                    else:
                        key = None
                        after, raw = line.split(b"\t", 1)
                    if after == _NULL or key == _NULL:
                        key, after = _converted_payloads(table, positions, raw)
                    else:
                        if b"\\" in after:
                            after = after.replace(b"\\\\", b"\\")  # JSON text holds no character COPY escapes but the backslash
                        if key is not None and b"\\" in key:
                            key = key.replace(b"\\\\", b"\\")
                    if lines:
                        if has_key:
                            assert key is not None
                            afters.append(escape(key))
                        afters.append(escape(after))
                    else:
                        keys.append(key)
                        afters.append(after)
            if rows + len(afters) // width > row_limit:
                raise SnapshotChunkError(f"{chunk.describe()} holds more rows than its ordinals can number; plan smaller chunks")
            if len(afters) // width >= batch_rows or pending + len(afters) // width * overhead >= batch_bytes:
                if held is not None:
                    yield batch(*held, None)
                held = (keys, afters, rows)
                rows += len(afters) // width
                keys, afters, pending = [], [], 0
    if afters:
        if held is not None:
            yield batch(*held, None)
        held = (keys, afters, rows)
        rows += len(afters) // width
    if held is not None:
        # The COPY has ended, so the connection is free for the probes that mark the last row.
        yield batch(*held, last_row_marker(tx, config, chunk, first_of_table=rows == 1 and first_of_table))


def _escaped_rows(block: bytes, row_tail: bytes) -> list[bytes] | None:
    """A COPY block's payloads as :meth:`RecordTemplates.line_batch` takes them, each quoted as a
    JSON string's inside (``escape``), key and row one after the other, when every row of the block
    was rendered; None otherwise (the rows then go one by one: some need the converters).

    Why a few operations on the whole block do it: a rendered row is its payloads (``key TAB row``,
    or ``row``) and then ``row_tail``, its column fields, all ``\\N``. The payloads are JSON texts
    made by ``to_json``, which escapes every control character, so the only COPY escape in them is a
    backslash's (``\\\\``), and that is already how a JSON string quotes a backslash: quoting the
    block's double quotes quotes the payloads. The checks make sure of it: every line of the block
    ends with ``row_tail``, and once those are taken out, every backslash is in a ``\\\\`` pair (a
    NULL payload, or a COPY escape of a control character, would be one more).
    """
    if not block.endswith(row_tail):
        return None
    fields = block.replace(row_tail, b"\t")  # each payload now ends in a tab
    if b"\n" in fields or fields.count(b"\\") != 2 * fields.count(b"\\\\"):
        return None
    payloads = fields.replace(b'"', b'\\"').split(b"\t")
    del payloads[-1]
    return payloads


def _converted_payloads(table: TableSchema, positions: list[int], raw: bytes) -> tuple[bytes | None, bytes]:
    """Key and row payloads of a row the SQL did not render, through the Python converters."""
    values: list[str | None] = [None] * (max(positions) + 1 if positions else 0)
    for position, field in zip(positions, raw.split(b"\t"), strict=True):
        values[position] = copy_text(field)
    key = table.key(values)
    return (None if key is None else orjson.dumps(key)), orjson.dumps(table.row(values))


def read_encoded_chunk(
    config: ConnectorConfig,
    chunk: SnapshotChunk,
    *,
    run_id: str,
    serializer: JsonSerializer,
    batch_rows: int = 8192,
    batch_bytes: int = BATCH_BYTES,
    clock_ns: Callable[[], int] = time.time_ns,
    lines: bool = False,
    line_end: bytes = b"",
) -> Iterator[EncodedBatch]:
    """A snapshot chunk as encoded batches (with ``lines``, each record's topic-files line instead of
    its key and value): rendered by the server where the table allows it
    (``sparkcdc.snapshot.render.sql``), through the Python converters otherwise. With ``lines``,
    each line ends with ``line_end`` (:attr:`EncodedBatch.line_end`)."""
    with chunk_session(config, chunk, run_id=run_id, clock_ns=clock_ns) as (tx, events, resolver):
        opened = open_chunk(tx, config, resolver, chunk)
        if opened is None:
            return
        table, first_of_table = opened
        # The server renders the records' JSON as the connector makes them (JsonConverter values);
        # transforms and another value converter (CloudEvents) need records.
        rendered = (config.get_bool("sparkcdc.snapshot.render.sql") and chunk.query is None and not config.transforms
                    and config.converters.plain_json_values)
        query = rendered_query(table, chunk) if rendered else None
        if query is not None:
            yield from rendered_chunk_batches(
                tx, config, serializer, events, table, chunk, query, first_of_table=first_of_table, batch_rows=batch_rows,
                batch_bytes=batch_bytes, clock_ns=clock_ns, lines=lines, line_end=line_end,
            )
        else:
            records = emitted(config, opened_chunk_records(tx, config, events, chunk, table, first_of_table))
            if lines:
                yield from encode_lines(records, serializer, batch_rows, batch_bytes, line_end=line_end)
            else:
                yield from encode_records(records, serializer, batch_rows, batch_bytes)
