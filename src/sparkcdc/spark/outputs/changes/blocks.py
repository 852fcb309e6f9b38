"""The ``changes`` output layout: each table's row changes as typed Arrow blocks, without JSON.

Why: the ``columns`` layout renders every change as Debezium JSON (about 3.7 KB with schemas),
which ``table_changes`` then parses back with ``from_json``: measured, producing and parsing that
JSON was about 80 % of ``apply_changes``' time (benchmarks/RESULTS.md, apply). One streaming source
has one schema, so it cannot give each table its own columns; it carries, per row, a *block*: up to
:data:`BLOCK_ROWS` changes of one table, in their order, as an Arrow IPC stream whose columns are the
table's own (docs/typed-change-path.md has the candidates measured and why this one).

A block's columns are the *raw* values of the typed view's codecs (:mod:`sparkcdc.spark.views.type_map`: what
``from_json`` would have read — an int for a MicroTimestamp, base64 text for bytes ...), so one
set of codecs (Spark SQL expressions) types both layouts; the unchanged-TOAST placeholders are
already taken out in the reader (``__unchanged`` lists the columns) and key columns are filled from
the event key. Then the metadata columns of the view (``__op``, the sequence, ``__snapshot``,
``__old_key`` ...). :func:`.typed.typed_changes` decodes one table's blocks with ``mapInArrow`` and applies
the codecs: the result has exactly the columns of ``table_changes`` on the ``columns`` layout.

The source's rows in this layout: ``topic, schema, table, op, commit_lsn, lsn, ordinal, snapshot,
rows, truncates, key_changes, partial_key_changes, shape, description, block``; the positions and ``op``/``snapshot`` are those of the
block's first change (what ``apply_changes``' census needs), ``rows`` its number of changes, ``truncates`` how many of
them are truncates, ``key_changes`` how many carry an old key (the create that ends a primary-key change) and
``partial_key_changes`` how many of those lack an unchanged TOASTed value: from these three the census knows,
without decoding a block, whether a table's batch must be folded whole. ``description`` is the version of the
table the block was written for (:mod:`sparkcdc.debezium.descriptions`: its Relation message completed from the
catalog, or the catalog's description for a snapshot chunk), and ``shape`` its digest: the driver builds each
version's view from it, as the reader did, never from the catalog of a later moment. A block's raw columns carry
their column's identity (``attnum``) and name as field metadata, so that blocks of an older version are read into
a newer view by identity: a renamed column keeps its values, a column dropped and added again does not.
Only row changes (c, u, d, r, t)
are carried: heartbeats, transaction records, logical messages and notifications are not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import pyarrow as pa

from ....debezium.config import ConnectorConfig
from ....debezium.descriptions import description_digest, description_json
from ....debezium.records import ChangeRecord
from ...views.model import CHANGE_OPS, OLD_KEY, TableView, view_of
from ...views.reader import ColumnReader
from .schema import CHANGES_ARROW_SCHEMA, SOURCE_TS, block_schema, typed_array
from .text_columns import typed_columns

__all__ = ["BLOCK_ROWS", "change_blocks", "chunk_blocks"]

#: Changes per block: big enough that a block's fixed costs (an IPC stream, a Spark row) vanish,
#: small enough that a block of wide rows stays a few MiB.
BLOCK_ROWS = 4096

_OLD_KEY_HEADER = "__debezium.oldkey"


@dataclass(frozen=True)
class _Plan:
    """How one table version's records become a block (built once per ``TableSchema``)."""

    view: TableView
    readers: tuple[ColumnReader, ...]
    schema: pa.Schema  # the block's columns
    key_names: tuple[str, ...]
    value_names: tuple[str, ...]  # the columns a change's image carries
    shape: str  # the description's digest: changes when a Relation message changes the table's shape
    description: str  # the table version's description (JSON), which the driver builds its view from

    @classmethod
    def of(cls, table_schema: Any, config: ConnectorConfig) -> _Plan:
        view = view_of(table_schema, config)
        readers = tuple(ColumnReader.of(column) for column in view.columns)
        schema = block_schema(readers)
        description = description_json(table_schema.description)
        return cls(view, readers, schema, tuple(r.column.name for r in readers if r.key_codec is not None),
                   tuple(r.column.name for r in readers if r.column.in_value), description_digest(description), description)


def _snapshot_class(marker: str | None) -> str:
    """Blocks do not mix streamed changes with snapshot rows, nor snapshot kinds (the census reads
    a block's first marker)."""
    if marker is None or marker == "false":
        return ""
    return marker if marker in ("incremental", "blocking") else "initial"


def change_blocks(records: Iterable[ChangeRecord], config: ConnectorConfig, block_rows: int = BLOCK_ROWS) -> Iterator[pa.RecordBatch]:
    """The row changes of ``records`` as rows of :data:`CHANGES_ARROW_SCHEMA`, a record batch per
    run of blocks; records that are not row changes are left out.

    Each table gathers its own block, so that a transaction touching several tables in turn still
    makes blocks of thousands of changes: cutting a block at every change of table made blocks of
    one or two changes on such a workload, and their fixed costs (an IPC stream to write here and
    read in the stage task, a Spark row) made its apply half as fast (benchmarks/RESULTS.md, "apply,
    three tables in turn"). A table's changes stay in their order (its block is cut when its
    version or snapshot class changes); the order of blocks across tables is not kept, and need not
    be: the census orders blocks by their first position, and each table is applied on its own. At
    most ``PENDING_BLOCKS`` blocks' worth of changes wait across all tables before every gathered
    block is cut, which bounds the memory held."""
    plans: dict[int, tuple[Any, _Plan]] = {}  # id(TableSchema) -> (the schema, kept alive; its plan)
    pending: dict[tuple[str | None, str | None], _Pending] = {}  # (schema, table) -> its gathering block
    waiting = 0  # changes in pending
    out: list[tuple[Any, _Plan, _Block]] = []

    def flush(key: tuple[str | None, str | None]) -> None:
        nonlocal waiting
        block = pending.pop(key)
        entry = plans.get(id(block.table_schema))
        if entry is None:
            entry = plans[id(block.table_schema)] = (block.table_schema, _Plan.of(block.table_schema, config))
        out.append((block.records[0], entry[1], _encode_block(entry[1], block.records)))
        waiting -= len(block.records)

    for record in records:
        table_schema = record.table_schema
        if table_schema is None or record.value is None or record.op not in CHANGE_OPS:
            continue
        marker = record.snapshot
        snapshot_class = "" if marker is None else _snapshot_class(marker)
        key = (record.schema, record.table)
        gathering = pending.get(key)
        if gathering is not None and (gathering.table_schema is not table_schema or gathering.snapshot_class != snapshot_class
                                      or len(gathering.records) >= block_rows):
            flush(key)
            gathering = None
        if waiting >= block_rows * PENDING_BLOCKS:
            for other in list(pending):
                flush(other)
            gathering = None
        while len(out) >= _BATCH_BLOCKS:
            yield _blocks_batch(out[:_BATCH_BLOCKS])
            del out[:_BATCH_BLOCKS]
        if gathering is None:
            gathering = pending[key] = _Pending(table_schema, snapshot_class, [])
        gathering.records.append(record)
        waiting += 1
    for key in list(pending):
        flush(key)
    while out:
        yield _blocks_batch(out[:_BATCH_BLOCKS])
        del out[:_BATCH_BLOCKS]


#: Blocks per record batch the source yields.
_BATCH_BLOCKS = 4

#: How many blocks' worth of changes may wait, across the tables, before every gathered block is cut.
PENDING_BLOCKS = 2


@dataclass
class _Pending:
    """The changes of one table gathered for its next block."""

    table_schema: Any
    snapshot_class: str
    records: list[ChangeRecord]


@dataclass(frozen=True)
class _Block:
    """A block's IPC bytes and what its header row says of its changes."""

    data: bytes
    rows: int
    truncates: int
    key_changes: int
    partial_key_changes: int


def _blocks_batch(blocks: list[tuple[Any, _Plan, _Block]]) -> pa.RecordBatch:
    firsts = [first for first, _, _ in blocks]
    encoded = [block for _, _, block in blocks]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r.topic for r in firsts], pa.string()),
            pa.array([r.schema for r in firsts], pa.string()),
            pa.array([r.table for r in firsts], pa.string()),
            pa.array([r.op for r in firsts], pa.string()),
            pa.array([r.commit_lsn for r in firsts], pa.int64()),
            pa.array([r.lsn for r in firsts], pa.int64()),
            pa.array([r.ordinal for r in firsts], pa.int64()),
            pa.array([r.snapshot for r in firsts], pa.string()),
            pa.array([b.rows for b in encoded], pa.int32()),
            pa.array([b.truncates for b in encoded], pa.int32()),
            pa.array([b.key_changes for b in encoded], pa.int32()),
            pa.array([b.partial_key_changes for b in encoded], pa.int32()),
            pa.array([plan.shape for _, plan, _ in blocks], pa.string()),
            pa.array([plan.description for _, plan, _ in blocks], pa.string()),
            pa.array([b.data for b in encoded], pa.binary()),
        ],
        schema=CHANGES_ARROW_SCHEMA,
    )


def _encode_block(plan: _Plan, records: Sequence[ChangeRecord]) -> _Block:
    ops = [r.op for r in records]
    images = [(None if v is None else v["before"] if op == "d" else v["after"]) for v, op in
              zip([r.value for r in records], ops, strict=True)]
    metadata = [
        pa.array(ops, pa.string()),
        pa.array([r.commit_lsn for r in records], pa.int64()),
        pa.array([r.lsn for r in records], pa.int64()),
        pa.array([r.ordinal for r in records], pa.int64()),
        pa.array([r.tx_id for r in records], pa.int64()),
        pa.array([r.source_ts_us for r in records], SOURCE_TS),
        pa.array([r.snapshot for r in records], pa.string()),
    ]
    # Only the create that ends a primary-key change carries the old key.
    old_keys = [_old_key(r) if r.op == "c" else None for r in records] if plan.key_names else None
    return _build_block(plan, ops, [r.key for r in records], images, metadata, old_keys)


def _build_block(
    plan: _Plan, ops: Sequence[str] | None, keys: Sequence[Any], images: Sequence[Any], metadata: list[pa.Array],
    old_keys: Sequence[Any] | None,
) -> _Block:
    """A block from its changes' event keys and images (``after``; ``before`` for a delete) and the
    metadata arrays (``__op`` to ``__snapshot``). ``ops`` None: every change is a snapshot read (no
    placeholder can occur)."""
    def key_column(name: str) -> list[Any]:
        return [None if k is None else k.get(name) for k in keys]

    return _block_of_columns(plan, ops, key_column, _value_columns(plan, images), len(images), metadata, old_keys)


def _block_of_columns(
    plan: _Plan, ops: Sequence[str] | None, key_column: Callable[[str], list[Any]], columns: Mapping[str, list[Any]], size: int,
    metadata: list[pa.Array], old_keys: Sequence[Any] | None,
) -> _Block:
    """A block from its changes' image values column by column (``columns``), the event keys'
    values of a column (``key_column(name)``: None where a change has no key), and the metadata
    arrays; as :func:`_build_block`."""
    unchanged: list[list[str] | None] = [None] * size
    arrays: list[pa.Array] = []
    for reader, field in zip(plan.readers, plan.schema, strict=False):
        column = reader.column
        name = column.name
        if column.in_value:
            values = columns[name]
            placeholder = column.placeholder
            # (``in`` first: a scan in C finds most blocks free of placeholders.)
            if placeholder is not None and ops is not None and placeholder in values:
                keyed = key_column(name) if reader.key_codec is not None else None
                for i, value in enumerate(values):
                    # A create carries placeholders only as the second half of a primary-key change.
                    if value is not None and value == placeholder and ops[i] in ("u", "c"):
                        values[i] = None
                        if keyed is None or keyed[i] is None:
                            names = unchanged[i]
                            if names is None:
                                names = unchanged[i] = []
                            names.append(name)
            if isinstance(values, pa.Array) and reader.key_codec is not None and values.null_count:
                values = values.to_pylist()
            if reader.key_codec is not None and not isinstance(values, pa.Array) and None in values:
                keyed = key_column(name)
                keyed = keyed.to_pylist() if isinstance(keyed, pa.Array) else keyed
                values = [k if v is None else v for v, k in zip(values, keyed, strict=True)]
        else:
            values = key_column(name)
        arrays.append(typed_array(values, field.type, name))
    arrays += metadata
    if ops is None:
        arrays.append(pa.array([[]] * size, pa.list_(pa.string())))
    else:
        arrays.append(pa.array([u or [] for u in unchanged], pa.list_(pa.string())))
    if plan.key_names:
        old_key_type = plan.schema.field(OLD_KEY).type
        arrays.append(pa.nulls(size, old_key_type) if old_keys is None else typed_array(list(old_keys), old_key_type, OLD_KEY))
    batch = pa.RecordBatch.from_arrays(arrays, schema=plan.schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, plan.schema) as writer:
        writer.write_batch(batch)
    truncates = 0 if ops is None else ops.count("t")
    key_changes = partial = 0
    if old_keys is not None:
        for old_key, names in zip(old_keys, unchanged, strict=True):
            if old_key is not None:
                key_changes += 1
                partial += names is not None
    return _Block(sink.getvalue().to_pybytes(), size, truncates, key_changes, partial)


def _value_columns(plan: _Plan, images: Sequence[Any]) -> dict[str, list[Any]]:
    """The images' values column by column: one C-level getter per row and a transposition,
    rather than a dictionary look-up per cell."""
    names = plan.value_names
    if not names:
        return {}
    # itemgetter of one name gives the value, not a 1-tuple
    getter = itemgetter(*names) if len(names) > 1 else (lambda image: (image[names[0]],))
    empty = (None,) * len(names)
    try:
        rows = [empty if image is None else getter(image) for image in images]
    except KeyError:  # an image without every field (not one the connector built): look up cell by cell
        rows = [empty if image is None else tuple(image.get(n) for n in names) for image in images]
    return {name: list(column) for name, column in zip(names, zip(*rows, strict=True), strict=True)} if rows else {n: [] for n in names}


def _key_columns(keys: Mapping[str, list[Any]] | None, size: int) -> Callable[[str], list[Any]]:
    """A chunk's key values of a column (all None: the table has no key)."""
    def key_column(name: str) -> list[Any]:
        found = None if keys is None else keys.get(name)
        return [None] * size if found is None else found
    return key_column


def chunk_blocks(runs: Iterable[Any], config: ConnectorConfig, *, kind: str = "initial") -> Iterator[pa.RecordBatch]:
    """A snapshot chunk's rows (:class:`sparkcdc.engine.snapshot_reader.ChunkColumns` runs) as
    blocks, without a record per row: the key and ``after`` columns straight from the text columns,
    typed a column at a time (:func:`.text_columns.typed_columns`). ``kind``: a blocking or
    incremental chunk's rows are marked with it instead of their markers."""
    plans: dict[int, tuple[Any, _Plan]] = {}
    out: list[tuple[Any, _Plan, _Block]] = []
    for run in runs:
        table = run.table
        entry = plans.get(id(table))
        if entry is None:
            entry = plans[id(table)] = (table, _Plan.of(table, config))
        plan = entry[1]
        size = run.size
        keys, columns = typed_columns(table, run.columns, size)
        context = run.context
        markers = run.markers if kind == "initial" else [kind] * size
        metadata = [
            pa.repeat(pa.scalar("r", pa.string()), size),
            pa.repeat(pa.scalar(context.lsn, pa.int64()), size),
            pa.repeat(pa.scalar(context.lsn, pa.int64()), size),
            pa.array(range(run.first_ordinal, run.first_ordinal + size), pa.int64()),
            pa.repeat(pa.scalar(context.tx_id, pa.int64()), size),
            pa.repeat(pa.scalar(context.ts_us, SOURCE_TS), size),
            pa.array(markers, pa.string()),
        ]
        block = _block_of_columns(plan, None, _key_columns(keys, size), columns, size, metadata, None)
        first = _FirstRow(table.topic, table.schema_name, table.table_name, "r", context.lsn, context.lsn, run.first_ordinal, markers[0])
        out.append((first, plan, block))
        if len(out) >= _BATCH_BLOCKS:
            yield _blocks_batch(out)
            out = []
    if out:
        yield _blocks_batch(out)


@dataclass(frozen=True)
class _FirstRow:
    """What a block's row says of its first change (the fields of a record it reads)."""

    topic: str
    schema: str
    table: str
    op: str
    commit_lsn: int
    lsn: int
    ordinal: int
    snapshot: str | None


def _old_key(record: ChangeRecord) -> Any:
    """The ``__debezium.oldkey`` header's key: the event factory puts it before the context headers,
    so a look at the first header settles most records (tests/spark/test_views.py streams a key change)."""
    headers = record.headers
    if not headers:
        return None
    if headers[0].name == _OLD_KEY_HEADER:
        return headers[0].value
    return None

