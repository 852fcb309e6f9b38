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

An SCD1 image (an initial snapshot's batch) is not merged where the table allows it: the
executors write it as the table's own data files and the commit adds them by reference, as one
overwrite carrying the same ``txn`` and metadata (:mod:`.delta_image`).

Staging and commit (:class:`~.lake_target.LakeTarget`): executors write each partition's folded rows
as Parquet files under ``<root>/_sparkcdc_staging/…``; the driver's commit streams the collected
parts' files (a ``RecordBatchReader``, never a Python object per row) into the merge. That merge
runs in the driver process, inside deltalake's Rust engine: a Delta commit is one atomic log entry
that one writer makes, deltalake has no way to commit files written by many processes as one
merge, and its conflict detection on the ``txn`` (see above) is what makes the batch's position
exactly once. ``streamed_exec=False`` lets it prune target files by the source's keys, which holds
the batch's staged rows in that process's memory (Arrow, in Rust) while the merge runs.

Schema evolution (:mod:`..evolution`): ``prepare`` reads the table's Arrow schema and the source
identity recorded in its configuration (``sparkcdc.source.identity``: the source table, its
relation id, key and each column's ``attnum``), plans the changes and carries them out:

* a column added without a value for the rows the table holds, and NOT NULL dropped, in place
  (``alter.add_columns``, ``alter.drop_column_not_null``);
* anything else (a rename, a wider type, a dropped column, a column added with the value older
  rows take): the table rewritten in ONE overwrite commit of its new schema, streamed batch by
  batch from its files (``write_deltalake(..., mode="overwrite", schema_mode="overwrite")``), so
  the schema and the rows change together. deltalake 1.6 renames, widens and drops no column in
  place (its column mapping, which would rename and drop, writes values that read back as null).
  The overwrite keeps the table's configuration and its ``txn`` actions: the pipelines' positions
  survive it. It costs a read and a write of the whole table.
* NOT NULL is never set again (``tighten=False``): deltalake cannot make a column NOT NULL (Spark's
  ``SET NOT NULL`` checks every row the table holds), so an added column is nullable and a column
  the source makes NOT NULL stays nullable.

The identity is recorded after the changes, in a commit of its own (deltalake takes a custom
configuration key only through ``set_table_properties(..., raise_if_not_exists=False)`` or at
creation, never with an overwrite). So that a crash in between cannot leave a stale identity (by
which a later rename would rename the wrong column), the identity to come is first recorded as
pending with a token the changes' commits carry; the next ``prepare`` reads the commits since the
pending record (normally one or two) to know which identity the columns have.

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

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake import Schema as DeltaSchema

from ..errors import TargetError
from ..evolution import DROP, AddColumn, DropNotNull, Evolution, EvolutionPolicy, Operation, WidenColumn
from ..fold import END_AT, START_AT, Key
from ..spec import ResolvedSpec
from ..staged import DELETE, SEGMENT, UNCHANGED, Folded, StagedBatch, StagedPart
from ..target_column import TargetColumn
from ..vector import cast_column, last_of_each
from . import delta_image, lake_evolution
from .lake_commits import commit_tags, settled, tags_of
from .lake_staging import staged_batches
from .lake_target import LakeTarget
from .library_errors import failing_as
from .storage_types import StorageTypes
from .table_layout import TableLayout
from .table_names import DELETED_AT, DELETED_AT_TYPE, SEQUENCE, split_target

__all__ = ["DeltaTarget"]

log = logging.getLogger(__name__)

TOMBSTONES_DIR = "_sparkcdc/tombstones"

#: Delta has no unsigned integers (widened), no large or view variants, one timestamp precision
#: (microseconds) and one zone (UTC), no times, durations or intervals.
DELTA_TYPES = StorageTypes("Delta Lake", small_integers=True, fixed_size_binary=False, times=False, others=True)
#: What a Delta mirror widens (every change of type is a rewrite, so a decimal may take a larger scale).
DELTA_RULES = lake_evolution.LakeTypeRules(DELTA_TYPES)
#: The commit-info key of an evolution's commits: the token its pending identity names (see ``_settled_identity``).
EVOLUTION_KEY = "sparkcdc.evolution"
#: In the identity record: the identity an evolution under way records once its changes are in.
_PENDING = "pending"

#: History pages read by the fallback of applied_batch: newest commits first, each page re-read
#: from the newest (deltalake has no history cursor), so the cost stays below twice the commits
#: that precede the pipeline's newest one.
_HISTORY_PAGES = (1, 16, 256, None)
#: Up to this many keys, reads prune files by the keys themselves; beyond, by their range.
_PRUNE_IN_LIST = 1000


def _app_id(pipeline_id: str) -> str:
    return f"sparkcdc:{pipeline_id}"


@dataclass
class _Table(TableLayout):
    """What the target knows of one target table: its layout, where it lives, its open handles."""

    path: str = ""
    tombstone_path: str = ""
    handles: dict[str, DeltaTable] = field(default_factory=dict)


class DeltaTarget(LakeTarget[_Table]):
    """Delta Lake tables under ``root`` (a local path or a ``file://``, ``s3://``, ``az://``, ``gs://`` URI)."""

    def __init__(self, root: str, *, storage_options: dict[str, str] | None = None) -> None:
        super().__init__()
        if not root:
            raise TargetError("a Delta Lake root is required")
        self.location = root
        self.root = root.rstrip("/") or root
        self.storage_options = dict(storage_options) if storage_options else None
        self.description = f"Delta Lake at {self.root}"

    def open_options(self) -> dict[str, Any]:
        return {"storage_options": dict(self.storage_options)} if self.storage_options else {}

    def _staging_root(self) -> str:
        return self.root

    # -- locations and handles --------------------------------------------------------------------

    def _paths(self, spec: ResolvedSpec) -> tuple[str, str]:
        schema, name = split_target(spec.target)
        return f"{self.root}/{schema}/{name}", f"{self.root}/{TOMBSTONES_DIR}/{schema}/{name}"

    def _where(self, spec: ResolvedSpec, *, tombstones: bool = False) -> str:
        return f"at {self._paths(spec)[1 if tombstones else 0]}"

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

    def _main(self, spec: ResolvedSpec) -> DeltaTable | None:
        table = self._tables.get(spec.target)
        return self._handle(table, table.path if table is not None else self._paths(spec)[0])

    # -- set-up -------------------------------------------------------------------------------------

    def _layout(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> _Table:
        path, tombstone_path = self._paths(spec)
        return _Table.planned(spec, columns, sequence, DELTA_TYPES, required_sequence=False, path=path,
                              tombstone_path=tombstone_path)

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn],
                policy: EvolutionPolicy | None = None, *, relation_id: int = 0) -> Evolution:
        """Create the target table (recording its source identity in the same commit), or bring it
        to the source's shape under ``policy`` (see the module doc, Schema evolution); the key
        columns of its tombstone table follow a widened key."""
        policy = policy or EvolutionPolicy()
        path, tombstone_path = self._paths(spec)
        created = [c for c in columns if not (c.dropped and policy.dropped_columns == DROP)]
        planned = self._layout(spec, created, sequence)  # a type Delta has no type for stops before anything is written
        with failing_as(f"preparing target table {spec.target} at {path}"):
            handle = self._handle(None, path)
            if handle is None:
                record = lake_evolution.identity_record(spec, relation_id, {c.name: c.attnum for c in created})
                DeltaTable.create(path, schema=planned.schema, mode="ignore", configuration={lake_evolution.IDENTITY_PROPERTY: json.dumps(record)},
                                  raise_if_key_not_exists=False, storage_options=self.storage_options)
                handle = DeltaTable(path, storage_options=self.storage_options)
            evolution = self._evolve(spec, handle, columns, relation_id, policy)
            table = self._layout(spec, evolution.columns, sequence)
            tombstones = self._handle(None, tombstone_path)
            if tombstones is not None:
                self._follow_keys(table, tombstones)
        self._register(spec, table, evolution.columns, sequence)
        return evolution

    def _evolve(self, spec: ResolvedSpec, handle: DeltaTable, columns: Sequence[TargetColumn], relation_id: int,
                policy: EvolutionPolicy) -> Evolution:
        """Plan and carry out the changes that bring the table to ``columns``, then record the
        identity. The changes and the identity are separate commits (deltalake writes no custom
        table property with data): the identity to come is recorded first as pending, and
        :meth:`_settled_identity` tells after a crash whether the changes went in."""
        where = f"at {self._paths(spec)[0]}"
        raw = lake_evolution.recorded_identity((handle.metadata().configuration or {}).get(lake_evolution.IDENTITY_PROPERTY), f"{spec.target} {where}")
        record = _settled_identity(handle, raw, f"{spec.target} {where}")
        evolution = lake_evolution.plan_lake_evolution(
            spec, columns, _arrow_schema(handle), record, relation_id, policy, DELTA_RULES, where=where,
            continue_hint=lambda column: (
                f"rewrite the mirror table {where} yourself with its column {column} of the source's type (for example with "
                f"deltalake: read the table, cast the column, and write_deltalake(..., mode='overwrite', schema_mode='overwrite'))"),
        )
        relation = relation_id or int((record or {}).get("relation", 0))
        wanted = lake_evolution.identity_record(spec, relation, evolution.identity)
        if evolution.operations:
            token = uuid.uuid4().hex
            _record_identity(handle, {**(record or {}), _PENDING: {"token": token, "after": handle.version(), "record": wanted}})
            _carry_out(handle, evolution.operations, CommitProperties(custom_metadata={EVOLUTION_KEY: token}), where)
        if evolution.operations or wanted != raw:
            _record_identity(handle, wanted)
        evolution.report(spec.target, where, spec.spec.qualified_table)
        return evolution

    def _follow_keys(self, table: _Table, tombstones: DeltaTable) -> None:
        """The tombstone table's key columns widened to the table's key types where a key's type was
        widened (decided from the two tables as they are, so that a crash between their changes is
        made good by the next prepare); a tombstone table without the expected columns is refused."""
        widened: list[Operation] = [
            WidenColumn(name, old, TargetColumn(name, new))
            for name, old, new in lake_evolution.widened_tombstone_keys(table, _arrow_schema(tombstones), DELTA_TYPES, f"at {table.tombstone_path}")
        ]
        if widened:
            # Tagged as the newest tombstone write was: a rewrite must not make an unsettled write trusted.
            newest = tombstones.history(1)
            pipeline, batch = tags_of(newest[0] if newest else None)
            metadata = {EVOLUTION_KEY: uuid.uuid4().hex,
                        **(commit_tags(pipeline, batch) if pipeline is not None and batch is not None else {})}
            _carry_out(tombstones, widened, CommitProperties(custom_metadata=metadata), f"at {table.tombstone_path}")
            log.info("tombstones of %s at %s: key column(s) %s widened", table.spec.target, table.tombstone_path,
                     ", ".join(op.name for op in widened if isinstance(op, WidenColumn)))

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
        return super().applied_batch(spec, pipeline_id)

    def _applied(self, main: DeltaTable, pipeline_id: str) -> int | None:
        version = main.transaction_version(_app_id(pipeline_id))
        if version is not None:
            return int(version)
        for commit in _history_newest_first(main):
            pipeline, batch = tags_of(commit)
            if pipeline == pipeline_id and batch is not None:
                return int(batch)
        return None

    def _tombstone_rows(self, table: _Table, wanted: set[Key], cutoff: datetime) -> Iterable[Mapping[str, Any]]:
        """As of the newest tombstone commit whose batch reached the main table (normally the newest
        commit: one commit info and the main table's ``txn`` read)."""
        handle = self._handle(table, table.tombstone_path)
        if handle is None or not handle.file_uris():
            return []
        handle = self._settled(table, handle)
        if handle is None:
            return []
        retained = pa.scalar(cutoff, type=DELETED_AT_TYPE)
        return _rows_of_keys(handle, table.keys, wanted, lambda t: pc.greater(t[DELETED_AT], retained),
                             [*table.keys, SEQUENCE, DELETED_AT])

    def _may_have_tombstones(self, table: _Table) -> bool:
        return self._exists(table.tombstone_path)

    def _settled(self, table: _Table, handle: DeltaTable) -> DeltaTable | None:
        """``handle`` as of its newest settled commit (:func:`.lake_commits.settled`)."""
        main = self._handle(table, table.path)
        commit = settled(
            _history_newest_first(handle), tags_of,
            lambda pipeline: None if main is None else self._applied(main, pipeline),
        )
        if commit is None:
            return None
        version = int(commit["version"])
        if version == handle.version():
            return handle
        return DeltaTable(table.tombstone_path, version=version, storage_options=self.storage_options)

    def _open_rows(self, table: _Table, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        """Files are pruned by the first key column (on the log's statistics); exact keys: the caller."""
        handle = self._handle(table, table.path)
        if handle is None or not handle.file_uris():
            return []
        return _rows_of_keys(handle, table.keys, wanted, lambda t: pc.is_null(t[END_AT]), [*table.columns, START_AT, END_AT])

    def _key_rows(self, table: _Table, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        handle = self._handle(table, table.path)
        if handle is None or not handle.file_uris():
            return []
        return _rows_of_keys(handle, table.keys, wanted, lambda t: pc.is_valid(t[table.keys[0]]), list(table.columns))

    # -- the write ------------------------------------------------------------------------------------

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        """An SCD1 image goes straight into the table's own data files where the table allows it
        (:mod:`.delta_image`); anything else is staged for the merge."""
        if delta_image.is_whole_image(folded):
            table = self._table(folded.spec)
            with failing_as(f"staging batch {batch_id} of {folded.spec.target} at {table.path}"):
                schema = delta_image.image_schema(self._handle(table, table.path), table.columns)
                if schema is not None:
                    return delta_image.write_image(table.path, schema, folded, batch_id=batch_id, tag=tag)
        return super().stage(folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=tag)

    def _write(self, table: _Table, main: DeltaTable, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        metadata = commit_tags(pipeline_id, batch_id)
        properties = CommitProperties(custom_metadata=metadata, app_transactions=[Transaction(_app_id(pipeline_id), batch_id)])
        before = main.version()
        in_place = [part.in_place for part in staged.parts]
        if any(in_place):
            if not all(in_place) or delta_image.image_schema(main, table.columns) is None:
                raise TargetError(f"batch {batch_id} of {staged.spec.target} at {table.path}: the table changed while its "
                                  "image was written as data files (its columns, partitioning or column mapping); nothing was "
                                  "committed, the batch is applied again when the query restarts")
            delta_image.commit_image(main, staged, properties)  # always a commit, even of no file
            return
        if staged.spec.scd_type == 1:
            self._merge_scd1(table, main, staged, properties)
        else:
            self._merge_scd2(table, main, staged, properties)
        if main.version() == before:
            # deltalake commits nothing for a merge that changes no row: record the batch alone.
            main.create_write_transaction([], mode="append", schema=main.schema(), commit_properties=properties)

    def _merge_scd1(self, table: _Table, main: DeltaTable, staged: StagedBatch, properties: CommitProperties) -> None:
        if len(staged.segments) != 1:
            raise TargetError(f"SCD1 changes of {staged.spec.target} have {len(staged.segments)} segments, expected one")
        segment = staged.segments[0]
        if not staged.rows and segment.truncate_at is None and segment.replace_at is None:
            return
        target = _arrow_schema(main)
        schema = pa.schema([pa.field(name, target.field(name).type) for name in table.columns]
                           + [pa.field(DELETE, pa.bool_()), pa.field(UNCHANGED, pa.list_(pa.string()))])

        def convert(batch: pa.RecordBatch) -> pa.RecordBatch:
            return pa.RecordBatch.from_arrays([cast_column(batch.column(f.name), f.type) for f in schema], schema=schema)

        source = _reader(schema, staged_batches(staged, "rows", schema.names), convert)
        kept_anywhere = set(staged.kept)
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

    def _merge_scd2(self, table: _Table, main: DeltaTable, staged: StagedBatch, properties: CommitProperties) -> None:
        # The open versions no source row matches are closed: at the image's sequence when the batch
        # is an image (its first segment emits every open version it keeps), else at the truncate's.
        close_at = staged.segments[0].replace_at
        if close_at is None:
            close_at = next((s.truncate_at for s in staged.segments if s.truncate_at is not None), None)
        if not staged.rows and close_at is None:
            return
        target = _arrow_schema(main)
        every = [*table.columns, START_AT, END_AT]
        schema = pa.schema([pa.field(name, target.field(name).type) for name in every])

        def convert(batch: pa.RecordBatch) -> pa.RecordBatch:
            arrays = [cast_column(batch.column(name), schema.field(name).type) for name in table.columns]
            arrays += [table.stored_sequence(batch.column(name), schema.field(name).type) for name in (START_AT, END_AT)]
            return pa.RecordBatch.from_arrays(arrays, schema=schema)

        batches = staged_batches(staged, "rows", [*every, SEGMENT])
        if len(staged.segments) > 1 and staged.rows:
            # Later segments win for the same (key, __START_AT), as when the segments apply one by one.
            rows = pa.Table.from_batches(list(batches))
            rows = rows.take(pc.sort_indices(rows, [(SEGMENT, "ascending")]))
            rows = rows.filter(pa.array(last_of_each(rows, [*table.keys, START_AT])))
            batches = iter(rows.to_batches())
        source = _reader(schema, batches, convert)
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

    def _record_tombstones(self, table: _Table, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        """Insert the batch's deletes (or raise a recorded sequence), then drop expired ones: two
        commits tagged with the batch, both idempotent when the batch is replayed."""
        handle = self._handle(table, table.tombstone_path)
        if handle is None:
            DeltaTable.create(table.tombstone_path, schema=table.tombstone_schema(), mode="ignore", storage_options=self.storage_options)
            handle = self._handle(table, table.tombstone_path)
            assert handle is not None
        metadata = commit_tags(pipeline_id, batch_id)
        stored = _arrow_schema(handle)
        schema = pa.schema([pa.field(name, stored.field(name).type) for name in [*table.keys, SEQUENCE, DELETED_AT]])
        now = datetime.now(UTC)

        def convert(batch: pa.RecordBatch) -> pa.RecordBatch:
            arrays = [cast_column(batch.column(name), schema.field(name).type) for name in table.keys]
            arrays.append(table.stored_sequence(batch.column(SEQUENCE), schema.field(SEQUENCE).type))
            arrays.append(pa.array([now] * batch.num_rows, type=schema.field(DELETED_AT).type))
            return pa.RecordBatch.from_arrays(arrays, schema=schema)

        source = _reader(schema, staged_batches(staged, "tombstones", [*table.keys, SEQUENCE]), convert)
        newer = _greater(f"s.{_ident(SEQUENCE)}", f"t.{_ident(SEQUENCE)}", table.sequence_names if len(table.sequence_names) > 1 else None)
        handle.merge(
            source, _key_match(table.keys), source_alias="s", target_alias="t", streamed_exec=False,
            commit_properties=CommitProperties(custom_metadata=metadata),
        ).when_matched_update(
            {_ident(SEQUENCE): f"s.{_ident(SEQUENCE)}", _ident(DELETED_AT): f"s.{_ident(DELETED_AT)}"}, predicate=newer,
        ).when_not_matched_insert(
            {_ident(name): f"s.{_ident(name)}" for name in [*table.keys, SEQUENCE, DELETED_AT]}
        ).execute()
        cutoff = table.tombstone_cutoff(now)
        handle.delete(
            f"{_ident(DELETED_AT)} < {_literal(cutoff, DELETED_AT_TYPE)}", commit_properties=CommitProperties(custom_metadata=metadata),
        )



# -- schema evolution ---------------------------------------------------------------------------------


def _settled_identity(handle: DeltaTable, raw: dict[str, Any] | None, where: str) -> dict[str, Any] | None:
    """The identity the table's columns have. Normally the recorded one; when the record holds a
    pending evolution (the process died before recording its identity), that evolution's identity
    if one of its commits (tagged with its token) followed the pending record, else the record as
    it was before. Only the commits since the pending record are read: normally one or two."""
    if raw is None or _PENDING not in raw:
        return raw
    try:
        token, after, record = str(raw[_PENDING]["token"]), int(raw[_PENDING]["after"]), dict(raw[_PENDING]["record"])
    except (KeyError, TypeError, ValueError) as exc:
        raise TargetError(f"target table {where}: its property {lake_evolution.IDENTITY_PROPERTY} holds a pending evolution sparkcdc cannot "
                          f"read ({exc!r}); remove the property (the table's columns are then matched by name) and restart "
                          f"the run") from exc
    since = handle.version() - after
    if since > 0 and any(commit.get(EVOLUTION_KEY) == token for commit in handle.history(since)):
        return record
    before = {key: value for key, value in raw.items() if key != _PENDING}
    return before or None


def _record_identity(handle: DeltaTable, record: Mapping[str, Any]) -> None:
    """The identity record as the table's configuration (a commit of its own: deltalake accepts a
    custom key only with ``raise_if_not_exists=False``, and no overwrite carries one)."""
    handle.alter.set_table_properties({lake_evolution.IDENTITY_PROPERTY: json.dumps(record)}, raise_if_not_exists=False)
    handle.update_incremental()


def _in_place(operation: Operation) -> bool:
    """What deltalake changes without rewriting the table: a column added without a value for the
    rows it holds, NOT NULL dropped."""
    return isinstance(operation, DropNotNull) or (isinstance(operation, AddColumn) and operation.column.fill is None)


def _carry_out(handle: DeltaTable, operations: Sequence[Operation], properties: CommitProperties, where: str) -> None:
    """The operations: in place where deltalake can (``alter.add_columns`` in one commit, then
    ``alter.drop_column_not_null``), else the whole table rewritten in one commit (deltalake 1.6
    renames, widens and drops no column: it has no type widening, and its column mapping, which
    renames and drops, writes values that read back as null)."""
    if not all(_in_place(operation) for operation in operations):
        _rewrite(handle, operations, properties, where)
        return
    added = [operation.column for operation in operations if isinstance(operation, AddColumn)]
    if added:
        fields = pa.schema([pa.field(c.name, DELTA_TYPES.of(c.arrow_type, c.name), nullable=True) for c in added])
        handle.alter.add_columns(list(DeltaSchema.from_arrow(fields).fields), commit_properties=properties)
    for operation in operations:
        if isinstance(operation, DropNotNull):
            handle.alter.drop_column_not_null(operation.name, commit_properties=properties)
    handle.update_incremental()


def _rewrite(handle: DeltaTable, operations: Sequence[Operation], properties: CommitProperties, where: str) -> None:
    """The table's rows written again in its evolved schema, as ONE overwrite commit (the schema
    and the rows change together or not at all), streamed batch by batch from the files the table
    had. The overwrite keeps the table's configuration and its ``txn`` actions, so the pipelines'
    positions survive it."""
    metadata = handle.metadata()
    mapping = (metadata.configuration or {}).get("delta.columnMapping.mode", "none")
    if mapping != "none":
        raise TargetError(f"target table {where} uses column mapping (delta.columnMapping.mode={mapping}), which deltalake "
                          "writes wrong: make the change to the mirror yourself (with Spark), then restart the run")
    schema, sources = lake_evolution.evolved_schema(_arrow_schema(handle), operations, DELTA_TYPES)
    named = {source: name for name, source in sources.items() if isinstance(source, str)}
    lost = [column for column in metadata.partition_columns if column not in named]
    if lost:
        raise TargetError(f"target table {where} is partitioned by column(s) {', '.join(lost)}, which the source dropped: "
                          "a Delta table keeps its partition columns; drop them yourself or repartition the mirror, then "
                          "restart the run")
    stored = [source for source in sources.values() if isinstance(source, str)]
    batches = lake_evolution.evolved_batches(handle.to_pyarrow_dataset().to_batches(columns=stored), schema, sources, where=where)
    write_deltalake(handle, pa.RecordBatchReader.from_batches(schema, batches), mode="overwrite", schema_mode="overwrite",
                    partition_by=[named[c] for c in metadata.partition_columns] or None, commit_properties=properties)
    handle.update_incremental()


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


def _reader(schema: pa.Schema, batches: Iterator[Any], convert: Callable[[Any], pa.RecordBatch]) -> pa.RecordBatchReader:
    """The staged batches, each converted to ``schema``, as a stream deltalake's merge reads."""
    return pa.RecordBatchReader.from_batches(schema, (convert(batch) for batch in batches))


def _arrow_schema(handle: DeltaTable) -> pa.Schema:
    return pa.schema(handle.schema().to_arrow())


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
