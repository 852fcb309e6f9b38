"""The ``changes`` output read back: a table's blocks decoded and typed in the query.

:func:`typed_changes` decodes one table's blocks (:mod:`.blocks` wrote them in the reader tasks)
with ``mapInArrow`` and applies the typed view's codecs, Spark SQL expressions: the result has
exactly the columns of ``table_changes`` on the ``columns`` output. :func:`versioned_changes` does
so for blocks written for several versions of a table, each typed by its own version's codecs;
:class:`BlockTyper` types them in Python by the codecs' Arrow kernels, for a task that consumes the
typed rows itself (``apply_changes``' stage tasks).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...views.expressions import quote_name, sql_literal
from ...views.model import METADATA_COLUMNS, OLD_KEY, TableView
from ...views.reader import ColumnReader
from .schema import block_schema, typed_array

__all__ = ["BlockTyper", "arrow_typable", "table_blocks", "typed_changes", "versioned_changes", "view_fills"]


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
            columns.append(typed_array([fills[position]] * batch.num_rows, field.type, field.name))
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
    """One table's blocks typed in Python, by the codecs' Arrow kernels (:mod:`sparkcdc.spark.views.kernels`):
    the columns of :func:`typed_changes` (``__old_key`` left out where the table has no key), for a
    ``mapInArrow`` task that consumes them itself, so the typed rows never become Spark rows.

    Only for a view :func:`arrow_typable` accepts; a value a kernel refuses raises
    :class:`~sparkcdc.spark.views.kernels.KernelRefused` (the caller types the batch with Spark SQL instead)."""

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
    ``merged`` view (:func:`sparkcdc.spark.views.versions.merged_view`): each version's blocks are typed by its
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

