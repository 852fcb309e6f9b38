"""What the apply targets share: where a target table lives, how sequences and tombstones are
stored, and, for the lake formats (Delta Lake, Iceberg), the one protocol their reads and writes
follow.

Written once here because the copies had started to differ:

* a target table's layout (:class:`TableLayout`): its key and data columns, its sequence (one
  column as it is; several as a struct of them, compared field by field), its tombstone schema
  (key columns, ``__SEQUENCE``, ``__DELETED_AT``);
* how Arrow types become a lake format's types (:class:`StorageTypes`);
* the settled-tombstone rule (:func:`settled`): tombstones cannot commit with the table's changes
  (they are another table), so a tombstone write whose batch has not reached the main table is not
  trusted; readers take the tombstone table as of its newest write whose batch did commit;
* :class:`PreparedTables`: the tables a target prepared, and ``apply`` as the target's own stage
  and commit;
* :class:`LakeTarget`: a lake target's reads, its staging (Parquet files) and its commit, each
  turning a library's error into a :class:`TargetError` that names the table and where it is, and
  the commit doing the exactly-once protocol (skip an applied batch, tombstones first, then the
  table with the batch's position);
* schema evolution on a lake (:mod:`..evolution`): what a lake mirror can widen
  (:class:`LakeTypeRules`), the source identity it records in the table's own properties
  (:data:`IDENTITY_PROPERTY`), the plan from the table's Arrow schema (:func:`plan_lake_evolution`),
  and the rows of a table rewritten to its evolved schema, batch by batch (:func:`evolved_schema`,
  :func:`evolved_batches`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Self, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from .. import vector
from ..errors import TargetError
from ..evolution import (
    SAME,
    UNSAFE,
    WIDER,
    AddColumn,
    DropColumn,
    DropNotNull,
    Evolution,
    EvolutionPolicy,
    Operation,
    RenameColumn,
    SchemaChangeError,
    StoredColumn,
    WidenColumn,
    plan_evolution,
)
from ..fold import END_AT, START_AT, Key, TableChanges, staged_form
from ..spec import ResolvedSpec
from ..staged import Folded, StagedBatch, StagedPart, pipeline_hash
from .base import Keys, TargetColumn, already_applied, key_tuples

__all__ = [
    "BATCH_KEY",
    "DELETED_AT",
    "DELETED_AT_TYPE",
    "IDENTITY_PROPERTY",
    "PIPELINE_KEY",
    "SEQUENCE",
    "STAGING_DIR",
    "TOMBSTONE_SUFFIX",
    "Filled",
    "LakeTarget",
    "LakeTypeRules",
    "PreparedTables",
    "StorageTypes",
    "TableLayout",
    "newest_open_versions",
    "reason",
    "remove_staging",
    "rows_by_key",
    "commit_tags",
    "evolved_batches",
    "evolved_schema",
    "identity_record",
    "lake_type_verdict",
    "plan_lake_evolution",
    "recorded_identity",
    "filesystem_of",
    "settled",
    "split_target",
    "staged_batches",
    "staging_dir",
    "tags_of",
    "write_staged",
]

#: Tombstone table columns (besides the key columns): the delete's sequence and when it was recorded.
SEQUENCE = "__SEQUENCE"
DELETED_AT = "__DELETED_AT"
DELETED_AT_TYPE = pa.timestamp("us", tz="UTC")
#: A target table's tombstones, where they are a table beside it (PostgreSQL, Iceberg): its name and this.
TOMBSTONE_SUFFIX = "__sparkcdc_tombstones"
#: The batch's position as a lake commit carries it (Delta commit info, Iceberg snapshot summary).
PIPELINE_KEY = "sparkcdc.pipeline_id"
BATCH_KEY = "sparkcdc.batch_id"

log = logging.getLogger(__name__)

V = TypeVar("V")
C = TypeVar("C")
P = TypeVar("P")


def split_target(target: str) -> tuple[str, str]:
    """``schema.table`` as (schema, table); a bare table name is in ``public``, as in PostgreSQL."""
    schema, _, name = target.rpartition(".")
    return schema or "public", name


# -- types --------------------------------------------------------------------------------------------


#: An unsigned integer type's values fit in the next wider signed type.
_WIDER: dict[pa.DataType, pa.DataType] = {
    pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.uint64(): pa.decimal128(20, 0),
}


@dataclass(frozen=True)
class StorageTypes:
    """How a lake format stores Arrow types. Both formats lack unsigned integers (widened to the
    next signed type the format has), large and view variants, precisions beyond microseconds,
    zones other than UTC and decimals beyond 38 digits; they differ in the rest, which the flags say."""

    store: str  # the format's name, for errors
    small_integers: bool  # int8 and int16 are stored as they are (else as int32)
    fixed_size_binary: bool  # fixed-size binary is stored as it is (else as binary)
    times: bool  # times are stored (as microseconds); else refused
    #: Types none of the rules name: kept when True (but durations and intervals are refused),
    #: refused when False (only the known primitives are kept).
    others: bool

    def of(self, arrow_type: pa.DataType, name: str) -> pa.DataType:
        """The Arrow type the format stores for column ``name`` of ``arrow_type``."""
        t = arrow_type
        if pa.types.is_dictionary(t):
            return self.of(t.value_type, name)
        if t in _WIDER:
            return self.of(_WIDER[t], name)
        if (pa.types.is_int8(t) or pa.types.is_int16(t)) and not self.small_integers:
            return pa.int32()
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return pa.string()
        if pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or (
                pa.types.is_fixed_size_binary(t) and not self.fixed_size_binary):
            return pa.binary()
        if pa.types.is_float16(t):
            return pa.float32()
        if pa.types.is_date64(t):
            return pa.date32()
        if pa.types.is_timestamp(t):
            return pa.timestamp("us", tz="UTC" if t.tz else None)
        if pa.types.is_time(t) and self.times:
            return pa.time64("us")
        if pa.types.is_decimal(t):
            if t.precision > 38:
                raise TargetError(f"column {name}: {self.store} stores decimals of at most 38 digits, not {t}")
            return pa.decimal128(t.precision, t.scale)
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
            return pa.list_(self.of(t.value_type, name))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, self.of(f.type, f"{name}.{f.name}"), f.nullable) for f in t])
        if pa.types.is_map(t):
            return pa.map_(self.of(t.key_type, name), self.of(t.item_type, name))
        if self._kept(t):
            return t
        raise TargetError(f"column {name}: {self.store} has no type for Arrow {t} (exclude it with except_column_list)")

    def _kept(self, t: pa.DataType) -> bool:
        if self.others:
            return not (pa.types.is_time(t) or pa.types.is_duration(t) or pa.types.is_interval(t))
        return (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)
                or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t)
                or pa.types.is_date32(t))


# -- schema evolution (the lake formats) ----------------------------------------------------------------

#: The table property (Delta: the table's configuration) where a lake target records the source
#: identity of its table: ``{"source": "<schema.table>", "relation": <pg_class oid>, "keys": [...],
#: "columns": {"<name>": <attnum>}}`` (see :mod:`..evolution`). A table without it (made by an
#: older sparkcdc, or by its owner) is matched by name.
IDENTITY_PROPERTY = "sparkcdc.source.identity"


def identity_record(spec: ResolvedSpec, relation: int, columns: Mapping[str, int]) -> dict[str, Any]:
    """The identity a lake target records for ``spec``'s table (:data:`IDENTITY_PROPERTY`)."""
    return {"source": spec.spec.qualified_table, "relation": int(relation), "keys": list(spec.keys),
            "columns": {name: int(attnum) for name, attnum in columns.items()}}


def recorded_identity(text: str | None, where: str) -> dict[str, Any] | None:
    """The identity record of a table's :data:`IDENTITY_PROPERTY` (None: the table has none). A
    value that is not one stops: matching columns by a wrong identity would rename or drop the
    wrong ones."""
    if text is None:
        return None
    try:
        record = json.loads(text)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        for name, attnum in record.get("columns", {}).items():
            if not isinstance(name, str) or not isinstance(attnum, int):
                raise ValueError(f"column {name!r}: {attnum!r} is not an attnum")
    except ValueError as exc:
        raise TargetError(f"target table {where}: its property {IDENTITY_PROPERTY} is not the source identity sparkcdc "
                          f"records ({exc}); remove the property (the table's columns are then matched by name) and "
                          f"restart the run") from exc
    return record


def _comparable(t: pa.DataType) -> pa.DataType:
    """``t`` without what a format's own choices change in nested types: the names and nullability
    of list elements, map entries and struct fields."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_comparable(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(_comparable(t.key_type), _comparable(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _comparable(f.type)) for f in t])
    return t


def lake_type_verdict(old: pa.DataType, new: pa.DataType, *, rescale_decimals: bool = True) -> str:
    """Whether a lake column stored as ``old`` (as the format stores it) can become ``new`` keeping
    every value: the same type (nested names and nullability aside), a wider one (an integer of more
    bits, ``float`` to ``double``, a decimal with at least as many digits on both sides of the point;
    with ``rescale_decimals`` False, only of the same scale: Iceberg cannot change a decimal's
    scale), or unsafe."""
    if _comparable(old) == _comparable(new):
        return SAME
    if pa.types.is_signed_integer(old) and pa.types.is_signed_integer(new):
        return WIDER if new.bit_width > old.bit_width else UNSAFE
    if pa.types.is_float32(old) and pa.types.is_float64(new):
        return WIDER
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        digits = new.precision - new.scale >= old.precision - old.scale
        scale = new.scale == old.scale or (rescale_decimals and new.scale > old.scale)
        return WIDER if digits and scale else UNSAFE
    return UNSAFE


@dataclass(frozen=True)
class LakeTypeRules:
    """What a lake mirror can widen a column to (:class:`..evolution.TypeRules`): the stored Arrow
    type against the one the format would store for the source's (:class:`StorageTypes`), both as
    the format stores them (a ``large_string`` Iceberg reads back is a ``string``)."""

    types: StorageTypes
    rescale_decimals: bool = True

    def compare(self, stored: pa.DataType, column: TargetColumn) -> str:
        return lake_type_verdict(self._stored(stored), self.types.of(column.arrow_type, column.name),
                                 rescale_decimals=self.rescale_decimals)

    def name(self, stored: pa.DataType) -> str:
        return str(self._stored(stored))

    def wanted(self, column: TargetColumn) -> str:
        return str(self.types.of(column.arrow_type, column.name))

    def _stored(self, stored: pa.DataType) -> pa.DataType:
        try:
            return self.types.of(stored, "")
        except TargetError:  # a type this pipeline would not write (the owner's): compared as it is
            return stored


def plan_lake_evolution(
    spec: ResolvedSpec, columns: Sequence[TargetColumn], schema: pa.Schema, record: Mapping[str, Any] | None,
    relation_id: int, policy: EvolutionPolicy, rules: LakeTypeRules, *, where: str, continue_hint: Callable[[str], str],
) -> Evolution:
    """The plan that brings a lake table of Arrow ``schema`` (its recorded identity ``record``) to
    the source's ``columns``. NOT NULL is never set again on a lake (``tighten=False``): neither
    format makes a column required again without rewriting the table. A table that lacks the
    history columns of an SCD2 spec, or a key column, is refused: it is not the mirror's shape."""
    names = set(schema.names)
    if spec.scd_type == 2 and not {START_AT, END_AT} <= names:
        raise TargetError(f"target table {spec.target} {where} exists without column(s) {START_AT}, {END_AT} "
                          f"(stored_as_scd_type=2): it is not an SCD2 history")
    identity: Mapping[str, int] = (record or {}).get("columns", {})
    stored = [StoredColumn(f.name, f.type, f.nullable, int(identity.get(f.name, 0))) for f in schema if f.name not in (START_AT, END_AT)]
    recorded_relation = int((record or {}).get("relation", 0))
    same_relation = record is None or not relation_id or recorded_relation in (0, relation_id)
    stored_keys = record.get("keys") if record is not None else None
    evolution = plan_evolution(spec.target, spec.spec.qualified_table, stored, columns, spec.keys, policy, rules, tighten=False,
                               same_relation=same_relation, stored_keys=stored_keys, continue_hint=continue_hint)
    added_keys = [op.column.name for op in evolution.operations if isinstance(op, AddColumn) and op.column.name in spec.keys]
    if added_keys:
        raise SchemaChangeError(
            f"target table {spec.target} {where} exists without the key column(s) {', '.join(added_keys)} of the source table "
            f"{spec.spec.qualified_table}: a mirror's rows are matched by their key, which its existing rows do not have. "
            f"To go on: add the column(s) to the mirror with their values yourself, or drop the mirror table and restart the run",
            target=spec.target, table=spec.spec.qualified_table)
    return evolution


@dataclass(frozen=True)
class Filled:
    """An added column's value in every row the table holds (its ``fill``)."""

    value: Any


def evolved_schema(stored: pa.Schema, operations: Sequence[Operation], types: StorageTypes,
                   ) -> tuple[pa.Schema, dict[str, str | Filled]]:
    """The Arrow schema of a table of ``stored`` schema after ``operations``, and where each of its
    columns comes from: the stored column of that name (before renames), or the added column's
    fill. Added columns go last, nullable (as in PostgreSQL); widened ones take the format's type of
    the source's; the rest keep their field (and its metadata)."""
    fields: dict[str, pa.Field] = {f.name: f for f in stored}
    sources: dict[str, str | Filled] = {f.name: f.name for f in stored}
    for operation in operations:
        if isinstance(operation, DropColumn):
            del fields[operation.name], sources[operation.name]
        elif isinstance(operation, RenameColumn):
            fields = {operation.new if n == operation.old else n: f.with_name(operation.new) if n == operation.old else f
                      for n, f in fields.items()}
            sources = {operation.new if n == operation.old else n: s for n, s in sources.items()}
        elif isinstance(operation, WidenColumn):
            fields[operation.name] = fields[operation.name].with_type(types.of(operation.column.arrow_type, operation.name))
        elif isinstance(operation, DropNotNull):
            fields[operation.name] = fields[operation.name].with_nullable(True)
        elif isinstance(operation, AddColumn):
            column = operation.column
            fields[column.name] = pa.field(column.name, types.of(column.arrow_type, column.name), nullable=True)
            sources[column.name] = Filled(column.fill)
        else:
            raise TargetError(f"a lake target does not carry out {operation} before a batch")
    return pa.schema(list(fields.values())), sources


def evolved_batches(batches: Iterable[pa.RecordBatch], schema: pa.Schema, sources: Mapping[str, str | Filled], *,
                    where: str) -> Iterator[pa.RecordBatch]:
    """``batches`` of a table's stored rows as rows of its evolved ``schema`` (:func:`evolved_schema`),
    one at a time: a renamed column's values under its new name, a widened one's cast, an added
    one's fill."""
    fills: dict[str, pa.Scalar] = {}
    for field in schema:
        source = sources[field.name]
        if isinstance(source, Filled):
            try:
                fills[field.name] = pa.scalar(source.value, type=field.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
                raise TargetError(f"target table {where}: the value {source.value!r} the rows of the added column "
                                  f"{field.name} take is not a {field.type}: {exc}") from exc
    for batch in batches:
        arrays = []
        for field in schema:
            source = sources[field.name]
            if isinstance(source, Filled):
                arrays.append(pa.repeat(fills[field.name], batch.num_rows))
            else:
                arrays.append(vector.cast_column(batch.column(source), field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)



# -- a target table's layout --------------------------------------------------------------------------


@dataclass
class TableLayout:
    """What a lake target knows of one target table; the formats add where it lives."""

    spec: ResolvedSpec
    schema: pa.Schema  # the data columns (SCD2: and __START_AT, __END_AT) the table must have
    columns: list[str]  # the pipeline's data columns, in the table's order
    keys: list[str]
    key_types: list[pa.DataType]
    sequence_names: list[str]
    sequence_type: pa.DataType

    @classmethod
    def planned(
        cls, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn], types: StorageTypes,
        *, required_sequence: bool, **place: Any,
    ) -> Self:
        """The layout of ``spec``'s table in a format storing ``types``; ``required_sequence``: a
        struct sequence's fields are required (Iceberg identifier fields must be); ``place``: the
        format's own fields."""
        by_name = {c.name: c for c in columns}
        missing_keys = [k for k in spec.keys if k not in by_name]
        if missing_keys:
            raise TargetError(f"target table {spec.target}: key column(s) {', '.join(missing_keys)} are not among its columns")
        if not sequence:
            raise TargetError(f"target table {spec.target}: no sequence_by column")
        if len(sequence) == 1:
            sequence_type = types.of(sequence[0].arrow_type, sequence[0].name)
        else:  # a struct of them, with their names
            sequence_type = pa.struct([
                pa.field(c.name, types.of(c.arrow_type, c.name), nullable=not required_sequence) for c in sequence
            ])
        fields = [
            pa.field(c.name, types.of(c.arrow_type, c.name), nullable=c.nullable and c.name not in spec.keys) for c in columns
        ]
        if spec.scd_type == 2:
            fields += [pa.field(START_AT, sequence_type, nullable=False), pa.field(END_AT, sequence_type)]
        return cls(
            spec=spec, schema=pa.schema(fields), columns=[c.name for c in columns], keys=list(spec.keys),
            key_types=[types.of(by_name[k].arrow_type, k) for k in spec.keys], sequence_names=[c.name for c in sequence],
            sequence_type=sequence_type, **place,
        )

    @property
    def others(self) -> list[str]:
        """The data columns that are not keys."""
        return [c for c in self.columns if c not in self.keys]

    def sequence_value(self, sequence: Sequence[Any]) -> Any:
        """A sequence as stored: one column's value, or a dict of the struct's fields."""
        if len(self.sequence_names) == 1:
            return sequence[0]
        return dict(zip(self.sequence_names, sequence, strict=True))

    def sequence_tuple(self, value: Any) -> tuple[Any, ...]:
        """A stored sequence as the fold compares it: a tuple."""
        if len(self.sequence_names) == 1:
            return (value,)
        return tuple(value[name] for name in self.sequence_names)

    def stored_sequence(self, column: Any, type_: pa.DataType) -> Any:
        """A staged sequence column (a struct of the sequence's fields) as the table stores it, of
        its ``type_``: one column's values, or the struct."""
        if len(self.sequence_names) == 1:
            column = pc.struct_field(column, 0)
        return vector.cast_column(column, type_)

    def tombstone_schema(self) -> pa.Schema:
        """Key columns, ``__SEQUENCE`` and ``__DELETED_AT``, all required."""
        return pa.schema(
            [pa.field(name, type_, nullable=False) for name, type_ in zip(self.keys, self.key_types, strict=True)]
            + [pa.field(SEQUENCE, self.sequence_type, nullable=False), pa.field(DELETED_AT, DELETED_AT_TYPE, nullable=False)]
        )

    def tombstone_cutoff(self, now: datetime | None = None) -> datetime:
        """Tombstones recorded before this are expired (``tombstone_retention``)."""
        return (now or datetime.now(UTC)) - self.spec.spec.tombstone_retention


# -- stored rows ---------------------------------------------------------------------------------------


def rows_by_key(
    rows: Iterable[Mapping[str, Any]], keys: Sequence[str], wanted: set[Key], value: Callable[[Mapping[str, Any]], V],
) -> dict[Key, V]:
    """``value`` of each row whose key is among ``wanted`` (the stores' key filters are coarse:
    they may let other rows through); the last row of a key wins."""
    found: dict[Key, V] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key in wanted:
            found[key] = value(row)
    return found


def newest_open_versions(
    rows: Iterable[Mapping[str, Any]], keys: Sequence[str], columns: Sequence[str], wanted: set[Key],
    start_of: Callable[[Any], tuple[Any, ...]],
) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
    """``open_versions``' answer from stored open rows (a key filter may let others through): per
    wanted key, the values of ``columns`` and the start of its newest open version."""
    found: dict[Key, tuple[list[Any], tuple[Any, ...]]] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key not in wanted:
            continue
        start = start_of(row[START_AT])
        if key not in found or found[key][1] < start:
            found[key] = ([row[c] for c in columns], start)
    return found


def commit_tags(pipeline_id: str, batch_id: V) -> dict[str, str | V]:
    """A commit's batch position, as the lake commit carries it (commit info, snapshot summary)."""
    return {PIPELINE_KEY: pipeline_id, BATCH_KEY: batch_id}


def tags_of(properties: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """A commit's (pipeline id, batch id) from its :func:`commit_tags`, None where it has none."""
    if properties is None:
        return None, None
    return properties.get(PIPELINE_KEY), properties.get(BATCH_KEY)


def settled(
    commits: Iterable[C], tags: Callable[[C], tuple[Any, Any]], applied: Callable[[str], int | None],
) -> C | None:
    """The newest of a tombstone table's ``commits`` (newest first) that is not a write of a batch
    still missing from the main table: such a write is redone when the batch is replayed, and
    trusting it would make the replay drop its own deletes as "older than a recorded delete".
    ``tags``: a commit's (pipeline id, batch id), None where untagged; ``applied``: the main
    table's newest batch of a pipeline (asked once per pipeline)."""
    done: dict[str, int | None] = {}
    for commit in commits:
        pipeline, batch = tags(commit)
        if pipeline is not None and batch is not None:
            if pipeline not in done:
                done[pipeline] = applied(pipeline)
            newest = done[pipeline]
            if newest is None or newest < int(batch):
                continue
        return commit
    return None


# -- errors ---------------------------------------------------------------------------------------------

_BACKTRACE_LINE: Callable[[str], re.Match[str] | None] = re.compile(r"^\s*\d+: ").match


def reason(exc: BaseException) -> str:
    """An error's message on one line, without the Rust backtrace deltalake adds when
    ``RUST_BACKTRACE`` is set, and at most 1000 characters."""
    lines: list[str] = []
    for line in str(exc).splitlines():
        if _BACKTRACE_LINE(line):
            break
        if line.strip():
            lines.append(line.strip())
    text = " ".join(lines) or type(exc).__name__
    return text if len(text) <= 1000 else text[:1000] + "…"


@contextmanager
def failing_as(what: str) -> Iterator[None]:
    """A library's error in the block as a :class:`TargetError` "``what`` failed: reason"."""
    try:
        yield
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"{what} failed: {reason(exc)}") from exc


# -- staging files (the lake targets) --------------------------------------------------------------------

#: Under a lake target's root: ``<pipeline>/<table>/<batch>/<tag>/{rows,tombstones}.parquet``.
STAGING_DIR = "_sparkcdc_staging"


def staging_dir(root: str, pipeline_id: str, target: str, batch_id: int | None = None) -> str:
    """Where a table's staged batches (one of them with ``batch_id``) of a pipeline are, under ``root``."""
    base = f"{root.rstrip('/')}/{STAGING_DIR}/{pipeline_hash(pipeline_id)}/{pipeline_hash(target)}"
    return base if batch_id is None else f"{base}/{batch_id:020d}"


def filesystem_of(location: str) -> tuple[Any, str]:
    """pyarrow's filesystem of ``location`` (a path or URI) and the path in it."""
    return _filesystem(location)


def _filesystem(location: str) -> tuple[Any, str]:
    from pyarrow import fs

    if "://" not in location:
        location = os.path.abspath(location)
    return fs.FileSystem.from_uri(location)


def write_staged(root: str, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
    """Stage ``folded`` as Parquet files under ``root`` (storage every node sees: the target's)."""
    import pyarrow.parquet as pq

    directory = f"{staging_dir(root, pipeline_id, folded.spec.target, batch_id)}/{tag}"
    files: dict[str, str | None] = {"rows": None, "tombstones": None}
    with failing_as(f"staging batch {batch_id} of {folded.spec.target} at {directory}"):
        filesystem, path = _filesystem(directory)
        filesystem.create_dir(path, recursive=True)
        for what, rows in (("rows", folded.rows), ("tombstones", folded.tombstones)):
            if rows.num_rows:
                pq.write_table(rows, f"{path}/{what}.parquet", filesystem=filesystem, compression="lz4")
                files[what] = f"{directory}/{what}.parquet"
    return StagedPart.of(folded, tag, rows_file=files["rows"], tombstones_file=files["tombstones"])


def staged_batches(staged: StagedBatch, what: str, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The staged ``what`` ("rows" or "tombstones") of the batch's collected parts, batch by batch."""
    import pyarrow.dataset as ds

    files = staged.files(what)
    if not files:
        return iter(())
    filesystem, _ = _filesystem(files[0])
    dataset = ds.dataset([_filesystem(f)[1] for f in files], format="parquet", filesystem=filesystem)
    return iter(dataset.to_batches(columns=list(columns) if columns is not None else None))


def remove_staging(root: str, pipeline_id: str, target: str, batch_id: int) -> None:
    """Remove a table's staged batches of the pipeline up to ``batch_id``, every tag's: those of
    task attempts the driver did not collect, and those a crash left behind."""
    from pyarrow import fs

    try:
        filesystem, path = _filesystem(staging_dir(root, pipeline_id, target))
        for info in filesystem.get_file_info(fs.FileSelector(path, allow_not_found=True)):
            if info.type == fs.FileType.Directory and info.base_name.isdigit() and int(info.base_name) <= batch_id:
                filesystem.delete_dir(info.path)
    except OSError as exc:  # the next commit tries again
        log.warning("could not remove the staging of %s up to batch %d under %s: %s", target, batch_id, root, exc)


# -- the targets' protocol --------------------------------------------------------------------------------

class PreparedTables(Generic[P]):
    """What a target knows of the tables it prepared (``P``), by target table name, and the
    in-process :meth:`apply`: the target's own stage and commit of a fold made here."""

    def __init__(self) -> None:
        self._tables: dict[str, P] = {}
        self._event_schemas: dict[str, pa.Schema] = {}

    def _register(self, spec: ResolvedSpec, table: P, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        self._tables[spec.target] = table
        names = dict.fromkeys([c.name for c in columns])
        self._event_schemas[spec.target] = pa.schema(
            [pa.field(c.name, c.arrow_type) for c in columns] + [pa.field(c.name, c.arrow_type) for c in sequence if c.name not in names])

    def _table(self, spec: ResolvedSpec) -> P:
        try:
            return self._tables[spec.target]
        except KeyError:
            raise TargetError(f"target table {spec.target} was not prepared") from None

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        raise NotImplementedError

    def commit(self, staged: StagedBatch, *, pipeline_id: str, batch_id: int) -> bool:
        raise NotImplementedError

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        raise NotImplementedError

    def apply(self, changes: TableChanges, *, pipeline_id: str, batch_id: int) -> bool:
        """Stage the fold under a tag of its own and commit it; a batch already applied is not even staged."""
        spec = changes.spec
        self._table(spec)
        if already_applied(self.applied_batch(spec, pipeline_id), batch_id, image=changes.is_image):
            return False
        folded = staged_form(changes, self._event_schemas[spec.target])
        part = self.stage(folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=uuid.uuid4().hex)
        return self.commit(StagedBatch(spec, (part,)), pipeline_id=pipeline_id, batch_id=batch_id)


T = TypeVar("T", bound=TableLayout)


class LakeTarget(PreparedTables[T]):
    """A lake format's target (Delta Lake, Iceberg): the reads, the staging and the commit every
    lake target does the same way; the format says how it reads, writes and where a table is (the
    hooks).

    Executors stage a batch's folded rows as Parquet files under the target's root (storage every
    node sees, as the target itself); the commit reads them back as Arrow and hands them to the
    format's library, so the final merge runs in the driver process inside that library's engine
    (deltalake's Rust, pyiceberg's pyarrow): neither library can commit one transaction from the
    files many processes wrote. The rows stay Arrow buffers on the way, never a Python object each.
    Staging files on object storage are read and written through pyarrow's filesystems, which take
    their credentials from the environment (not from a Delta ``storage_options``)."""

    description: str
    location: str

    def close(self) -> None:
        self._tables.clear()

    def open_options(self) -> dict[str, Any]:
        return {}

    def attach(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> None:
        self._register(spec, self._layout(spec, columns, sequence), columns, sequence)

    # -- hooks ------------------------------------------------------------------------------------------

    def _layout(self, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn]) -> T:
        """The table's layout in the format (no I/O)."""
        raise NotImplementedError

    def _staging_root(self) -> str:
        """Where staging files go: a directory or URI every executor and the driver see."""
        raise NotImplementedError

    def _where(self, spec: ResolvedSpec, *, tombstones: bool = False) -> str:
        """Where the table (or its tombstones) lives, for errors: ``at <path>``."""
        raise NotImplementedError

    def _main(self, spec: ResolvedSpec) -> Any | None:
        """The main table as of its newest commit, or None when there is none."""
        raise NotImplementedError

    def _applied(self, main: Any, pipeline_id: str) -> int | None:
        """The newest batch of ``pipeline_id`` the main table ``main`` holds."""
        raise NotImplementedError

    def _tombstone_rows(self, table: T, wanted: set[Key], cutoff: datetime) -> Iterable[Mapping[str, Any]]:
        """Settled tombstones recorded after ``cutoff`` (at least those of ``wanted``)."""
        raise NotImplementedError

    def _may_have_tombstones(self, table: T) -> bool:
        """False when the table certainly has no tombstone (a cheap look, no key read)."""
        return True

    def _open_rows(self, table: T, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        """Rows with a null ``__END_AT`` (at least those of ``wanted``): data columns and ``__START_AT``."""
        raise NotImplementedError

    def _key_rows(self, table: T, wanted: set[Key]) -> Iterable[Mapping[str, Any]]:
        """Rows of the table (at least those of ``wanted``) with their data columns."""
        raise NotImplementedError

    def _record_tombstones(self, table: T, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        """Record a batch's staged deletes (committed before the table's changes, tagged with the batch)."""
        raise NotImplementedError

    def _write(self, table: T, main: Any, staged: StagedBatch, pipeline_id: str, batch_id: int) -> None:
        """Write the staged changes and the batch's position in one commit of the main table."""
        raise NotImplementedError

    # -- reads ------------------------------------------------------------------------------------------

    def applied_batch(self, spec: ResolvedSpec, pipeline_id: str) -> int | None:
        with failing_as(f"reading the applied batch of {spec.target} {self._where(spec)}"):
            main = self._main(spec)
            return None if main is None else self._applied(main, pipeline_id)

    def tombstones(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[Any, ...]]:
        """Retained tombstones of ``keys``, as of the tombstone table's newest settled write."""
        def read(table: T, wanted: set[Key]) -> dict[Key, tuple[Any, ...]]:
            rows = self._tombstone_rows(table, wanted, table.tombstone_cutoff())
            return rows_by_key(rows, table.keys, wanted, lambda row: table.sequence_tuple(row[SEQUENCE]))

        if not self._may_have_tombstones(self._table(spec)):
            return {}  # before turning the keys into tuples: an image's task holds a whole chunk's
        return self._of_keys(spec, keys, "the tombstones", read, tombstones=True)

    def open_versions(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
        """SCD2: the newest row of each of ``keys`` whose ``__END_AT`` is null."""
        def read(table: T, wanted: set[Key]) -> dict[Key, tuple[list[Any], tuple[Any, ...]]]:
            return newest_open_versions(self._open_rows(table, wanted), table.keys, table.columns, wanted, table.sequence_tuple)

        return self._of_keys(spec, keys, "the open versions", read)

    def stored_rows(self, spec: ResolvedSpec, keys: Keys) -> dict[Key, list[Any]]:
        """SCD1: the stored row of each of ``keys``."""
        def read(table: T, wanted: set[Key]) -> dict[Key, list[Any]]:
            return rows_by_key(self._key_rows(table, wanted), table.keys, wanted, lambda row: [row[c] for c in table.columns])

        return self._of_keys(spec, keys, "stored rows", read)

    def _of_keys(
        self, spec: ResolvedSpec, keys: Keys, what: str, read: Callable[[T, set[Key]], dict[Key, V]],
        *, tombstones: bool = False,
    ) -> dict[Key, V]:
        """``read`` of the prepared table and the wanted keys (nothing when none is), its errors
        as a :class:`TargetError` naming ``what`` it read and where."""
        table = self._table(spec)
        wanted = set(key_tuples(keys))
        if not wanted:
            return {}
        with failing_as(f"reading {what} of {spec.target} {self._where(spec, tombstones=tombstones)}"):
            return read(table, wanted)

    # -- staging and the commit ------------------------------------------------------------------------------

    def stage(self, folded: Folded, *, pipeline_id: str, batch_id: int, tag: str) -> StagedPart:
        self._table(folded.spec)
        return write_staged(self._staging_root(), folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=tag)

    def commit(self, staged: StagedBatch, *, pipeline_id: str, batch_id: int) -> bool:
        """Skip a batch already applied; else its tombstones first, then the table's changes and
        the batch's position in one commit. The batch's staging goes either way."""
        spec = staged.spec
        table = self._table(spec)
        where = self._where(spec)
        try:
            with failing_as(f"applying batch {batch_id} to {spec.target} {where}"):
                main = self._main(spec)
                if main is None:
                    raise TargetError(f"target table {spec.target} {where} is gone (it was prepared)")
                if already_applied(self._applied(main, pipeline_id), batch_id, image=staged.is_image):
                    return False
                if staged.tombstones:
                    with failing_as(f"applying batch {batch_id} to {spec.target} {self._where(spec, tombstones=True)}"):
                        self._record_tombstones(table, staged, pipeline_id, batch_id)
                self._write(table, main, staged, pipeline_id, batch_id)
            return True
        finally:
            remove_staging(self._staging_root(), pipeline_id, spec.target, batch_id)


def widened_tombstone_keys(table: TableLayout, stored: pa.Schema, types: StorageTypes, where: str, *,
                           rescale_decimals: bool = True) -> list[tuple[str, pa.DataType, pa.DataType]]:
    """The key columns of a tombstone table (of Arrow schema ``stored``) to widen to ``table``'s key
    types, as (name, stored type, new type): a key's type widened in the source. A tombstone table
    without the columns it must have is refused (``where`` says where it is)."""
    missing = [name for name in table.tombstone_schema().names if name not in stored.names]
    if missing:
        raise TargetError(f"target table {table.spec.target} tombstones {where} exists without column(s) {', '.join(missing)}")
    return [(name, stored.field(name).type, type_) for name, type_ in zip(table.keys, table.key_types, strict=True)
            if lake_type_verdict(types.of(stored.field(name).type, name), type_, rescale_decimals=rescale_decimals) == WIDER]
