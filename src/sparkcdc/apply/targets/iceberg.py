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

How a batch is written (pyiceberg 0.12 writes copy-on-write only):

* SCD1: the batch's keys are deleted, then its surviving rows appended. Columns the batch did not
  carry (unchanged TOAST) and columns the table has beyond the pipeline's take the stored value,
  read for those keys before the write. A truncate or a whole-table image overwrites the table
  (files are dropped, not rewritten).
* SCD2: the versions the fold emits replace the rows with the same keys and ``__START_AT`` (a
  delete by those pairs, then an append); a truncate or an image reads the whole table and
  overwrites it, with the open versions the batch does not write closed.

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
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import TargetError
from ..fold import END_AT, START_AT, Key, TableChanges
from ..spec import ResolvedSpec
from . import shared
from .base import TargetColumn
from .shared import DELETED_AT, SEQUENCE, LakeTarget, TableLayout, rows_by_key

__all__ = ["IcebergTarget"]

CATALOG_FILE = "sparkcdc-catalog.db"

#: Iceberg (format v2) has no unsigned or 8/16-bit integers (widened), no large or view variants,
#: microsecond timestamps and times only, and one zone for instants (UTC); any other type is refused.
ICEBERG_TYPES = shared.StorageTypes("Iceberg", small_integers=False, fixed_size_binary=True, times=True, others=False)


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
            raise TargetError(f"opening the Iceberg catalog of {self.location} failed: {shared.reason(exc)}") from exc
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
        schema, name = shared.split_target(spec.target)
        return (schema, name), (schema, name + shared.TOMBSTONE_SUFFIX)

    def _where(self, spec: ResolvedSpec, *, tombstones: bool = False) -> str:
        return f"({'.'.join(self._identifiers(spec)[1 if tombstones else 0])}) at {self.location}"

    def _main(self, spec: ResolvedSpec) -> Any | None:
        return self._load(self._identifiers(spec)[0])

    # -- set-up -----------------------------------------------------------------------------------------

    def prepare(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        identifier, tombstone_identifier = self._identifiers(spec)
        table = _Table.planned(spec, columns, sequence, ICEBERG_TYPES, required_sequence=True, identifier=identifier,
                               tombstone_identifier=tombstone_identifier)
        identifier_fields = list(spec.keys)
        if spec.scd_type == 2:
            identifier_fields += table.start_refs()
        catalog = self.catalog()
        with shared.failing_as(f"preparing target table {spec.target} at {self.location}"):
            catalog.create_namespace_if_not_exists(identifier[0])
            self._ensure(table.name, identifier, table.schema, identifier_fields, f" (stored_as_scd_type={spec.scd_type})")
            if catalog.table_exists(tombstone_identifier):
                self._ensure(f"{table.name} tombstones", tombstone_identifier, table.tombstone_schema(), table.keys, "")
        self._tables[spec.target] = table

    def _ensure(self, what: str, identifier: tuple[str, str], schema: pa.Schema, identifier_fields: list[str], hint: str) -> Any:
        """Create the table when missing; refuse an existing one without the expected columns."""
        from pyiceberg.exceptions import TableAlreadyExistsError

        catalog = self.catalog()
        handle = self._load(identifier)
        if handle is None:
            try:
                creation = catalog.create_table_transaction(identifier, schema=schema)
                with creation.update_schema() as update:
                    update.set_identifier_fields(*identifier_fields)
                creation.commit_transaction()
            except TableAlreadyExistsError:
                pass  # another writer created it first
            handle = self._load(identifier)
            assert handle is not None
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
        """The id of the tombstone table's newest settled snapshot (:func:`.shared.settled`)."""
        from pyiceberg.table.snapshots import ancestors_of

        main = self._load(table.identifier)
        snapshot = shared.settled(ancestors_of(handle.current_snapshot(), handle.metadata), lambda s: shared.tags_of(s.summary),
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

    def _write(self, table: _Table, main: Any, changes: TableChanges, pipeline_id: str, batch_id: int) -> None:
        tags = shared.commit_tags(pipeline_id, str(batch_id))
        with warnings.catch_warnings():
            # "Delete operation did not match any records": a key the table does not hold.
            warnings.filterwarnings("ignore", message="Delete operation did not match")
            transaction = main.transaction()
            if changes.spec.scd_type == 1:
                self._write_scd1(table, main, transaction, changes, tags)
            else:
                self._write_scd2(table, main, transaction, changes, tags)
            transaction.set_properties({batch_property(pipeline_id): str(batch_id), pipeline_property(pipeline_id): pipeline_id})
            transaction.commit_transaction()

    def _write_scd1(self, table: _Table, main: Any, transaction: Any, changes: TableChanges, tags: dict[str, str]) -> None:
        from pyiceberg.expressions import AlwaysTrue

        if len(changes.segments) != 1:
            raise TargetError(f"SCD1 changes of {changes.spec.target} have {len(changes.segments)} segments, expected one")
        segment = changes.segments[0]
        replace = segment.truncate_at is not None or segment.replace_at is not None
        if not segment.final and not replace:
            return
        schema = main.schema().as_arrow()
        extras = [name for name in schema.names if name not in set(table.columns)]
        written = [(key, values, kept) for key, (delete, values, kept) in segment.final.items() if not delete]
        # Stored values: of the columns the batch did not carry, and of the columns beyond the pipeline's.
        # After a truncate the table holds nothing to keep.
        lookup = [key for key, _, kept in written if kept or extras] if segment.truncate_at is None else []
        stored = _stored_rows(main, table.keys, lookup, whole=replace) if lookup else {}
        rows: list[dict[str, Any]] = []
        for key, values, kept in written:
            old = stored.get(key)
            row = dict(zip(table.columns, values, strict=True))
            for name in kept:
                row[name] = None if old is None else old[name]
            for name in extras:
                row[name] = None if old is None else old[name]
            rows.append(row)
        data = _arrow_rows(schema, rows)
        if replace:
            if data.num_rows:
                transaction.overwrite(data, AlwaysTrue(), snapshot_properties=tags)
            else:
                transaction.delete(AlwaysTrue(), snapshot_properties=tags)
            return
        _delete_exactly(transaction, main, table.keys, segment.final, tags)
        if data.num_rows:
            transaction.append(data, snapshot_properties=tags)

    def _write_scd2(self, table: _Table, main: Any, transaction: Any, changes: TableChanges, tags: dict[str, str]) -> None:
        from pyiceberg.expressions import AlwaysTrue

        # The open versions no written version replaces are closed: at the image's sequence when the
        # batch is an image (its first segment emits every open version it keeps), else at the
        # first truncate's (the versions the fold did not see were open then).
        close_at = changes.segments[0].replace_at
        if close_at is None:
            close_at = next((s.truncate_at for s in changes.segments if s.truncate_at is not None), None)
        # Later segments win for the same (key, __START_AT), as when the segments apply one by one.
        versions: dict[tuple[Any, ...], tuple[list[Any], tuple[Any, ...], tuple[Any, ...] | None]] = {}
        key_index = [table.columns.index(k) for k in table.keys]
        for segment in changes.segments:
            for values, start, end in segment.versions:
                versions[(*(values[i] for i in key_index), *start)] = (values, start, end)
        if not versions and close_at is None:
            return
        schema = main.schema().as_arrow()
        extras = [name for name in schema.names if name not in {*table.columns, START_AT, END_AT}]
        refs = [*table.keys, *table.start_refs()]
        if close_at is None:
            stored = _stored_versions(main, table, list(versions)) if extras else {}
        else:
            existing = main.scan().to_arrow() if main.current_snapshot() is not None else schema.empty_table()
            stored = _versions_of(existing, table) if extras else {}
        rows = []
        for match, (values, start, end) in versions.items():
            row = dict(zip(table.columns, values, strict=True))
            row[START_AT] = table.sequence_value(start)
            row[END_AT] = None if end is None else table.sequence_value(end)
            old = stored.get(match)
            for name in extras:
                row[name] = None if old is None else old[name]
            rows.append(row)
        data = _arrow_rows(schema, rows)
        if close_at is None:
            _delete_exactly(transaction, main, refs, versions, tags)
            if data.num_rows:
                transaction.append(data, snapshot_properties=tags)
            return
        # The whole table is rewritten: rows the versions replace go, open ones left are closed.
        existing = existing.select(schema.names).cast(schema)
        kept = existing.filter(pc.invert(_in_set(existing, table, set(versions)))) if existing.num_rows else existing
        open_ = pc.is_null(kept[END_AT])
        closed_now = kept.filter(open_)
        closed_now = closed_now.set_column(
            closed_now.schema.get_field_index(END_AT), schema.field(END_AT),
            pa.array([table.sequence_value(close_at)] * closed_now.num_rows, type=schema.field(END_AT).type),
        )
        result = pa.concat_tables([kept.filter(pc.invert(open_)), closed_now, data])
        if result.num_rows:
            transaction.overwrite(result, AlwaysTrue(), snapshot_properties=tags)
        else:
            transaction.delete(AlwaysTrue(), snapshot_properties=tags)

    def _record_tombstones(self, table: _Table, tombstones: dict[Key, tuple[Any, ...]], pipeline_id: str, batch_id: int) -> None:
        """Write the batch's deletes that are new (or newer than the recorded ones) and drop the
        expired ones: one transaction tagged with the batch, nothing when the batch is replayed."""
        from pyiceberg.expressions import LessThan

        tags = shared.commit_tags(pipeline_id, str(batch_id))
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
        rows = [{**dict(zip(table.keys, key, strict=True)), SEQUENCE: table.sequence_value(seq), DELETED_AT: now}
                for key, seq in newer.items()]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Delete operation did not match")
            transaction = handle.transaction()
            if expired:
                transaction.delete(LessThan(DELETED_AT, cutoff), snapshot_properties=tags)
            if newer:
                # Re-appended survivors of the coarse delete must not bring back the expired ones.
                _delete_exactly(transaction, handle, table.keys, newer, tags,
                                keep=lambda rows: pc.greater_equal(rows[DELETED_AT], pa.scalar(cutoff, shared.DELETED_AT_TYPE)))
                transaction.append(_arrow_rows(schema, rows), snapshot_properties=tags)
            transaction.commit_transaction()

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
    if handle.current_snapshot() is None:
        return []
    rows: list[dict[str, Any]] = (handle.scan() if whole else handle.scan(row_filter=_coarse(keys, wanted))).to_arrow().to_pylist()
    return rows


def _stored_rows(handle: Any, keys: list[str], wanted: list[Key], *, whole: bool) -> dict[Key, Mapping[str, Any]]:
    """The stored rows of ``wanted`` by key (``whole``: read the whole table rather than filter)."""
    return rows_by_key(_scan_keys(handle, keys, wanted, whole=whole), keys, set(wanted), lambda row: row)


def _stored_versions(handle: Any, table: _Table, wanted: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    if handle.current_snapshot() is None:
        return {}
    rows = handle.scan(row_filter=_coarse([*table.keys, *table.start_refs()], wanted)).to_arrow()
    return _versions_of(rows, table)


def _versions_of(rows: pa.Table, table: _Table) -> dict[tuple[Any, ...], dict[str, Any]]:
    found = {}
    for row in rows.to_pylist():
        found[(*(row[k] for k in table.keys), *table.sequence_tuple(row[START_AT]))] = row
    return found


def _in_set(rows: pa.Table, table: _Table, pairs: set[tuple[Any, ...]]) -> pa.Array:
    """Whether each row's (keys, ``__START_AT``) is among ``pairs``."""
    columns = [rows[k].to_pylist() for k in table.keys]
    starts = rows[START_AT].to_pylist()
    flags = [
        (*(column[i] for column in columns), *table.sequence_tuple(starts[i])) in pairs for i in range(rows.num_rows)
    ]
    return pa.array(flags, type=pa.bool_())


def _arrow_rows(schema: pa.Schema, rows: list[dict[str, Any]]) -> pa.Table:
    """``rows`` as a table of the Iceberg table's Arrow schema (its types, its required fields)."""
    arrays = []
    for f in schema:
        values = [row.get(f.name) for row in rows]
        try:
            arrays.append(pa.array(values, type=f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            arrays.append(pa.array(values).cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
