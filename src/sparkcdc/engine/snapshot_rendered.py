"""A snapshot chunk whose payloads PostgreSQL renders: the snapshot's fast path.

For a table whose every field has an SQL rendering (:mod:`sparkcdc.debezium.sql_json`), the chunk's
COPY returns each row's key and row payloads as JSON text, and the records are assembled from byte
templates: everything in a snapshot record but those payloads, the ``snapshot`` marker and the
envelope's clock fields is the same for every row of a chunk. The templates come from the regular
event model (one record built with sentinel payloads and a sentinel clock, serialized by the
regular serializer, :mod:`.core.record_templates`), so the two paths cannot drift apart in layout.

A row with a value the SQL does not render (its payload came back NULL) carries its columns' text
too, and goes through the Python converters, as every row of the regular path does.

Markers, ordinals and the probes are those of :mod:`sparkcdc.engine.snapshot_reader`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import closing

import orjson

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.serialization import JsonSerializer
from ..debezium.table import TableSchema
from ..debezium.topic_line import escape
from ..postgres.replication import quote_ident
from ..postgres.snapshot import COPY_NULL, SnapshotTransaction, copy_text
from .core.emission import emitted
from .core.encoded import BATCH_BYTES, EncodedBatch, encode_records
from .core.lines import encode_lines
from .core.record_templates import RecordTemplates
from .core.snapshot import snapshot_marker
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

__all__ = ["read_encoded_chunk", "rendered_chunk_batches", "rendered_query"]

_KEY_ALIAS, _ROW_ALIAS = "__sparkcdc_key", "__sparkcdc_row"
_NULL = COPY_NULL
BLOCK_BYTES = 983040  # COPY data handled per step; a batch ends at the first step boundary past batch_rows


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
        rendered = (config.settings.sparkcdc_snapshot_render_sql and chunk.query is None and not config.transforms
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
