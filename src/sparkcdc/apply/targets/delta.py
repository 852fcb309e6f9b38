"""A Delta Lake root as the apply target: one ``MERGE`` (deltalake, no Spark) per batch and table.

Layout: the table ``schema.table`` lives at ``<root>/<schema>/<table>``; its tombstones (key
columns, ``__SEQUENCE``, ``__DELETED_AT``) in the sibling table
``<root>/_sparkcdc/tombstones/<schema>/<table>``, created with the first delete.

Exactly once: everything a batch does to a table is ONE Delta commit (a ``MERGE``, or an empty
commit when the merge changes no row), and that commit carries the batch's position twice:

* a ``txn`` action (Delta's own idempotent-writer record, ``appId`` = ``sparkcdc:<pipeline>``,
  ``version`` = batch id): kept in checkpoints and never removed by log clean-up, read from the
  loaded snapshot at no extra I/O, and checked by deltalake's conflict detection, so two writers
  racing on the same batch cannot both commit;
* the commit info's custom metadata ``sparkcdc.pipeline_id`` / ``sparkcdc.batch_id``, for people
  reading ``DESCRIBE HISTORY`` and as the fallback :meth:`DeltaTarget.applied_batch` scans (newest
  commit first, stopping at the first of the pipeline) when a table has no ``txn`` of it.

A replayed batch finds its id recorded and writes nothing; a crash before the commit leaves no
trace in the table. Tombstones are another table, so they cannot share that commit: they are
written first (an idempotent merge, tagged with the same metadata), and a tombstone commit whose
batch has not reached the main table (the writer died in between) is not trusted by
:meth:`DeltaTarget.tombstones`, which reads the tombstone table as of its newest commit whose batch
did commit. Otherwise the replayed batch would drop its own deletes as "older than a recorded
delete".

deltalake (1.6) behaviours this module works around:

* a merge that changes no row commits nothing (and so would record no position): an empty commit
  carrying the same ``txn`` and metadata is made instead;
* with ``streamed_exec=False`` (which lets the merge prune target files by the source's key
  range), a struct compared whole in the merge predicate fails ("Unable to convert expression to
  string"): ``__START_AT`` is matched field by field;
* comparing a timestamp column with a bare string literal silently matches nothing: literals are
  ``arrow_cast``;
* string columns are written as ``string_view``, which pyarrow's dataset filters cannot compare:
  reads prune files with the Delta log's statistics (``file_pruning_predicate``) and filter rows
  in memory;
* errors carry the Rust backtrace when ``RUST_BACKTRACE`` is set: it is cut from the messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction

from ..errors import TargetError
from ..fold import END_AT, START_AT, Key, TableChanges
from ..spec import ResolvedSpec
from .base import TargetColumn, already_applied, newest_open_versions

__all__ = ["DeltaTarget"]

SEQUENCE = "__SEQUENCE"
DELETED_AT = "__DELETED_AT"
DELETE = "__sparkcdc_delete"  # source-only columns of the SCD1 merge
UNCHANGED = "__sparkcdc_unchanged"
PIPELINE_KEY = "sparkcdc.pipeline_id"
BATCH_KEY = "sparkcdc.batch_id"
TOMBSTONES_DIR = "_sparkcdc/tombstones"
DELETED_AT_TYPE = pa.timestamp("us", tz="UTC")

#: History pages read by the fallback of applied_batch: newest commits first, each page re-read
#: from the newest (deltalake has no history cursor), so the cost stays below twice the commits
#: that precede the pipeline's newest one.
_HISTORY_PAGES = (1, 16, 256, None)
#: Up to this many keys, reads prune files by the keys themselves; beyond, by their range.
_PRUNE_IN_LIST = 1000


def _app_id(pipeline_id: str) -> str:
    return f"sparkcdc:{pipeline_id}"


@dataclass
class _Table:
    """What the target knows of one target table."""

    spec: ResolvedSpec
    path: str
    tombstone_path: str
    columns: list[str]  # the data columns, in the table's order
    keys: list[str]
    key_types: list[pa.DataType]
    sequence_names: list[str]
    sequence_type: pa.DataType
    handles: dict[str, DeltaTable] = field(default_factory=dict)

    @property
    def others(self) -> list[str]:
        return [c for c in self.columns if c not in self.keys]

    def sequence_value(self, sequence: Sequence[Any]) -> Any:
        if len(self.sequence_names) == 1:
            return sequence[0]
        return dict(zip(self.sequence_names, sequence, strict=True))

    def sequence_tuple(self, value: Any) -> tuple[Any, ...]:
        if len(self.sequence_names) == 1:
            return (value,)
        return tuple(value[name] for name in self.sequence_names)


class DeltaTarget:
    """Delta Lake tables under ``root`` (a local path or a ``file://``, ``s3://``, ``az://``, ``gs://`` URI)."""

    def __init__(self, root: str, *, storage_options: dict[str, str] | None = None) -> None:
        if not root:
            raise TargetError("a Delta Lake root is required")
        self.root = root.rstrip("/") or root
        self.storage_options = dict(storage_options) if storage_options else None
        self.description = f"Delta Lake at {self.root}"
        self._tables: dict[str, _Table] = {}

    def close(self) -> None:
        self._tables.clear()

    # -- locations and handles --------------------------------------------------------------------

    def _paths(self, spec: ResolvedSpec) -> tuple[str, str]:
        schema, _, name = spec.target.rpartition(".")
        schema = schema or "public"
        return f"{self.root}/{schema}/{name}", f"{self.root}/{TOMBSTONES_DIR}/{schema}/{name}"

    def _exists(self, path: str) -> bool:
        return DeltaTable.is_deltatable(path, storage_options=self.storage_options)

    def _handle(self, table: _Table | None, path: str) -> DeltaTable | None:
        """The table at ``path`` as of its newest commit, or None when there is no table there."""
        cached = table.handles.get(path) if table is not None else None
        if cached is not None:
            cached.update_incremental()
            return cached
        if not self._exists(path):
            return None
        handle = DeltaTable(path, storage_options=self.storage_options)
        if table is not None:
            table.handles[path] = handle
        return handle

    def _table(self, spec: ResolvedSpec) -> _Table:
        try:
            return self._tables[spec.target]
        except KeyError:
            raise TargetError(f"target table {spec.target} was not prepared") from None

    # -- set-up -------------------------------------------------------------------------------------

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        path, tombstone_path = self._paths(spec)
        by_name = {c.name: c for c in columns}
        missing_keys = [k for k in spec.keys if k not in by_name]
        if missing_keys:
            raise TargetError(f"target table {spec.target}: key column(s) {', '.join(missing_keys)} are not among its columns")
        if not sequence:
            raise TargetError(f"target table {spec.target}: no sequence_by column")
        sequence_type = _sequence_type(sequence)
        table = _Table(
            spec=spec, path=path, tombstone_path=tombstone_path, columns=[c.name for c in columns], keys=list(spec.keys),
            key_types=[_delta_type(by_name[k].arrow_type, k) for k in spec.keys],
            sequence_names=[c.name for c in sequence], sequence_type=sequence_type,
        )
        fields = [
            pa.field(c.name, _delta_type(c.arrow_type, c.name), nullable=c.nullable and c.name not in spec.keys)
            for c in columns
        ]
        if spec.scd_type == 2:
            fields += [pa.field(START_AT, sequence_type, nullable=False), pa.field(END_AT, sequence_type)]
        try:
            self._ensure(spec.target, path, pa.schema(fields), f" (stored_as_scd_type={spec.scd_type})")
            if self._exists(tombstone_path):
                self._ensure(f"{spec.target} tombstones", tombstone_path, _tombstone_schema(table), "")
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(f"preparing target table {spec.target} at {path} failed: {_reason(exc)}") from exc
        self._tables[spec.target] = table

    def _ensure(self, what: str, path: str, schema: pa.Schema, hint: str) -> None:
        """Create the table when missing; refuse an existing one without the expected columns."""
        if not self._exists(path):
            DeltaTable.create(path, schema=schema, mode="ignore", storage_options=self.storage_options)
        existing = set(pa.schema(DeltaTable(path, storage_options=self.storage_options).schema().to_arrow()).names)
        missing = [name for name in schema.names if name not in existing]
        if missing:
            raise TargetError(
                f"target table {what} at {path} exists without column(s) {', '.join(missing)}{hint}"
            )

    # -- reads ----------------------------------------------------------------------------------------

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        """The newest batch of ``pipeline_id`` committed to the table.

        Cost: the snapshot's ``txn`` of the pipeline (no I/O beyond bringing the table's snapshot up
        to date). Only when the table has none (never written by this pipeline, or its ``txn`` was
        expired through ``delta.setTransactionRetentionDuration``) is the history read, newest commit
        first, page by page (1, 16, 256 commits, then all), stopping at the first commit of the
        pipeline: about one commit file per commit written since (a fraction of a millisecond each on
        a local disk, one GET each on object storage), the whole retained log when the pipeline never
        wrote the table.
        """
        table = self._tables.get(spec.target)
        path = table.path if table is not None else self._paths(spec)[0]
        try:
            handle = self._handle(table, path)
            if handle is None:
                return None
            return self._applied(handle, pipeline_id)
        except Exception as exc:
            raise TargetError(f"reading the applied batch of {spec.target} at {path} failed: {_reason(exc)}") from exc

    @staticmethod
    def _applied(handle: DeltaTable, pipeline_id: str) -> int | None:
        version = handle.transaction_version(_app_id(pipeline_id))
        if version is not None:
            return int(version)
        for commit in _history_newest_first(handle):
            if commit.get(PIPELINE_KEY) == pipeline_id and commit.get(BATCH_KEY) is not None:
                return int(commit[BATCH_KEY])
        return None

    def tombstones(self, spec: ResolvedSpec, keys: Iterable[Key]) -> dict[Key, tuple[Any, ...]]:
        """Retained tombstones of ``keys``, as of the newest tombstone commit whose batch reached the
        main table (normally the newest commit: one commit info and the main table's ``txn`` read)."""
        table = self._table(spec)
        wanted = set(keys)
        if not wanted:
            return {}
        try:
            handle = self._handle(table, table.tombstone_path)
            if handle is None or not handle.file_uris():
                return {}
            handle = self._settled(table, handle)
            if handle is None:
                return {}
            cutoff = datetime.now(UTC) - spec.spec.tombstone_retention
            retained = pa.scalar(cutoff, type=DELETED_AT_TYPE)
            found: dict[Key, tuple[Any, ...]] = {}
            rows = _rows_of_keys(handle, table.keys, wanted, lambda t: pc.greater(t[DELETED_AT], retained), [*table.keys, SEQUENCE, DELETED_AT])
            for row in rows:
                key = tuple(row[k] for k in table.keys)
                if key in wanted:
                    found[key] = table.sequence_tuple(row[SEQUENCE])
            return found
        except Exception as exc:
            raise TargetError(f"reading the tombstones of {spec.target} at {table.tombstone_path} failed: {_reason(exc)}") from exc

    def _settled(self, table: _Table, handle: DeltaTable) -> DeltaTable | None:
        """``handle`` as of its newest commit that is not a tombstone write of a batch still missing
        from the main table (such a write is redone when the batch is replayed)."""
        main = self._handle(table, table.path)
        applied: dict[str, int | None] = {}
        for commit in _history_newest_first(handle):
            pipeline, batch = commit.get(PIPELINE_KEY), commit.get(BATCH_KEY)
            if pipeline is not None and batch is not None:
                if pipeline not in applied:
                    applied[pipeline] = None if main is None else self._applied(main, pipeline)
                done = applied[pipeline]
                if done is None or done < int(batch):
                    continue
            version = int(commit["version"])
            if version == handle.version():
                return handle
            return DeltaTable(table.tombstone_path, version=version, storage_options=self.storage_options)
        return None

    def open_versions(self, spec: ResolvedSpec, keys: Iterable[Key]) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
        """SCD2: the rows of ``keys`` whose ``__END_AT`` is null. Files are pruned by the first key
        column (``isin``, on Parquet statistics); the exact keys are matched here."""
        table = self._table(spec)
        wanted = set(keys)
        if not wanted:
            return {}
        try:
            handle = self._handle(table, table.path)
            if handle is None or not handle.file_uris():
                return {}
            rows = _rows_of_keys(handle, table.keys, wanted, lambda t: pc.is_null(t[END_AT]), [*table.columns, START_AT, END_AT])
            return newest_open_versions(rows, table.keys, table.columns, wanted, table.sequence_tuple)
        except Exception as exc:
            raise TargetError(f"reading the open versions of {spec.target} at {table.path} failed: {_reason(exc)}") from exc

    def stored_rows(self, spec: ResolvedSpec, keys: Iterable[Key]) -> dict[Key, list[Any]]:
        table = self._table(spec)
        wanted = set(keys)
        if not wanted:
            return {}
        try:
            handle = self._handle(table, table.path)
            if handle is None or not handle.file_uris():
                return {}
            rows = _rows_of_keys(handle, table.keys, wanted, lambda t: pc.is_valid(t[table.keys[0]]), list(table.columns))
            found = {tuple(row[k] for k in table.keys): [row[c] for c in table.columns] for row in rows}
            return {key: values for key, values in found.items() if key in wanted}
        except Exception as exc:
            raise TargetError(f"reading stored rows of {spec.target} at {table.path} failed: {_reason(exc)}") from exc

    # -- the write ------------------------------------------------------------------------------------

    def apply(self, changes: TableChanges, *, pipeline_id: str, batch_id: int) -> bool:
        table = self._table(changes.spec)
        target = changes.spec.target
        where = table.path
        try:
            main = self._handle(table, table.path)
            if main is None:
                raise TargetError(f"target table {target} at {table.path} is gone (it was prepared)")
            recorded = self._applied(main, pipeline_id)
            if already_applied(recorded, batch_id, image=changes.is_image):
                return False
            metadata = {PIPELINE_KEY: pipeline_id, BATCH_KEY: batch_id}
            if changes.tombstones:
                where = table.tombstone_path
                self._record_tombstones(table, changes.tombstones, metadata)
                where = table.path
            properties = CommitProperties(custom_metadata=metadata, app_transactions=[Transaction(_app_id(pipeline_id), batch_id)])
            before = main.version()
            if changes.spec.scd_type == 1:
                self._merge_scd1(table, main, changes, properties)
            else:
                self._merge_scd2(table, main, changes, properties)
            if main.version() == before:
                # deltalake commits nothing for a merge that changes no row: record the batch alone.
                main.create_write_transaction([], mode="append", schema=main.schema(), commit_properties=properties)
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(f"applying batch {batch_id} to {target} at {where} failed: {_reason(exc)}") from exc
        return True

    def _merge_scd1(self, table: _Table, main: DeltaTable, changes: TableChanges, properties: CommitProperties) -> None:
        if len(changes.segments) != 1:
            raise TargetError(f"SCD1 changes of {changes.spec.target} have {len(changes.segments)} segments, expected one")
        segment = changes.segments[0]
        if not segment.final and segment.truncate_at is None and segment.replace_at is None:
            return
        schema = _arrow_schema(main)
        rows = list(segment.final.values())
        kept_anywhere = {name for _, _, kept in rows for name in kept}
        arrays = [pa.array([values[i] for _, values, _ in rows], type=schema.field(name).type) for i, name in enumerate(table.columns)]
        arrays.append(pa.array([bool(delete) for delete, _, _ in rows], type=pa.bool_()))
        arrays.append(pa.array([list(kept) for _, _, kept in rows], type=pa.list_(pa.string())))
        source = pa.Table.from_arrays(arrays, names=[*table.columns, DELETE, UNCHANGED])
        merger = main.merge(
            source, _key_match(table.keys), source_alias="s", target_alias="t", streamed_exec=False, commit_properties=properties,
        ).when_matched_delete(predicate=f"s.{_ident(DELETE)}")
        if table.others:
            merger = merger.when_matched_update({
                _ident(name): (
                    f"CASE WHEN array_contains(s.{_ident(UNCHANGED)}, {_text(name)}) THEN t.{_ident(name)} ELSE s.{_ident(name)} END"
                    if name in kept_anywhere else f"s.{_ident(name)}"
                )
                for name in table.others
            })
        merger = merger.when_not_matched_insert(
            {_ident(name): f"s.{_ident(name)}" for name in table.columns}, predicate=f"NOT s.{_ident(DELETE)}"
        )
        if segment.truncate_at is not None or segment.replace_at is not None:
            merger = merger.when_not_matched_by_source_delete()  # the source holds every key the table keeps
        merger.execute()

    def _merge_scd2(self, table: _Table, main: DeltaTable, changes: TableChanges, properties: CommitProperties) -> None:
        # The open versions no source row matches are closed: at the image's sequence when the batch
        # is an image (its first segment emits every open version it keeps), else at the truncate's.
        close_at = changes.segments[0].replace_at
        if close_at is None:
            close_at = next((s.truncate_at for s in changes.segments if s.truncate_at is not None), None)
        # Later segments win for the same (key, __START_AT), as when the segments apply one by one.
        versions: dict[tuple[Key, tuple[Any, ...]], tuple[list[Any], tuple[Any, ...], tuple[Any, ...] | None]] = {}
        key_index = [table.columns.index(k) for k in table.keys]
        for segment in changes.segments:
            for values, start, end in segment.versions:
                versions[(tuple(values[i] for i in key_index), tuple(start))] = (values, start, end)
        if not versions and close_at is None:
            return
        schema = _arrow_schema(main)
        rows = list(versions.values())
        arrays = [pa.array([values[i] for values, _, _ in rows], type=schema.field(name).type) for i, name in enumerate(table.columns)]
        arrays.append(pa.array([table.sequence_value(start) for _, start, _ in rows], type=schema.field(START_AT).type))
        arrays.append(pa.array([None if end is None else table.sequence_value(end) for _, _, end in rows], type=schema.field(END_AT).type))
        source = pa.Table.from_arrays(arrays, names=[*table.columns, START_AT, END_AT])
        every = [*table.columns, START_AT, END_AT]
        # A struct compared whole breaks deltalake's source-statistics pruning ("Unable to convert
        # expression to string"): the start sequence is matched field by field.
        if len(table.sequence_names) == 1:
            on_start = _key_match([START_AT])
        else:
            on_start = " AND ".join(
                f"t.{_ident(START_AT)}[{_text(n)}] = s.{_ident(START_AT)}[{_text(n)}]" for n in table.sequence_names
            )
        merger = main.merge(
            source, f"{_key_match(table.keys)} AND {on_start}", source_alias="s", target_alias="t", streamed_exec=False,
            commit_properties=properties,
        ).when_matched_update({_ident(name): f"s.{_ident(name)}" for name in [*table.others, END_AT]}
        ).when_not_matched_insert({_ident(name): f"s.{_ident(name)}" for name in every})
        if close_at is not None:
            merger = merger.when_not_matched_by_source_update(
                {_ident(END_AT): _sequence_literal(table, close_at, schema.field(END_AT).type)},
                predicate=f"t.{_ident(END_AT)} IS NULL",
            )
        merger.execute()

    def _record_tombstones(self, table: _Table, tombstones: dict[Key, tuple[Any, ...]], metadata: dict[str, Any]) -> None:
        """Insert the batch's deletes (or raise a recorded sequence), then drop expired ones: two
        commits tagged with the batch, both idempotent when the batch is replayed."""
        handle = self._handle(table, table.tombstone_path)
        if handle is None:
            DeltaTable.create(table.tombstone_path, schema=_tombstone_schema(table), mode="ignore", storage_options=self.storage_options)
            handle = self._handle(table, table.tombstone_path)
            assert handle is not None
        schema = _arrow_schema(handle)
        now = datetime.now(UTC)
        items = list(tombstones.items())
        arrays = [pa.array([key[i] for key, _ in items], type=schema.field(name).type) for i, name in enumerate(table.keys)]
        arrays.append(pa.array([table.sequence_value(seq) for _, seq in items], type=schema.field(SEQUENCE).type))
        arrays.append(pa.array([now] * len(items), type=schema.field(DELETED_AT).type))
        source = pa.Table.from_arrays(arrays, names=[*table.keys, SEQUENCE, DELETED_AT])
        newer = _greater(f"s.{_ident(SEQUENCE)}", f"t.{_ident(SEQUENCE)}", table.sequence_names if len(table.sequence_names) > 1 else None)
        handle.merge(
            source, _key_match(table.keys), source_alias="s", target_alias="t", streamed_exec=False,
            commit_properties=CommitProperties(custom_metadata=metadata),
        ).when_matched_update(
            {_ident(SEQUENCE): f"s.{_ident(SEQUENCE)}", _ident(DELETED_AT): f"s.{_ident(DELETED_AT)}"}, predicate=newer,
        ).when_not_matched_insert(
            {_ident(name): f"s.{_ident(name)}" for name in [*table.keys, SEQUENCE, DELETED_AT]}
        ).execute()
        cutoff = now - table.spec.spec.tombstone_retention
        handle.delete(
            f"{_ident(DELETED_AT)} < {_literal(cutoff, DELETED_AT_TYPE)}", commit_properties=CommitProperties(custom_metadata=metadata),
        )


# -- helpers ------------------------------------------------------------------------------------------


def _history_newest_first(handle: DeltaTable) -> Iterable[dict[str, Any]]:
    seen = 0
    for limit in _HISTORY_PAGES:
        page = handle.history(limit)
        yield from page[seen:]
        if limit is None or len(page) < limit:
            return
        seen = len(page)


def _rows_of_keys(
    handle: DeltaTable, keys: list[str], wanted: set[Key], condition: Callable[[pa.Table], pa.ChunkedArray], columns: list[str],
) -> list[dict[str, Any]]:
    """Rows matching ``condition`` whose first key column is among ``wanted``'s (exact keys: the caller).

    Files are pruned by the Delta log's min/max statistics of the first key column (integer and
    string keys); rows are filtered here, not by a pyarrow dataset filter: deltalake writes string
    columns as ``string_view``, which pyarrow's statistics pruning and ``is_in`` cannot compare.
    """
    first = list({key[0] for key in wanted})
    dataset = None
    if all(isinstance(v, str) for v in first) or all(isinstance(v, int) and not isinstance(v, bool) for v in first):
        # deltalake evaluates an IN list value by value (100,000 keys: seconds): many keys prune by their range
        prune = [(keys[0], "in", first)] if len(first) <= _PRUNE_IN_LIST else [(keys[0], ">=", min(first)), (keys[0], "<=", max(first))]
        try:
            dataset = handle.to_pyarrow_dataset(file_pruning_predicate=prune)
        except Exception:  # a value the predicate cannot encode for the column's type: read every file
            dataset = None
    if dataset is None:
        dataset = handle.to_pyarrow_dataset()
    rows = dataset.to_table(columns=columns)
    if rows.num_rows:
        rows = rows.filter(condition(rows))
    if rows.num_rows:
        rows = rows.filter(pc.is_in(rows[keys[0]], value_set=pa.array(first, type=rows.schema.field(keys[0]).type)))
    return rows.to_pylist()


def _arrow_schema(handle: DeltaTable) -> pa.Schema:
    return pa.schema(handle.schema().to_arrow())


def _tombstone_schema(table: _Table) -> pa.Schema:
    return pa.schema(
        [pa.field(name, type_, nullable=False) for name, type_ in zip(table.keys, table.key_types, strict=True)]
        + [pa.field(SEQUENCE, table.sequence_type, nullable=False), pa.field(DELETED_AT, DELETED_AT_TYPE, nullable=False)]
    )


def _sequence_type(sequence: Sequence[TargetColumn]) -> pa.DataType:
    """One sequence column keeps its type; several become a struct of them, with their names."""
    if len(sequence) == 1:
        return _delta_type(sequence[0].arrow_type, sequence[0].name)
    return pa.struct([pa.field(c.name, _delta_type(c.arrow_type, c.name)) for c in sequence])


_UNSIGNED: dict[pa.DataType, pa.DataType] = {
    pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.uint64(): pa.decimal128(20, 0),
}


def _delta_type(arrow_type: pa.DataType, name: str) -> pa.DataType:
    """The Arrow type a Delta table stores for ``arrow_type``: Delta has no unsigned integers (widened),
    no large or view variants, one timestamp precision (microseconds) and one zone (UTC)."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        return _delta_type(t.value_type, name)
    if t in _UNSIGNED:
        return _UNSIGNED[t]
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise TargetError(f"column {name}: Delta Lake stores decimals of at most 38 digits, not {t}")
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
        return pa.list_(_delta_type(t.value_type, name))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _delta_type(f.type, f"{name}.{f.name}"), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_delta_type(t.key_type, name), _delta_type(t.item_type, name))
    if pa.types.is_time(t) or pa.types.is_duration(t) or pa.types.is_interval(t):
        raise TargetError(f"column {name}: Delta Lake has no type for Arrow {t} (exclude it with except_column_list)")
    return t


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _key_match(names: Iterable[str]) -> str:
    return " AND ".join(f"t.{_ident(n)} = s.{_ident(n)}" for n in names)


def _greater(left: str, right: str, fields: list[str] | None) -> str:
    """``left > right`` for sequences; struct sequences compare field by field (lexicographically)."""
    if fields is None:
        return f"{left} > {right}"
    head = fields[0]
    a, b = f"{left}[{_text(head)}]", f"{right}[{_text(head)}]"
    if len(fields) == 1:
        return f"{a} > {b}"
    return f"({a} > {b} OR ({a} = {b} AND {_greater(left, right, fields[1:])}))"


_INTEGER_NAMES = {
    pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32", pa.int64(): "Int64",
    pa.uint8(): "UInt8", pa.uint16(): "UInt16", pa.uint32(): "UInt32", pa.uint64(): "UInt64",
}


def _literal(value: Any, arrow_type: pa.DataType) -> str:
    """A DataFusion SQL literal of ``value`` typed ``arrow_type`` (the types a sequence can have).

    Comparing a timestamp column to a bare string literal silently matches nothing in deltalake's
    SQL: every literal is cast explicitly."""
    if value is None:
        return "NULL"
    t = arrow_type
    if t in _INTEGER_NAMES:
        return f"arrow_cast({int(value)}, '{_INTEGER_NAMES[t]}')"
    if pa.types.is_boolean(t):
        return "TRUE" if value else "FALSE"
    if pa.types.is_floating(t):
        return f"arrow_cast({float(value)!r}, '{'Float32' if pa.types.is_float32(t) else 'Float64'}')"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return f"arrow_cast({_text(str(value))}, 'Utf8')"
    if pa.types.is_decimal(t):
        return f"CAST({_text(str(value))} AS DECIMAL({t.precision},{t.scale}))"
    if pa.types.is_date32(t):
        return f"arrow_cast({_text(value.isoformat())}, 'Date32')"
    if pa.types.is_timestamp(t):
        zone = f'Some("{t.tz}")' if t.tz else "None"
        unit = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}[t.unit]
        return f"arrow_cast({_text(value.isoformat())}, 'Timestamp({unit}, {zone})')"
    if pa.types.is_struct(t):
        parts = ", ".join(f"{_text(f.name)}, {_literal(value[f.name], f.type)}" for f in t)
        return f"named_struct({parts})"
    raise TargetError(f"a sequence of Arrow type {t} cannot be written into a Delta Lake merge expression")


def _sequence_literal(table: _Table, sequence: Sequence[Any], arrow_type: pa.DataType) -> str:
    return _literal(table.sequence_value(sequence), arrow_type)


_BACKTRACE_LINE: Callable[[str], re.Match[str] | None] = re.compile(r"^\s*\d+: ").match


def _reason(exc: BaseException) -> str:
    """The message of a deltalake error without the Rust backtrace it may carry (RUST_BACKTRACE)."""
    lines: list[str] = []
    for line in str(exc).splitlines():
        if _BACKTRACE_LINE(line):
            break
        if line.strip():
            lines.append(line.strip())
    text = " ".join(lines) or type(exc).__name__
    return text if len(text) <= 1000 else text[:1000] + "…"
