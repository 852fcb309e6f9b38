"""Apache Iceberg tables as the apply target, through pyiceberg (no Spark, no JVM).

Locations: ``iceberg:<catalog>`` loads the catalog ``<catalog>`` from pyiceberg's own configuration
(``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__<NAME>__<PROPERTY>`` environment variables, read when the
target first needs the catalog); ``iceberg+file:///abs/warehouse`` (or ``iceberg+file:relative/path``)
is a local catalog: pyiceberg's SQL catalog on SQLite, ``<warehouse>/sparkcdc-catalog.db``, with its
tables under ``<warehouse>``. The target table ``schema.table`` is the table ``table`` of the
namespace ``schema``; its tombstones live in the sibling table ``schema.table__sparkcdc_tombstones``
(key columns, ``__SEQUENCE``, ``__DELETED_AT``), created with the first delete.

Exactly once: everything a batch does to a table is ONE Iceberg transaction, one catalog commit:
the deletes, the append and the batch's position, a table property
``sparkcdc.batch.<sha1 of the pipeline id>`` = batch id (the pipeline id itself is stored next to it
as ``sparkcdc.pipeline.<sha1>``, for people reading the table's properties; a hash, because a
pipeline id may hold characters a property name should not). The position therefore commits
atomically with the data, and the catalog's compare-and-swap of the table's metadata (the SQL
catalog's ``UPDATE … WHERE metadata_location = <the one read>``; a REST catalog checks that the
branch still points at the snapshot the transaction started from) makes a second writer racing on
the same batch fail instead of applying it twice. A batch that changes no row still commits its
position (a metadata-only commit, no snapshot; on a REST catalog such a commit is not checked
against a racing writer: a pipeline is expected to have one writer at a time). Every snapshot a
batch makes carries ``sparkcdc.pipeline_id`` / ``sparkcdc.batch_id`` in its summary.

Tombstones are another table, so they cannot share that commit: they are written first, and only
what changes (a new key, or a newer sequence), so that a replay writes nothing; their snapshots are
tagged with the batch, and :meth:`IcebergTarget.tombstones` reads the tombstone table as of its newest
snapshot whose batch reached the main table (a tombstone write whose batch died before its main
commit is not trusted: the replay would otherwise drop its own deletes as "older than a recorded
delete"). Expired tombstones (``tombstone_retention``) are deleted by the next tombstone write and
ignored by reads.

Staging and commit (:class:`~.lake_target.LakeTarget`): executors write each partition's folded rows
as Parquet files under ``<warehouse>/_sparkcdc_staging/…`` (a named catalog: its ``warehouse``
property); the driver's commit reads the collected parts' files as Arrow tables and writes them in
one transaction. That write runs in the driver process, in pyiceberg (pyarrow): an Iceberg commit
is one compare-and-swap of the table's metadata by one writer, pyiceberg writes copy-on-write and
has no way to adopt data files other processes wrote into a merge, so the batch's rows (Arrow
buffers, not Python objects) and the data files its keys touch pass through that process.

How a batch is written (pyiceberg 0.12 writes copy-on-write only):

* SCD1: the batch's keys are deleted, then its surviving rows appended. Columns the batch did not
  carry (unchanged TOAST) and columns the table has beyond the pipeline's take the stored value,
  read for those keys before the write. A truncate or a whole-table image overwrites the table
  (files are dropped, not rewritten).
* SCD2: the versions the fold emits replace the rows with the same keys and ``__START_AT`` (a
  delete by those pairs, then an append); a truncate or an image reads the whole table and
  overwrites it, with the open versions the batch does not write closed.

Schema evolution (:mod:`..evolution`): ``prepare`` reads the table's schema and the source identity
in its properties (``sparkcdc.source.identity``: the source table, its relation id, key and each
column's ``attnum``), plans the changes, and commits them with the identity in ONE transaction:
pyiceberg's schema updates (``union_by_name`` adding a column, ``rename_column``,
``update_column`` for int to long, float to double and a decimal's precision, ``delete_column``,
``make_column_optional``) and, when an added column has a value for the rows the table holds, those
rows written again with it (Iceberg format 2 has no default for existing rows): read batch by
batch from the table as the transaction began and streamed into an overwrite of the same
transaction. A crash leaves the table as it was or evolved, never in between. Iceberg cannot
change a decimal's scale (such a change stops as unsafe), and NOT NULL is never set again
(``tighten=False``: pyiceberg does not make an optional column required, which the rows the table
holds may not satisfy), so an added column is optional and a column the source makes NOT NULL
stays optional.

Costs: every data file holding one of a batch's keys is read and rewritten (copy-on-write), so a
batch costs about the size of the files its keys touch, not of its rows; key filters are Iceberg
``In`` on the first key column, which prune files with the manifests' column bounds (keys that
arrive in key order touch few files); with a composite key (or SCD2's key plus ``__START_AT``) the
rows the coarse filter catches but the batch does not mean are appended again in the same
transaction, because an exact ``Or`` per key overflows pyarrow's recursion with thousands of keys. A
batch also makes two to four snapshots (delete, rewrite, append) in its one commit: expire old
snapshots with the usual Iceberg maintenance. Truncates and images rewrite the whole table.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import evolution as schema_evolution
from .. import vector
from ..errors import TargetError
from ..fold import END_AT, START_AT, Key
from ..spec import ResolvedSpec
from ..staged import DELETE, SEGMENT, UNCHANGED, StagedBatch
from ..target_column import TargetColumn
from . import lake_evolution
from .base import key_tuples
from .lake_commits import commit_tags, settled, tags_of
from .lake_staging import staged_batches
from .lake_target import LakeTarget, rows_by_key
from .library_errors import failing_as, reason
from .storage_types import StorageTypes
from .table_layout import TableLayout
from .table_names import DELETED_AT, DELETED_AT_TYPE, SEQUENCE, TOMBSTONE_SUFFIX, split_target

__all__ = ["IcebergTarget"]

log = logging.getLogger(__name__)

CATALOG_FILE = "sparkcdc-catalog.db"

#: Iceberg (format v2) has no unsigned or 8/16-bit integers (widened), no large or view variants,
#: microsecond timestamps and times only, and one zone for instants (UTC); any other type is refused.
ICEBERG_TYPES = StorageTypes("Iceberg", small_integers=False, fixed_size_binary=True, times=True, others=False)
#: What an Iceberg mirror widens: what Iceberg's own type promotion allows (int to long, float to
#: double, a decimal's precision; never a decimal's scale).
ICEBERG_RULES = lake_evolution.LakeTypeRules(ICEBERG_TYPES, rescale_decimals=False)
#: Rows read and appended at a time when a partitioned table's rows are rewritten (pyiceberg 0.12
#: streams a RecordBatchReader into unpartitioned tables only).
_REWRITE_CHUNK_BYTES = 128 * 1024 * 1024


def _pipeline_hash(pipeline_id: str) -> str:
    return hashlib.sha1(pipeline_id.encode("utf-8")).hexdigest()


def batch_property(pipeline_id: str) -> str:
    """The table property holding the newest batch of ``pipeline_id`` applied to the table."""
    return f"sparkcdc.batch.{_pipeline_hash(pipeline_id)}"


def pipeline_property(pipeline_id: str) -> str:
    return f"sparkcdc.pipeline.{_pipeline_hash(pipeline_id)}"


@dataclass
class _Table(TableLayout):
    """What the target knows of one target table: its layout and its identifiers."""

    identifier: tuple[str, str] = ("", "")
    tombstone_identifier: tuple[str, str] = ("", "")

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    def start_refs(self) -> list[str]:
        """``__START_AT`` as Iceberg references to primitive fields (a struct's fields by dotted name)."""
        if len(self.sequence_names) == 1:
            return [START_AT]
        return [f"{START_AT}.{name}" for name in self.sequence_names]


class IcebergTarget(LakeTarget[_Table]):
    """Iceberg tables of one catalog: ``iceberg:<catalog name>`` or ``iceberg+file:<warehouse path>``."""

    def __init__(self, location: str, *, catalog: Any | None = None) -> None:
        super().__init__()
        self.location = location
        self._catalog_name: str | None = None
        self._warehouse: str | None = None
        if location.startswith("iceberg+file:"):
            self._warehouse = _warehouse_path(location)
            self.description = f"Iceberg warehouse {self._warehouse}"
        elif location.startswith("iceberg:"):
            name = location[len("iceberg:"):]
            if not name or "/" in name:
                raise TargetError(f"an Iceberg location is iceberg:<catalog name> or iceberg+file:<warehouse path>, not {location!r}")
            self._catalog_name = name
            self.description = f"Iceberg catalog {name}"
        elif catalog is None:
            raise TargetError(f"an Iceberg location is iceberg:<catalog name> or iceberg+file:<warehouse path>, not {location!r}")
        else:
            self.description = f"Iceberg catalog {location}"
        self._catalog = catalog

    def close(self) -> None:
        super().close()
        engine = getattr(self._catalog, "engine", None)
        if engine is not None and self._warehouse is not None:
            engine.dispose()
        self._catalog = None

    # -- the catalog and tables -----------------------------------------------------------------------

    def catalog(self) -> Any:
        if self._catalog is not None:
            return self._catalog
        try:
            if self._warehouse is not None:
                from pyiceberg.catalog.sql import SqlCatalog

                os.makedirs(self._warehouse, exist_ok=True)
                self._catalog = SqlCatalog(
                    "sparkcdc", uri=f"sqlite:///{self._warehouse}/{CATALOG_FILE}", warehouse=f"file://{self._warehouse}",
                )
            else:
                from pyiceberg.catalog import load_catalog
                from pyiceberg.utils.config import Config

                assert self._catalog_name is not None
                # pyiceberg reads its environment once, at import: read it again now.
                configured = Config().get_catalog_config(self._catalog_name) or {}
                self._catalog = load_catalog(self._catalog_name, **{k: v for k, v in configured.items() if isinstance(v, str)})
        except Exception as exc:
            raise TargetError(f"opening the Iceberg catalog of {self.location} failed: {reason(exc)}") from exc
        return self._catalog

    def _load(self, identifier: tuple[str, str]) -> Any | None:
        """The table as of its newest commit, or None when the catalog has no such table."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog().load_table(identifier)
        except NoSuchTableError:
            return None

    @staticmethod
    def _identifiers(spec: ResolvedSpec) -> tuple[tuple[str, str], tuple[str, str]]:
        schema, name = split_target(spec.target)
        return (schema, name), (schema, name + TOMBSTONE_SUFFIX)

    def _where(self, spec: ResolvedSpec, *, tombstones: bool = False) -> str:
        return f"({'.'.join(self._identifiers(spec)[1 if tombstones else 0])}) at {self.location}"

    def _main(self, spec: ResolvedSpec) -> Any | None:
        return self._load(self._identifiers(spec)[0])

    # -- set-up -----------------------------------------------------------------------------------------

    def _layout(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> _Table:
        identifier, tombstone_identifier = self._identifiers(spec)
        return _Table.planned(spec, columns, sequence, ICEBERG_TYPES, required_sequence=True, identifier=identifier,
                              tombstone_identifier=tombstone_identifier)

    def _staging_root(self) -> str:
        """``iceberg+file:``: the warehouse; a named catalog: its ``warehouse`` property."""
        if self._warehouse is not None:
            return self._warehouse
        warehouse = getattr(self.catalog(), "properties", {}).get("warehouse")
        if not warehouse:
            raise TargetError(f"the Iceberg catalog of {self.location} has no warehouse property: "
                              "set one, apply_changes stages a batch's rows under it")
        return str(warehouse)

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn],
                policy: schema_evolution.EvolutionPolicy | None = None, *, relation_id: int = 0) -> schema_evolution.Evolution:
        """Create the target table (with its source identity, in one commit), or bring it to the
        source's shape under ``policy`` (see the module doc, Schema evolution); the key columns of
        its tombstone table follow a widened key."""
        policy = policy or schema_evolution.EvolutionPolicy()
        created = [c for c in columns if not (c.dropped and policy.dropped_columns == schema_evolution.DROP)]
        planned = self._layout(spec, created, sequence)  # a type Iceberg has no type for stops before anything is written
        identifier, tombstone_identifier = planned.identifier, planned.tombstone_identifier
        identifier_fields = list(spec.keys)
        if spec.scd_type == 2:
            identifier_fields += planned.start_refs()
        catalog = self.catalog()
        with failing_as(f"preparing target table {spec.target} at {self.location}"):
            catalog.create_namespace_if_not_exists(identifier[0])
            handle = self._load(identifier)
            if handle is None:
                record = lake_evolution.identity_record(spec, relation_id, {c.name: c.attnum for c in created})
                handle = self._create(identifier, planned.schema, identifier_fields, {lake_evolution.IDENTITY_PROPERTY: json.dumps(record)})
            evolution = self._evolve(spec, handle, columns, relation_id, policy)
            table = self._layout(spec, evolution.columns, sequence)
            tombstones = self._load(tombstone_identifier)
            if tombstones is not None:
                self._follow_keys(table, tombstones)
        self._register(spec, table, evolution.columns, sequence)
        return evolution

    def _evolve(self, spec: ResolvedSpec, handle: Any, columns: Sequence[TargetColumn], relation_id: int,
                policy: schema_evolution.EvolutionPolicy) -> schema_evolution.Evolution:
        """Plan the changes that bring the table to ``columns`` and commit them with the identity
        (and, for an added column with a value, the rows rewritten) in ONE transaction."""
        where = self._where(spec)
        record = lake_evolution.recorded_identity(handle.properties.get(lake_evolution.IDENTITY_PROPERTY), f"{spec.target} {where}")
        name = ".".join(self._identifiers(spec)[0])
        evolution = lake_evolution.plan_lake_evolution(
            spec, columns, handle.schema().as_arrow(), record, relation_id, policy, ICEBERG_RULES, where=where,
            continue_hint=lambda column: (
                f"change the column {column} of the mirror table {name} in {self.description} yourself (Iceberg widens int "
                f"to long, float to double and a decimal's precision, never a decimal's scale: for any other change rewrite "
                f"the table, for example with Spark's CREATE OR REPLACE TABLE {name} AS SELECT … CAST({column} AS …))"),
        )
        relation = relation_id or int((record or {}).get("relation", 0))
        wanted = lake_evolution.identity_record(spec, relation, evolution.identity)
        if not evolution.operations and wanted == record:
            return evolution
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Delete operation did not match")
            transaction = handle.transaction()
            if evolution.operations:
                _change_schema(transaction, evolution.operations)
                if any(isinstance(op, schema_evolution.AddColumn) and op.column.fill is not None for op in evolution.operations):
                    _rewrite_rows(handle, transaction, evolution, where)
            transaction.set_properties({lake_evolution.IDENTITY_PROPERTY: json.dumps(wanted)})
            transaction.commit_transaction()
        evolution.report(spec.target, where, spec.spec.qualified_table)
        return evolution

    def _follow_keys(self, table: _Table, tombstones: Any) -> None:
        """The tombstone table's key columns widened to the table's key types where a key's type was
        widened (decided from the two tables as they are, so that a crash between their commits is
        made good by the next prepare); a tombstone table without the expected columns is refused."""
        widened = lake_evolution.widened_tombstone_keys(table, tombstones.schema().as_arrow(), ICEBERG_TYPES, f"at {self.location}",
                                         rescale_decimals=False)
        if widened:
            with tombstones.update_schema() as update:
                for name, _, type_ in widened:
                    update.update_column(name, field_type=_iceberg_type(type_, name))
            log.info("tombstones of %s at %s: key column(s) %s widened", table.name, self.location, ", ".join(n for n, _, _ in widened))

    def _create(self, identifier: tuple[str, str], schema: pa.Schema, identifier_fields: list[str],
                properties: dict[str, str]) -> Any:
        """Create the table with its identifier fields and ``properties`` in one commit (another
        writer may have created it first: then that one)."""
        from pyiceberg.exceptions import TableAlreadyExistsError

        try:
            creation = self.catalog().create_table_transaction(identifier, schema=schema, properties=properties)
            with creation.update_schema() as update:
                update.set_identifier_fields(*identifier_fields)
            creation.commit_transaction()
        except TableAlreadyExistsError:
            pass
        handle = self._load(identifier)
        assert handle is not None
        return handle

    def _ensure(self, what: str, identifier: tuple[str, str], schema: pa.Schema, identifier_fields: list[str], hint: str) -> Any:
        """Create the table when missing; refuse an existing one without the expected columns."""
        handle = self._load(identifier)
        if handle is None:
            handle = self._create(identifier, schema, identifier_fields, {})
        existing = set(handle.schema().as_arrow().names)
        missing = [name for name in schema.names if name not in existing]
        if missing:
            raise TargetError(
                f"target table {what} at {self.location} exists without column(s) {', '.join(missing)}{hint}"
            )
        return handle

    # -- reads ------------------------------------------------------------------------------------------

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        """The table property of the pipeline: one catalog load of the table's metadata."""
        return super().applied_batch(spec, pipeline_id)

    def _applied(self, main: Any, pipeline_id: str) -> int | None:
        value = main.properties.get(batch_property(pipeline_id))
        return None if value is None else int(value)

    def _tombstone_rows(self, table: _Table, wanted: set[Key], cutoff: datetime) -> Iterable[Mapping[str, Any]]:
        """As of the newest tombstone snapshot whose batch reached the main table (normally the
        current one: one look at the main table's properties)."""
        from pyiceberg.expressions import And, GreaterThan

        handle = self._load(table.tombstone_identifier)
        if handle is None or handle.current_snapshot() is None:
            return []
        snapshot_id = self._settled(table, handle)
        if snapshot_id is None:
            return []
        rows: list[dict[str, Any]] = handle.scan(
            row_filter=And(_coarse(table.keys, wanted), GreaterThan(DELETED_AT, cutoff)),
            selected_fields=(*table.keys, SEQUENCE), snapshot_id=snapshot_id,
        ).to_arrow().to_pylist()
        return rows

    def _settled(self, table: _Table, handle: Any) -> int | None:
        """The id of the tombstone table's newest settled snapshot (:func:`.lake_commits.settled`)."""
        from pyiceberg.table.snapshots import ancestors_of

        main = self._load(table.identifier)
        snapshot = settled(ancestors_of(handle.current_snapshot(), handle.metadata), lambda s: tags_of(s.summary),
                           lambda pipeline: None if main is None else self._applied(main, pipeline))
        return None if snapshot is None else int(snapshot.snapshot_id)

    def _open_rows(self, table: _Table, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        """One scan, pruned by the key filter."""
        from pyiceberg.expressions import And, IsNull

        handle = self._load(table.identifier)
        if handle is None or handle.current_snapshot() is None:
            return []
        rows: list[dict[str, Any]] = handle.scan(
            row_filter=And(_coarse(table.keys, wanted), IsNull(END_AT)), selected_fields=(*table.columns, START_AT),
        ).to_arrow().to_pylist()
        return rows

    def _key_rows(self, table: _Table, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        handle = self._load(table.identifier)
        return [] if handle is None else _scan_keys(handle, table.keys, wanted, whole=False)

    # -- the write --------------------------------------------------------------------------------------

    def _write(self, table: _Table, main: Any, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        tags = commit_tags(pipeline_id, str(batch_id))
        with warnings.catch_warnings():
            # "Delete operation did not match any records": a key the table does not hold.
            warnings.filterwarnings("ignore", message="Delete operation did not match")
            transaction = main.transaction()
            if staged.spec.scd_type == 1:
                self._write_scd1(table, main, transaction, staged, tags)
            else:
                self._write_scd2(table, main, transaction, staged, tags)
            transaction.set_properties({batch_property(pipeline_id): str(batch_id), pipeline_property(pipeline_id): pipeline_id})
            transaction.commit_transaction()

    def _write_scd1(self, table: _Table, main: Any, transaction: Any, staged: StagedBatch, tags: dict[str, str]) -> None:
        from pyiceberg.expressions import AlwaysTrue

        if len(staged.segments) != 1:
            raise TargetError(f"SCD1 changes of {staged.spec.target} have {len(staged.segments)} segments, expected one")
        segment = staged.segments[0]
        replace = segment.truncate_at is not None or segment.replace_at is not None
        if not staged.rows and not replace:
            return
        schema = main.schema().as_arrow()
        extras = [name for name in schema.names if name not in set(table.columns)]
        folded = _staged_rows(staged)
        written = folded.filter(pc.invert(folded.column(DELETE))) if folded is not None else None
        arrays: dict[str, Any] = {}
        if written is not None:
            # Stored values: of the columns the batch did not carry, and of the columns beyond the
            # pipeline's. After a truncate the table holds nothing to keep.
            kept = {name: vector.has_name(written.column(UNCHANGED), name) for name in staged.kept}
            index = None
            if segment.truncate_at is None and (extras or kept):
                lookup = written if extras else written.filter(pa.array(np.logical_or.reduce(list(kept.values()))))
                stored = _stored_table(main, table.keys, key_tuples(lookup.select(table.keys)), whole=replace)
                if stored is not None and stored.num_rows:
                    index = vector.match_rows(written, stored, table.keys)
            for name in table.columns:
                column = written.column(name)
                if name in kept and index is not None:
                    column = pc.if_else(pa.array(kept[name]), vector.cast_column(stored.column(name).take(index), column.type), column)
                arrays[name] = column
            for name in extras:
                arrays[name] = stored.column(name).take(index) if index is not None else pa.nulls(written.num_rows)
        data = _arrow_table(schema, arrays, 0 if written is None else written.num_rows)
        if replace:
            if data.num_rows:
                transaction.overwrite(data, AlwaysTrue(), snapshot_properties=tags)
            else:
                transaction.delete(AlwaysTrue(), snapshot_properties=tags)
            return
        if folded is not None:
            _delete_exactly(transaction, main, table.keys, key_tuples(folded.select(table.keys)), tags)
        if data.num_rows:
            transaction.append(data, snapshot_properties=tags)

    def _write_scd2(self, table: _Table, main: Any, transaction: Any, staged: StagedBatch, tags: dict[str, str]) -> None:
        from pyiceberg.expressions import AlwaysTrue

        # The open versions no written version replaces are closed: at the image's sequence when the
        # batch is an image (its first segment emits every open version it keeps), else at the
        # first truncate's (the versions the fold did not see were open then).
        close_at = staged.segments[0].replace_at
        if close_at is None:
            close_at = next((s.truncate_at for s in staged.segments if s.truncate_at is not None), None)
        folded = _staged_rows(staged)
        if folded is None and close_at is None:
            return
        schema = main.schema().as_arrow()
        extras = [name for name in schema.names if name not in {*table.columns, START_AT, END_AT}]
        matched = [*table.keys, START_AT]
        arrays: dict[str, Any] = {}
        if folded is not None:
            if len(staged.segments) > 1:
                # Later segments win for the same (key, __START_AT), as when the segments apply one by one.
                folded = folded.take(pc.sort_indices(folded, [(SEGMENT, "ascending")]))
                folded = folded.filter(pa.array(vector.last_of_each(folded, matched)))
            arrays = {name: folded.column(name) for name in table.columns}
            for name in (START_AT, END_AT):
                arrays[name] = table.stored_sequence(folded.column(name), schema.field(name).type)
        versions = _arrow_table(schema, arrays, 0 if folded is None else folded.num_rows, without=extras)
        refs = [*table.keys, *table.start_refs()]
        if close_at is None:
            stored = _scan_pairs(main, table, versions) if extras else None
            index = vector.match_rows(versions, stored, matched) if stored is not None and stored.num_rows else None
            data = _with_extras(schema, versions, extras, stored, index)
            _delete_exactly(transaction, main, refs, _pairs(versions, matched), tags)
            if data.num_rows:
                transaction.append(data, snapshot_properties=tags)
            return
        # The whole table is rewritten: rows the versions replace go, open ones left are closed.
        existing = main.scan().to_arrow() if main.current_snapshot() is not None else schema.empty_table()
        existing = existing.select(schema.names).cast(schema)
        index = vector.match_rows(versions, existing, matched) if extras and existing.num_rows else None
        data = _with_extras(schema, versions, extras, existing, index)
        if existing.num_rows and versions.num_rows:
            replaced = vector.match_rows(existing, versions, matched).is_valid()
            existing = existing.filter(pc.invert(replaced))
        open_ = pc.is_null(existing[END_AT])
        closed_now = existing.filter(open_)
        closed_now = closed_now.set_column(
            closed_now.schema.get_field_index(END_AT), schema.field(END_AT),
            pa.array([table.sequence_value(close_at)] * closed_now.num_rows, type=schema.field(END_AT).type),
        )
        result = pa.concat_tables([existing.filter(pc.invert(open_)), closed_now, data])
        if result.num_rows:
            transaction.overwrite(result, AlwaysTrue(), snapshot_properties=tags)
        else:
            transaction.delete(AlwaysTrue(), snapshot_properties=tags)

    def _record_tombstones(self, table: _Table, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        """Write the batch's deletes that are new (or newer than the recorded ones) and drop the
        expired ones: one transaction tagged with the batch, nothing when the batch is replayed."""
        from pyiceberg.expressions import LessThan

        staged_rows = pa.Table.from_batches(list(staged_batches(staged, "tombstones", [*table.keys, SEQUENCE])))
        sequences = vector.flat_columns(staged_rows, [SEQUENCE])
        tombstones = dict(zip(key_tuples(staged_rows.select(table.keys)),
                              zip(*(column.to_pylist() for column in sequences), strict=True), strict=True))
        tags = commit_tags(pipeline_id, str(batch_id))
        handle = self._load(table.tombstone_identifier)
        if handle is None:
            handle = self._ensure(f"{table.name} tombstones", table.tombstone_identifier, table.tombstone_schema(), table.keys, "")
        recorded: dict[Key, tuple[Any, ...]] = {}
        if handle.current_snapshot() is not None:
            rows = handle.scan(row_filter=_coarse(table.keys, tombstones), selected_fields=(*table.keys, SEQUENCE)).to_arrow()
            recorded = rows_by_key(rows.to_pylist(), table.keys, set(tombstones), lambda row: table.sequence_tuple(row[SEQUENCE]))
        newer = {key: seq for key, seq in tombstones.items() if key not in recorded or tuple(seq) > recorded[key]}
        now = datetime.now(UTC)
        cutoff = table.tombstone_cutoff(now)
        expired = handle.current_snapshot() is not None and handle.scan(
            row_filter=LessThan(DELETED_AT, cutoff), selected_fields=(DELETED_AT,), limit=1,
        ).to_arrow().num_rows > 0
        if not newer and not expired:
            return
        schema = handle.schema().as_arrow()
        items = list(newer.items())
        arrays: dict[str, Any] = {name: pa.array([key[i] for key, _ in items]) for i, name in enumerate(table.keys)}
        arrays[SEQUENCE] = pa.array([table.sequence_value(seq) for _, seq in items])
        arrays[DELETED_AT] = pa.array([now] * len(items), type=DELETED_AT_TYPE)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Delete operation did not match")
            transaction = handle.transaction()
            if expired:
                transaction.delete(LessThan(DELETED_AT, cutoff), snapshot_properties=tags)
            if newer:
                # Re-appended survivors of the coarse delete must not bring back the expired ones.
                _delete_exactly(transaction, handle, table.keys, newer, tags,
                                keep=lambda rows: pc.greater_equal(rows[DELETED_AT], pa.scalar(cutoff, DELETED_AT_TYPE)))
                transaction.append(_arrow_table(schema, arrays, len(items)), snapshot_properties=tags)
            transaction.commit_transaction()


# -- schema evolution ---------------------------------------------------------------------------------


class _SchemaChanges:
    """Evolution operations as pyiceberg schema updates of one transaction. An update names
    columns as the schema it starts from has them, so a renamed column is tracked back to that
    name; an operation an update cannot combine with what it already holds (on a column it adds,
    deleting a column it changed, adding a name it deletes) starts another update of the same
    transaction (each update is a schema version in the table's metadata)."""

    def __init__(self, transaction: Any) -> None:
        self.transaction = transaction
        self._begin()

    def _begin(self) -> None:
        self.update = self.transaction.update_schema()
        #: Current name -> the name in the update's starting schema (None: added by the update).
        self.base: dict[str, str | None] = {f.name: f.name for f in self.transaction.table_metadata.schema().fields}
        self.start = set(self.base)
        self.changed: set[str] = set()
        self.deleted: set[str] = set()

    def _next(self) -> None:
        self.update.commit()
        self._begin()

    def _base(self, name: str, *, unchanged: bool = False) -> str:
        """The starting-schema name of the column now ``name``, in an update that can take one
        more operation on it (``unchanged``: one that has not changed it)."""
        base = self.base.get(name)
        if base is None or (unchanged and base in self.changed):
            self._next()
            base = name
        return base

    def apply(self, operation: schema_evolution.Operation) -> None:
        if isinstance(operation, schema_evolution.DropColumn):
            base = self._base(operation.name, unchanged=True)
            self.update.delete_column(base)
            del self.base[operation.name]
            self.deleted.add(base)
        elif isinstance(operation, schema_evolution.RenameColumn):
            base = self._base(operation.old)
            if operation.new in self.deleted:
                self._next()
                base = operation.old
            self.update.rename_column(base, operation.new)
            del self.base[operation.old]
            self.base[operation.new] = base
            self.changed.add(base)
        elif isinstance(operation, schema_evolution.WidenColumn):
            base = self._base(operation.name)
            self.update.update_column(base, field_type=_iceberg_type(ICEBERG_TYPES.of(operation.column.arrow_type, base), base))
            self.changed.add(base)
        elif isinstance(operation, schema_evolution.DropNotNull):
            base = self._base(operation.name)
            self.update.make_column_optional(base)
            self.changed.add(base)
        elif isinstance(operation, schema_evolution.AddColumn):
            column = operation.column
            if column.name in self.start:  # union_by_name would find the starting schema's column of that name
                self._next()
            # pyiceberg turns the Arrow type into Iceberg's (union_by_name adds a column it does not find).
            self.update.union_by_name(pa.schema([pa.field(column.name, ICEBERG_TYPES.of(column.arrow_type, column.name))]))
            self.base[column.name] = None
        else:
            raise TargetError(f"an Iceberg target does not carry out {operation} before a batch")

    def commit(self) -> None:
        self.update.commit()


def _change_schema(transaction: Any, operations: Sequence[schema_evolution.Operation]) -> None:
    """The operations, in order, as schema updates of ``transaction``."""
    changes = _SchemaChanges(transaction)
    for operation in operations:
        changes.apply(operation)
    changes.commit()


def _iceberg_type(arrow_type: pa.DataType, name: str) -> Any:
    """The Iceberg type a column is widened to (the types :data:`ICEBERG_RULES` widens to)."""
    from pyiceberg.types import DecimalType, DoubleType, IntegerType, LongType

    if pa.types.is_int32(arrow_type):
        return IntegerType()
    if pa.types.is_int64(arrow_type):
        return LongType()
    if pa.types.is_float64(arrow_type):
        return DoubleType()
    if pa.types.is_decimal(arrow_type):
        return DecimalType(arrow_type.precision, arrow_type.scale)
    raise TargetError(f"column {name}: an Iceberg column is not widened to {arrow_type}")


def _rewrite_rows(main: Any, transaction: Any, evolution: schema_evolution.Evolution, where: str) -> None:
    """Every row of the table written again with the values of the added columns (Iceberg format
    2 has no default for the rows a table holds), in ``transaction``, after its schema updates: the
    schema, the rows and the identity commit together or not at all. Rows are read batch by batch
    from the table as the transaction began and streamed into the overwrite (a partitioned table:
    appended in chunks), never the whole table at once."""
    from pyiceberg.expressions import AlwaysTrue

    if main.current_snapshot() is None:
        return
    schema = transaction.table_metadata.schema().as_arrow()
    evolved, sources = lake_evolution.evolved_schema(main.schema().as_arrow(), evolution.operations, ICEBERG_TYPES)
    if evolved.names != schema.names:
        raise TargetError(f"target table {where}: the evolved schema has columns {schema.names}, expected {evolved.names}")
    tags = {"sparkcdc.evolution": "; ".join(evolution.changes)}
    batches = lake_evolution.evolved_batches(main.scan().to_arrow_batch_reader(), schema, sources, where=where)
    if main.spec().is_unpartitioned():
        transaction.overwrite(pa.RecordBatchReader.from_batches(schema, batches), AlwaysTrue(), snapshot_properties=tags)
        return
    transaction.delete(AlwaysTrue(), snapshot_properties=tags)
    chunk: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        chunk.append(batch)
        size += batch.nbytes
        if size >= _REWRITE_CHUNK_BYTES:
            transaction.append(pa.Table.from_batches(chunk, schema=schema), snapshot_properties=tags)
            chunk, size = [], 0
    if chunk:
        transaction.append(pa.Table.from_batches(chunk, schema=schema), snapshot_properties=tags)


# -- helpers ------------------------------------------------------------------------------------------


def _warehouse_path(location: str) -> str:
    rest = location[len("iceberg+file:"):]
    if rest.startswith("//"):
        parts = urlsplit("file:" + rest)
        if parts.netloc not in ("", "localhost"):
            raise TargetError(f"an iceberg+file location names a local directory, not the host {parts.netloc!r}: {location!r}")
        path = unquote(parts.path)
    else:
        path = rest
    if not path:
        raise TargetError(f"an iceberg+file location needs a warehouse directory: {location!r}")
    return os.path.abspath(os.path.expanduser(path))


def _coarse(names: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> Any:
    """An Iceberg filter true for every row whose ``names`` equal one of ``rows`` (exactly those when
    there is one name): ``In`` on the first column only. An exact filter over several columns would
    be an ``Or`` per row, and pyarrow's expression canonicalisation flattens such a tree into a chain
    it then walks recursively: thousands of keys overflowed the stack of the thread Spark runs
    ``foreachBatch`` in. Readers filter the rows again in memory; deletes go through
    :func:`_delete_exactly`."""
    from pyiceberg.expressions import AlwaysFalse, EqualTo, In

    values = {row[0] for row in rows}
    if not values:
        return AlwaysFalse()
    return In(names[0], values) if len(values) > 1 else EqualTo(names[0], next(iter(values)))


def _delete_exactly(
    transaction: Any, handle: Any, names: Sequence[str], rows: Iterable[tuple[Any, ...]], tags: dict[str, str],
    keep: Callable[[pa.Table], Any] | None = None,
) -> None:
    """Delete, in ``transaction``, exactly the rows whose ``names`` equal one of ``rows``. With several
    names: the :func:`_coarse` delete, then the rows it caught but should not have (and that ``keep``
    keeps) appended again, in the same transaction. ``handle``: the table as the transaction began."""
    wanted = set(rows)
    if not wanted:
        return
    coarse = _coarse(names, wanted)
    if len(names) == 1:
        transaction.delete(coarse, snapshot_properties=tags)
        return
    if handle.current_snapshot() is None:
        return
    caught = handle.scan(row_filter=coarse).to_arrow()
    if caught.num_rows == 0:
        return
    columns = [_values(caught, name) for name in names]
    meant = pa.array([tuple(column[i] for column in columns) in wanted for i in range(caught.num_rows)], type=pa.bool_())
    survivors = caught.filter(pc.invert(meant))
    if keep is not None and survivors.num_rows:
        survivors = survivors.filter(keep(survivors))
    transaction.delete(coarse, snapshot_properties=tags)
    if survivors.num_rows:
        schema = handle.schema().as_arrow()
        transaction.append(survivors.select(schema.names).cast(schema), snapshot_properties=tags)


def _values(rows: pa.Table, name: str) -> list[Any]:
    """A column's values, ``struct.field`` naming a struct's field (as :meth:`_Table.start_refs` does)."""
    if name in rows.column_names:
        return rows[name].to_pylist()
    parent, _, child = name.partition(".")
    return pc.struct_field(rows[parent], child).to_pylist()


def _scan_keys(handle: Any, keys: Sequence[str], wanted: Iterable[Key], *, whole: bool) -> list[dict[str, Any]]:
    """The table's rows, at least those of ``wanted`` (``whole``: the whole table rather than filtered)."""
    stored = _stored_table(handle, keys, list(wanted), whole=whole)
    return [] if stored is None else stored.to_pylist()


def _stored_table(handle: Any, keys: Sequence[str], wanted: list[Key], *, whole: bool) -> pa.Table | None:
    """The table's rows, at least those of ``wanted`` (``whole``: the whole table rather than
    filtered); None when the table has no snapshot."""
    if handle.current_snapshot() is None:
        return None
    scan = handle.scan() if whole else handle.scan(row_filter=_coarse(keys, wanted))
    rows: pa.Table = scan.to_arrow()
    return rows


def _scan_pairs(handle: Any, table: _Table, versions: pa.Table) -> pa.Table | None:
    """The stored rows of the versions' (keys, ``__START_AT``), at least."""
    if handle.current_snapshot() is None:
        return None
    rows: pa.Table = handle.scan(row_filter=_coarse([*table.keys, *table.start_refs()], _pairs(versions, [*table.keys, START_AT]))).to_arrow()
    return rows


def _pairs(rows: pa.Table, names: Sequence[str]) -> list[tuple[Any, ...]]:
    """The values of ``names`` (a struct's by field) of each row, as tuples: what pyiceberg's filters take."""
    return list(zip(*(column.to_pylist() for column in vector.flat_columns(rows, names)), strict=True))


def _staged_rows(staged: StagedBatch) -> pa.Table | None:
    """The batch's staged rows as one table (pyiceberg writes tables), None when none were staged."""
    batches = list(staged_batches(staged, "rows"))
    return pa.Table.from_batches(batches) if batches else None


def _with_extras(schema: pa.Schema, rows: pa.Table, extras: list[str], stored: pa.Table | None, index: pa.Array | None) -> pa.Table:
    """``rows`` with the table's columns beyond the pipeline's: the stored row's values (``index``
    into ``stored``), null where there is none."""
    if not extras:
        return rows
    arrays: dict[str, Any] = {name: rows.column(name) for name in rows.column_names}
    for name in extras:
        arrays[name] = stored.column(name).take(index) if stored is not None and index is not None else pa.nulls(rows.num_rows)
    return _arrow_table(schema, arrays, rows.num_rows)


def _arrow_table(schema: pa.Schema, arrays: Mapping[str, Any], rows: int, *, without: Sequence[str] = ()) -> pa.Table:
    """A table of the Iceberg table's Arrow schema (its types, its required fields) from ``arrays``
    by name (a missing one is null); ``without``: fields left out."""
    fields = [f for f in schema if f.name not in set(without)]
    columns = [vector.cast_column(arrays[f.name], f.type) if f.name in arrays else pa.nulls(rows, f.type) for f in fields]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))
