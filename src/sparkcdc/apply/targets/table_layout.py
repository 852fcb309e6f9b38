"""A lake target table's layout (:class:`TableLayout`): its key and data columns, its sequence (one
column as it is; several as a struct of them, compared field by field), its tombstone schema (key
columns, ``__SEQUENCE``, ``__DELETED_AT``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self

import pyarrow as pa
import pyarrow.compute as pc

from .. import vector
from ..errors import TargetError
from ..fold import END_AT, START_AT
from ..spec import ResolvedSpec
from ..target_column import TargetColumn
from .storage_types import StorageTypes
from .table_names import DELETED_AT, DELETED_AT_TYPE, SEQUENCE

__all__ = ["TableLayout"]


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
