"""A folded batch as Arrow, and what a target stages of it: the form that travels from the
executors, where a table's batch is folded, to the driver, which commits it.

:class:`Folded` is one fold's result (a partition of a table's batch, or the whole of it) as Arrow
tables, so that the fold's output is never a Python list per row on its way to the target:

* ``rows``: SCD1: the table's columns, :data:`DELETE` and :data:`UNCHANGED` (the columns whose
  stored value stays; null when none), one row per key and segment. SCD2: the table's columns,
  ``__START_AT`` and ``__END_AT`` (null: open), one row per version the fold touched. Both carry
  :data:`SEGMENT`, the index of the segment the row belongs to.
* ``tombstones``: the key columns and ``__SEQUENCE``: the batch's deletes.

A sequence is a struct with one field per ``sequence_by`` column (even a single one), whatever the
target stores (one column as it is, several as a struct or an array).

A target's ``stage`` puts a :class:`Folded` where its commit can find it (a staging table, staging
files) under a tag and answers a :class:`StagedPart`: small, picklable, what the executor reports
to the driver. The driver commits a :class:`StagedBatch`, the parts of every partition of a
successful job: a part whose tag the driver did not collect (a failed task attempt, a speculative
duplicate) is never committed, and its staging is removed with the batch's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import ApplyError
from .spec import ResolvedSpec

__all__ = [
    "DELETE",
    "SEGMENT",
    "SEQUENCE",
    "UNCHANGED",
    "Folded",
    "SegmentBounds",
    "StagedBatch",
    "StagedPart",
    "pipeline_hash",
    "rows_schema",
    "sequence_type",
    "tombstones_schema",
]

SEGMENT = "__sparkcdc_segment"
DELETE = "__sparkcdc_delete"
UNCHANGED = "__sparkcdc_unchanged"
SEQUENCE = "__SEQUENCE"
START_AT = "__START_AT"
END_AT = "__END_AT"

Sequence_ = tuple[Any, ...]


def pipeline_hash(pipeline_id: str) -> str:
    """A pipeline id as staging names it (a path may be long and hold any character)."""
    return hashlib.sha1(pipeline_id.encode("utf-8")).hexdigest()[:16]


def sequence_type(spec: ResolvedSpec, schema: pa.Schema) -> pa.StructType:
    """The struct a sequence is staged as: one field per ``sequence_by`` column, typed as the events'."""
    return pa.struct([pa.field(name, schema.field(name).type) for name in spec.sequence])


def rows_schema(spec: ResolvedSpec, schema: pa.Schema) -> pa.Schema:
    """The schema of :attr:`Folded.rows` for events of ``schema``."""
    fields = [pa.field(name, schema.field(name).type) for name in spec.columns]
    if spec.scd_type == 1:
        fields += [pa.field(DELETE, pa.bool_()), pa.field(UNCHANGED, pa.list_(pa.string()))]
    else:
        seq = sequence_type(spec, schema)
        fields += [pa.field(START_AT, seq), pa.field(END_AT, seq)]
    return pa.schema([*fields, pa.field(SEGMENT, pa.int32())])


def tombstones_schema(spec: ResolvedSpec, schema: pa.Schema) -> pa.Schema:
    """The schema of :attr:`Folded.tombstones` for events of ``schema``."""
    return pa.schema([pa.field(name, schema.field(name).type) for name in spec.keys]
                     + [pa.field(SEQUENCE, sequence_type(spec, schema))])


@dataclass(frozen=True)
class SegmentBounds:
    """What a segment does beyond its rows: ``truncate_at`` set, the table is emptied (SCD1) or its
    open versions closed (SCD2) first; ``replace_at`` set, the segment is the table's whole image and
    what the target holds beyond the batch's rows goes (see :mod:`sparkcdc.apply.fold`)."""

    truncate_at: Sequence_ | None = None
    replace_at: Sequence_ | None = None


@dataclass
class Folded:
    """One fold's result as Arrow (see the module doc)."""

    spec: ResolvedSpec
    segments: list[SegmentBounds]
    rows: pa.Table
    tombstones: pa.Table
    events: int = 0
    dropped_late: int = 0  # events not newer than a recorded delete of their key

    def rows_in(self, segment: int) -> int:
        if len(self.segments) == 1:
            return self.rows.num_rows
        return int(pc.sum(pc.equal(self.rows.column(SEGMENT), segment)).as_py() or 0)

    def kept(self) -> tuple[str, ...]:
        """SCD1: the columns some row keeps the stored value of (the commit compares only those)."""
        if self.spec.scd_type != 1 or self.rows.num_rows == 0:
            return ()
        names = pc.unique(pc.list_flatten(self.rows.column(UNCHANGED))).to_pylist()
        return tuple(sorted(name for name in names if name is not None))


@dataclass(frozen=True)
class StagedPart:
    """What one stage call reports to the driver: where its rows are and what its fold saw."""

    tag: str
    segments: tuple[SegmentBounds, ...]
    rows_per_segment: tuple[int, ...]
    tombstones: int
    events: int
    dropped_late: int
    kept: tuple[str, ...] = ()
    #: Staging files (lake targets): the rows' and the tombstones' Parquet file, None when empty.
    rows_file: str | None = None
    tombstones_file: str | None = None
    #: Diagnostics: the process that folded and staged it, and its seconds per step.
    worker: int | None = None
    seconds: tuple[tuple[str, float], ...] = ()
    #: An image written as the target table's own data files (a lake target's whole-image path):
    #: (path relative to the table, size in bytes, the file's statistics as the format records
    #: them), committed by reference; ``in_place`` even when the part wrote no file (no row).
    in_place: bool = False
    table_files: tuple[tuple[str, int, str], ...] = ()

    @classmethod
    def of(cls, folded: Folded, tag: str, *, rows_file: str | None = None, tombstones_file: str | None = None) -> StagedPart:
        return cls(
            tag=tag, segments=tuple(folded.segments),
            rows_per_segment=tuple(folded.rows_in(k) for k in range(len(folded.segments))),
            tombstones=folded.tombstones.num_rows, events=folded.events, dropped_late=folded.dropped_late,
            kept=folded.kept(), rows_file=rows_file, tombstones_file=tombstones_file,
        )


@dataclass(frozen=True)
class StagedBatch:
    """The parts a table's batch was staged as, one per partition that had events: what the
    driver commits. The parts' segments must agree (a batch is split by key only when it has one
    segment without a truncate); an image's bounds are the earliest any part saw."""

    spec: ResolvedSpec
    parts: tuple[StagedPart, ...]
    segments: tuple[SegmentBounds, ...] = field(init=False)

    def __post_init__(self) -> None:
        if not self.parts:
            raise ApplyError(f"a staged batch of {self.spec.target} has no part")
        counts = {len(part.segments) for part in self.parts}
        if len(counts) != 1:
            raise ApplyError(f"the staged parts of {self.spec.target} disagree on their segments: {sorted(counts)}")
        merged = []
        for k in range(counts.pop()):
            bounds = [part.segments[k] for part in self.parts]
            truncates = {b.truncate_at for b in bounds}
            if len(truncates) != 1:
                raise ApplyError(f"the staged parts of {self.spec.target} truncate at different sequences in segment {k}")
            replaces = [b.replace_at for b in bounds if b.replace_at is not None]
            if replaces and len(replaces) != len(bounds):
                raise ApplyError(f"only some staged parts of {self.spec.target} are the table's image")
            merged.append(SegmentBounds(truncates.pop(), min(replaces) if replaces else None))
        object.__setattr__(self, "segments", tuple(merged))

    @property
    def tags(self) -> list[str]:
        return [part.tag for part in self.parts]

    @property
    def is_image(self) -> bool:
        """The batch replaces the table (an initial snapshot): see ``sparkcdc.apply.targets.base``."""
        return any(segment.replace_at is not None for segment in self.segments)

    @property
    def events(self) -> int:
        return sum(part.events for part in self.parts)

    @property
    def dropped_late(self) -> int:
        return sum(part.dropped_late for part in self.parts)

    @property
    def tombstones(self) -> int:
        return sum(part.tombstones for part in self.parts)

    @property
    def rows(self) -> int:
        return sum(sum(part.rows_per_segment) for part in self.parts)

    def rows_in(self, segment: int) -> int:
        return sum(part.rows_per_segment[segment] for part in self.parts)

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(sorted({name for part in self.parts for name in part.kept}))

    def files(self, what: str) -> list[str]:
        """The parts' staging files of ``what`` ("rows" or "tombstones") that hold rows."""
        found = [part.rows_file if what == "rows" else part.tombstones_file for part in self.parts]
        return [path for path in found if path is not None]

