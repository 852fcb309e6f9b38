"""The ``changes`` output layout: each table's row changes as typed Arrow blocks, without JSON.

Why: the ``columns`` layout renders every change as Debezium JSON (about 3.7 KB with schemas),
which ``table_changes`` then parses back with ``from_json``: measured, producing and parsing that
JSON was about 80 % of ``apply_changes``' time (benchmarks/RESULTS.md, apply). One streaming source
has one schema, so it cannot give each table its own columns; it carries, per row, a *block*: up to
:data:`BLOCK_ROWS` consecutive changes of one table as an Arrow IPC stream whose columns are the
table's own (docs/typed-change-path.md has the candidates measured and why this one).

A block's columns are the *raw* values of the typed view's codecs (:mod:`.views.type_map`: what
``from_json`` would have read — an int for a MicroTimestamp, base64 text for bytes ...), so one
set of codecs (Spark SQL expressions) types both layouts; the unchanged-TOAST placeholders are
already taken out in the reader (``__unchanged`` lists the columns) and key columns are filled from
the event key. Then the metadata columns of the view (``__op``, the sequence, ``__snapshot``,
``__old_key`` ...). :func:`typed_changes` decodes one table's blocks with ``mapInArrow`` and applies
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
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....debezium.config import ConnectorConfig
from ....debezium.descriptions import description_digest, description_json
from ....debezium.records import ChangeRecord
from ...views.expressions import quote_name, sql_literal
from ...views.model import CHANGE_OPS, METADATA_COLUMNS, OLD_KEY, TableView, ViewColumn, view_of
from ...views.reader import ColumnReader
from .text_columns import typed_columns

__all__ = [
    "BLOCK_ROWS",
    "BlockTyper",
    "CHANGES_ARROW_SCHEMA",
    "CHANGES_DDL_SCHEMA",
    "arrow_typable",
    "change_blocks",
    "chunk_blocks",
    "is_changes_layout",
    "table_blocks",
    "typed_changes",
    "versioned_changes",
]

#: Changes per block: big enough that a block's fixed costs (an IPC stream, a Spark row) vanish,
#: small enough that a block of wide rows stays a few MiB.
BLOCK_ROWS = 4096

CHANGES_DDL_SCHEMA = (
    "topic string, schema string, table string, op string, commit_lsn long, lsn long, ordinal long, snapshot string, "
    "rows int, truncates int, key_changes int, partial_key_changes int, shape string, description string, block binary"
)
CHANGES_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("schema", pa.string()), ("table", pa.string()), ("op", pa.string()),
    ("commit_lsn", pa.int64()), ("lsn", pa.int64()), ("ordinal", pa.int64()), ("snapshot", pa.string()),
    ("rows", pa.int32()), ("truncates", pa.int32()), ("key_changes", pa.int32()), ("partial_key_changes", pa.int32()),
    ("shape", pa.string()), ("description", pa.string()), ("block", pa.binary()),
])
_OLD_KEY_HEADER = "__debezium.oldkey"
_SOURCE_TS = pa.timestamp("us", tz="UTC")


def is_changes_layout(frame: DataFrame) -> bool:
    return has_changes_columns(frame.columns)


def has_changes_columns(columns: Sequence[str]) -> bool:
    """Whether a frame with these columns is the source's ``changes`` layout."""
    return "block" in columns and "rows" in columns


def _arrow_type(spark_type: T.DataType) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type)


# -- the reader's side: records -> blocks -------------------------------------------------------------


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


def block_schema(readers: Sequence[ColumnReader]) -> pa.Schema:
    """The Arrow schema of a table's blocks: raw data columns (each with its column's identity as
    field metadata: :func:`_identity`), then the metadata columns."""
    fields = [pa.field(f"__r{i}", _arrow_type(_raw_type(r)), metadata=_identity(r.column)) for i, r in enumerate(readers)]
    fields += [
        pa.field("__op", pa.string()), pa.field("__commit_lsn", pa.int64()), pa.field("__lsn", pa.int64()),
        pa.field("__ordinal", pa.int64()), pa.field("__tx_id", pa.int64()), pa.field("__source_ts", _SOURCE_TS),
        pa.field("__snapshot", pa.string()), pa.field("__unchanged", pa.list_(pa.string())),
    ]
    key_fields = [pa.field(r.column.name, _arrow_type(r.key_codec.raw)) for r in readers if r.key_codec is not None]
    if key_fields:  # a table without a key has no old key (and Spark takes no empty struct from Arrow)
        fields.append(pa.field(OLD_KEY, pa.struct(key_fields)))
    return pa.schema(fields)


def _identity(column: ViewColumn) -> dict[bytes, bytes]:
    """A raw column's field metadata: the source column's ``attnum`` (0: not known), its name, and
    how its raw values read (:func:`_reading`)."""
    return {b"attnum": str(column.attnum).encode(), b"name": column.name.encode(), b"reading": _reading(column).encode()}


def _reading(column: ViewColumn) -> str:
    """What decides how a raw value of ``column`` is typed, besides its Arrow type: the Connect type,
    its logical name and a decimal's scale (a Decimal's raw bytes are read at the schema's scale:
    ``numeric(10,2)`` to ``numeric(12,4)`` keeps the raw type but not the reading). Raw values are
    taken across versions only where it is the same."""
    schema = column.connect_schema if column.in_value else column.key_schema
    if schema is None:
        return ""
    kind = schema.type
    if schema.name is None:  # a plain number: a wider one reads the same values
        kind = {"int8": "int", "int16": "int", "int32": "int", "int64": "int", "float32": "float", "float64": "float"}.get(kind, kind)
    scale = dict(schema.parameters or ()).get("scale", "")
    return f"{kind}|{schema.name or ''}|{scale}"


def _raw_type(reader: ColumnReader) -> T.DataType:
    """What a column's block values are: the codec's raw type (of the key codec for a key column the
    value leaves out)."""
    if reader.column.in_value:
        return reader.codec.raw
    assert reader.key_codec is not None
    return reader.key_codec.raw


def _snapshot_class(marker: str | None) -> str:
    """Blocks do not mix streamed changes with snapshot rows, nor snapshot kinds (the census reads
    a block's first marker)."""
    if marker is None or marker == "false":
        return ""
    return marker if marker in ("incremental", "blocking") else "initial"


def change_blocks(records: Iterable[ChangeRecord], config: ConnectorConfig, block_rows: int = BLOCK_ROWS) -> Iterator[pa.RecordBatch]:
    """The row changes of ``records`` as rows of :data:`CHANGES_ARROW_SCHEMA`, a record batch per
    run of blocks; records that are not row changes are left out."""
    plans: dict[int, tuple[Any, _Plan]] = {}  # id(TableSchema) -> (the schema, kept alive; its plan)
    pending: list[ChangeRecord] = []
    pending_schema: Any = None
    pending_class = ""
    out: list[tuple[Any, _Plan, _Block]] = []

    def flush() -> None:
        if pending:
            entry = plans.get(id(pending_schema))
            if entry is None:
                entry = plans[id(pending_schema)] = (pending_schema, _Plan.of(pending_schema, config))
            out.append((pending[0], entry[1], _encode_block(entry[1], pending)))
            pending.clear()

    for record in records:
        table_schema = record.table_schema
        if table_schema is None or record.value is None or record.op not in CHANGE_OPS:
            continue
        marker = record.snapshot
        snapshot_class = "" if marker is None else _snapshot_class(marker)
        if table_schema is not pending_schema or snapshot_class != pending_class or len(pending) >= block_rows:
            flush()
            pending_schema, pending_class = table_schema, snapshot_class
            if len(out) >= 4:
                yield _blocks_batch(out)
                out = []
        pending.append(record)
    flush()
    if out:
        yield _blocks_batch(out)


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
        pa.array([r.source_ts_us for r in records], _SOURCE_TS),
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
        arrays.append(_array(values, field.type, name))
    arrays += metadata
    if ops is None:
        arrays.append(pa.array([[]] * size, pa.list_(pa.string())))
    else:
        arrays.append(pa.array([u or [] for u in unchanged], pa.list_(pa.string())))
    if plan.key_names:
        old_key_type = plan.schema.field(OLD_KEY).type
        arrays.append(pa.nulls(size, old_key_type) if old_keys is None else _array(list(old_keys), old_key_type, OLD_KEY))
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
            pa.repeat(pa.scalar(context.ts_us, _SOURCE_TS), size),
            pa.array(markers, pa.string()),
        ]
        block = _block_of_columns(plan, None, _key_columns(keys, size), columns, size, metadata, None)
        first = _FirstRow(table.topic, table.schema_name, table.table_name, "r", context.lsn, context.lsn, run.first_ordinal, markers[0])
        out.append((first, plan, block))
        if len(out) >= 4:
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


def _array(values: list[Any] | pa.Array, arrow_type: pa.DataType, name: str) -> pa.Array:
    if isinstance(values, pa.Array):  # typed by an Arrow kernel (text_columns)
        if values.type == arrow_type:
            return values
        values = values.to_pylist()  # what pa.array of the converters' values would make of them
    try:
        return pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([_conformed(v, arrow_type) for v in values], arrow_type)


def _conformed(value: Any, arrow_type: pa.DataType) -> Any:
    """A JSON-ready value as Arrow takes it: Debezium writes NaN and infinities of floats as text,
    and maps as objects."""
    if value is None:
        return None
    if pa.types.is_floating(arrow_type) and isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    if pa.types.is_map(arrow_type) and isinstance(value, dict):
        return [(k, _conformed(v, arrow_type.item_type)) for k, v in value.items()]
    if pa.types.is_list(arrow_type) and isinstance(value, list):
        return [_conformed(v, arrow_type.value_type) for v in value]
    if pa.types.is_struct(arrow_type) and isinstance(value, dict):
        return {f.name: _conformed(value.get(f.name), f.type) for f in arrow_type}
    return value


# -- the query's side: blocks -> typed rows -----------------------------------------------------------


def _decoder(schema: pa.Schema, fills: Mapping[int, Any] | None = None) -> Any:
    """The ``mapInArrow`` function: each block's IPC stream, conformed to ``schema`` (see :func:`_conform`)."""

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for block in batch.column(0):
                with pa.ipc.open_stream(block.as_buffer()) as reader:
                    for written in reader:
                        yield _conform(written, schema, fills or {})

    return decode


def _conform(batch: pa.RecordBatch, schema: pa.Schema, fills: Mapping[int, Any]) -> pa.RecordBatch:
    """A block written for one version of its table as ``schema``, the raw columns of another (or
    the same) version: each raw column taken from the block's column of the same identity (the same
    ``attnum``; the same name where either does not know its ``attnum``), cast to the newer type
    (a widened column), or null where the two versions read its raw values differently
    (:func:`_reading`; :func:`versioned_changes` types each version by its own codecs instead);
    a column the block lacks is added after the block was written, and takes
    the value ``fills`` gives for its index (what PostgreSQL gave older rows: :attr:`ViewColumn.fill`),
    or null (a column dropped since, or one whose older rows' value is not known). Metadata columns
    are matched by name."""
    if batch.schema.equals(schema, check_metadata=True):
        return batch
    by_attnum: dict[bytes, int] = {}
    by_name: dict[bytes, int] = {}
    for index, field in enumerate(batch.schema):
        if field.metadata and b"attnum" in field.metadata:
            if field.metadata[b"attnum"] != b"0":
                by_attnum[field.metadata[b"attnum"]] = index
            by_name[field.metadata[b"name"]] = index
    names = batch.schema.names
    columns = []
    for position, field in enumerate(schema):
        metadata = field.metadata or {}
        found: int | None = None
        if b"attnum" in metadata:
            attnum = metadata[b"attnum"]
            found = by_attnum.get(attnum) if attnum != b"0" else None
            if found is None:
                candidate = by_name.get(metadata[b"name"])
                if candidate is not None and (attnum == b"0" or batch.schema.field(candidate).metadata[b"attnum"] == b"0"):
                    found = candidate
        elif field.name in names:
            found = names.index(field.name)
        if found is not None and (batch.schema.field(found).metadata or {}).get(b"reading") != metadata.get(b"reading"):
            # read another way in the block's version (a decimal's scale, a temporal unit): not taken
            columns.append(pa.nulls(batch.num_rows, field.type))
        elif found is not None:
            column = batch.column(found)
            columns.append(column if column.type == field.type else column.cast(field.type))
        elif position in fills:
            columns.append(_array([fills[position]] * batch.num_rows, field.type, field.name))
        else:
            columns.append(pa.nulls(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def view_fills(view: TableView) -> dict[int, Any]:
    """The raw-column index -> value that blocks lacking that column take (see :func:`_conform`):
    the known, non-null fills of the view's live columns."""
    return {index: column.fill for index, column in enumerate(view.columns)
            if column.in_value and column.fill_known and column.fill is not None and not column.dropped}


def table_blocks(frame: DataFrame, view: TableView, shape: str | None = None) -> DataFrame:
    """The ``block`` column of one table's rows in a ``changes``-layout frame (of one version of it:
    ``shape``, a block's description digest)."""
    condition = (F.col("schema") == view.schema_name) & (F.col("table") == view.table_name)
    if shape is not None:
        condition = condition & (F.col("shape") == shape)
    return frame.where(condition).select("block")


class BlockTyper:
    """One table's blocks typed in Python, by the codecs' Arrow kernels (:mod:`.views.kernels`):
    the columns of :func:`typed_changes` (``__old_key`` left out where the table has no key), for a
    ``mapInArrow`` task that consumes them itself, so the typed rows never become Spark rows.

    Only for a view :func:`arrow_typable` accepts; a value a kernel refuses raises
    :class:`~.views.kernels.KernelRefused` (the caller types the batch with Spark SQL instead)."""

    def __init__(self, view: TableView) -> None:
        self.view = view

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        readers = [ColumnReader.of(column) for column in self.view.columns]
        kernels = _kernels(readers)
        assert kernels is not None, f"{self.view.table}: a column has no Arrow kernel"
        column_kernels, key_kernels = kernels
        decode = _decoder(block_schema(readers), view_fills(self.view))
        names = [*(r.column.name for r in readers), *(name for name, _ in METADATA_COLUMNS)]
        for block in decode(batches):
            op = block.column("__op")
            deleted = None
            arrays = []
            for index, (reader, kernel) in enumerate(zip(readers, column_kernels, strict=True)):
                column = reader.column
                value = kernel(block.column(index), column.name)
                if column.in_value and not column.in_delete_image:  # as typed_changes: Debezium's fallback, not data
                    deleted = pc.equal(op, "d") if deleted is None else deleted
                    value = pc.if_else(deleted, pa.scalar(None, value.type), value)
                arrays.append(value)
            arrays += [block.column(name) for name, _ in METADATA_COLUMNS]
            if key_kernels:
                arrays.append(_typed_old_key(block.column(OLD_KEY), key_kernels))
                yield pa.RecordBatch.from_arrays(arrays, names=[*names, OLD_KEY])
            else:
                yield pa.RecordBatch.from_arrays(arrays, names=names)


def arrow_typable(view: TableView) -> bool:
    """Whether :class:`BlockTyper` types the view's blocks: every codec it uses has an Arrow kernel."""
    return _kernels([ColumnReader.of(column) for column in view.columns]) is not None


def _kernels(readers: Sequence[ColumnReader]) -> tuple[list[Any], list[tuple[str, Any]]] | None:
    """Per column the kernel of the codec its value is read with, and per key column its key
    codec's (the old key); None when one is missing."""
    columns = []
    for reader in readers:
        codec = reader.codec if reader.column.in_value else reader.key_codec
        assert codec is not None
        columns.append(codec.arrow_kernel)
    keys = [(r.column.name, r.key_codec.arrow_kernel) for r in readers if r.key_codec is not None]
    if any(k is None for k in columns) or any(k is None for _, k in keys):
        return None
    return columns, keys


def _typed_old_key(old_keys: pa.Array, key_kernels: list[tuple[str, Any]]) -> pa.Array:
    """The block's old keys with each field typed by its key codec's kernel; null where no key changed."""
    assert isinstance(old_keys, pa.StructArray)
    fields = [kernel(old_keys.field(name), name) for name, kernel in key_kernels]
    struct_type = pa.struct([pa.field(name, f.type) for (name, _), f in zip(key_kernels, fields, strict=True)])
    if old_keys.null_count == len(old_keys):
        return pa.nulls(len(old_keys), struct_type)
    return pa.StructArray.from_arrays(fields, fields=list(struct_type), mask=old_keys.is_null())


def versioned_changes(frame: DataFrame, versions: Sequence[tuple[str, TableView]], merged: TableView) -> DataFrame:
    """One table's changes from a ``changes``-layout frame whose blocks were written for several
    versions of it (``versions``: each one's shape and view, oldest first), as the columns of the
    ``merged`` view (:func:`.views.versions.merged_view`): each version's blocks are typed by its
    own codecs, then its columns are taken by identity into the merged ones (renamed, cast to a
    widened type), a column it lacks holds what PostgreSQL gave older rows (:attr:`ViewColumn.fill`)
    or null, and the names ``__unchanged`` lists are the merged ones."""
    from functools import reduce

    from ...views.versions import fill_expression, matching_column, renamed_names

    if len(versions) == 1:
        return typed_changes(frame, merged)
    merged_keys = [c for c in merged.columns if c.is_key]
    old_key_type = (T.StructType([T.StructField(c.name, c.spark_type, True) for c in merged_keys]).simpleString()
                    if merged_keys else "STRUCT<>")
    frames = []
    for shape, view in versions:
        typed = typed_changes(frame, view, shape=shape)
        data = []
        for column in merged.columns:
            own = matching_column(column, view)
            wanted = column.spark_type.simpleString()
            if own is not None:  # a type that does not widen gives null here (and the applier reads the table again)
                data.append(f"TRY_CAST({quote_name(own.name)} AS {wanted}) AS {quote_name(column.name)}")
            else:
                data.append(f"{fill_expression(column) or f'CAST(NULL AS {wanted})'} AS {quote_name(column.name)}")
        renamed = renamed_names(view, merged)
        unchanged = "__unchanged"
        if renamed:
            cases = " ".join(f"WHEN {sql_literal(old)} THEN {sql_literal(new)}" for old, new in renamed.items())
            unchanged = f"transform(__unchanged, __n -> CASE __n {cases} ELSE __n END) AS __unchanged"
        same_keys = [c.name for c in view.columns if c.is_key] == [c.name for c in merged_keys]
        old_key = f"CAST({OLD_KEY} AS {old_key_type}) AS {OLD_KEY}" if same_keys and merged_keys else f"CAST(NULL AS {old_key_type}) AS {OLD_KEY}"
        meta = [name for name, _ in METADATA_COLUMNS if name != "__unchanged"]
        frames.append(typed.selectExpr(*data, *meta, unchanged, old_key))
    return reduce(DataFrame.unionByName, frames)


def typed_changes(frame: DataFrame, view: TableView, *, shape: str | None = None) -> DataFrame:
    """One table's changes from a ``changes``-layout frame: the columns of ``table_changes``
    (of the blocks of one version of it: ``shape``)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    readers = [ColumnReader.of(column) for column in view.columns]
    schema = block_schema(readers)
    decoded = table_blocks(frame, view, shape).mapInArrow(_decoder(schema, view_fills(view)), from_arrow_schema(schema))
    data = []
    for index, reader in enumerate(readers):
        column = reader.column
        raw = f"__r{index}"
        codec = reader.codec if column.in_value else reader.key_codec
        assert codec is not None
        value = codec.apply(raw)
        if column.in_value and not column.in_delete_image:  # a delete's before-image lacks it: Debezium's fallback, not data
            value = f"CASE WHEN __op = 'd' THEN NULL ELSE {value} END"
        data.append(f"CAST({value} AS {column.spark_type.simpleString()}) AS {quote_name(column.name)}")
    old_key_fields = [
        f"{sql_literal(r.column.name)}, CAST({r.key_codec.apply(f'{OLD_KEY}.{quote_name(r.column.name)}')} AS {r.column.spark_type.simpleString()})"
        for r in readers if r.key_codec is not None
    ]
    old_key = (f"CASE WHEN {OLD_KEY} IS NULL THEN NULL ELSE named_struct({', '.join(old_key_fields)}) END" if old_key_fields
               else "CAST(NULL AS STRUCT<>)")
    meta = [name for name, _ in METADATA_COLUMNS]
    return decoded.selectExpr(*data, *meta, f"{old_key} AS {OLD_KEY}")
