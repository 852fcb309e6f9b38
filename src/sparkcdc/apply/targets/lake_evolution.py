"""Schema evolution on a lake (:mod:`..evolution` for Delta Lake and Iceberg): what a lake mirror can
widen (:class:`LakeTypeRules`), the source identity it records in the table's own properties
(:data:`IDENTITY_PROPERTY`), the plan from the table's Arrow schema (:func:`plan_lake_evolution`),
the rows of a table rewritten to its evolved schema, batch by batch (:func:`evolved_schema`,
:func:`evolved_batches`), and the tombstone table's keys widened with the source's
(:func:`widened_tombstone_keys`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

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
from ..fold import END_AT, START_AT
from ..spec import ResolvedSpec
from ..target_column import TargetColumn
from .storage_types import StorageTypes
from .table_layout import TableLayout

__all__ = [
    "Filled",
    "IDENTITY_PROPERTY",
    "LakeTypeRules",
    "evolved_batches",
    "evolved_schema",
    "identity_record",
    "lake_type_verdict",
    "plan_lake_evolution",
    "recorded_identity",
    "widened_tombstone_keys",
]

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
