"""One micro-batch of a table's changes, folded into what the target must do.

Events are taken in sequence order (``sequence_by``; by default commit LSN, LSN, ordinal: the
order the source committed them). A TRUNCATE starts a new segment: for SCD1 the segments before it
are dropped (the target is emptied, then the rest applies); for SCD2 the versions open at that
moment are closed at the truncate's sequence, including the target's open versions the batch does
not otherwise touch (``Segment.truncate_at``).

SCD1: per key, the last event wins. Columns the event could not carry (Debezium's unchanged-TOAST
placeholder, or nulls under ``ignore_null_updates``) take the value of an earlier event of the
same batch; when there is none they stay listed in ``__unchanged`` and the target keeps its stored
value (``WHEN MATCHED … CASE WHEN column in __unchanged``), so no lookup of the target is needed.

A primary-key change arrives as a delete of the old key and a create of the new one
(``__old_key``), the create without the columns PostgreSQL did not send (unchanged TOAST): those are
the old row's, from this batch when the old key was written in it, else from the target (``stored``,
SCD1; the old key's open version, SCD2).

SCD2: every change of a tracked column closes the key's open version (``__END_AT`` = the change's
sequence) and opens a new one (``__START_AT``); a change of untracked columns only rewrites the open
version. The open versions of the batch's keys are read from the target first; every version the
fold touches is emitted whole, and the target inserts it or replaces the row with the same keys and
``__START_AT``. A delete closes the open version.

Both: a delete is remembered (a tombstone, with its sequence); an event of that key whose sequence
is not newer than the tombstone's is dropped, so a late event cannot resurrect a deleted row.

A batch that is the table's whole image (an initial snapshot; ``replace_at`` given) replaces the
table: the first segment carries every key of the image (SCD2: every open version, changed or not)
and ``Segment.replace_at``; the target removes the rows whose keys the segment does not hold (SCD1)
or closes their open versions at ``replace_at`` (SCD2). Applying such a batch twice changes nothing
the second time, and applying a newer image over an older one (a snapshot Spark re-executed after
the source had to take it again) leaves exactly the newer image.

:func:`fold_changes` folds event by event (about 8 µs an event in Python). :func:`fold_arrow` gives
the same result as Arrow tables (:mod:`sparkcdc.apply.staged`), the form targets stage, and folds
the common batch column at a time (:func:`fold_scd1_vectorized`): SCD1 without truncates and without
columns an event could not carry, i.e. the streaming of ordinary tables and the initial snapshot.
There, no event takes a value from another, so each key's last event newer than its recorded delete
is its row; a property test holds the two paths to the same result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import staged, vector
from .errors import ApplyError
from .spec import ResolvedSpec
from .staged import END_AT, START_AT, Folded, SegmentBounds, Sequence_

__all__ = [
    "DELETE_FLAG",
    "END_AT",
    "OLD_KEY",
    "START_AT",
    "TRUNCATE_FLAG",
    "UNCHANGED",
    "Segment",
    "TableChanges",
    "fold_arrow",
    "fold_changes",
    "fold_scd1_vectorized",
    "staged_form",
    "vectorizable",
]

DELETE_FLAG = "__is_delete"
TRUNCATE_FLAG = "__is_truncate"
UNCHANGED = "__unchanged"
#: Optional: the old key of the create that ends a primary-key change (a struct of the key columns;
#: the typed view's ``__old_key``). Columns such a create could not carry are the old row's.
OLD_KEY = "__old_key"

Key = tuple[Any, ...]


@dataclass
class Segment:
    """Changes that apply in one step; ``truncate_at`` set: the table is emptied (SCD1) or its open
    versions closed at that sequence (SCD2) before this segment's rows apply."""

    truncate_at: Sequence_ | None = None
    #: The segment is the table's whole image: what the target holds beyond it goes (see module doc).
    replace_at: Sequence_ | None = None
    #: SCD1: key -> (delete?, values of ResolvedSpec.columns, columns whose stored value stays)
    final: dict[Key, tuple[bool, list[Any], tuple[str, ...]]] = field(default_factory=dict)
    #: SCD2: versions to insert or replace, as (values, start sequence, end sequence or None)
    versions: list[tuple[list[Any], Sequence_, Sequence_ | None]] = field(default_factory=list)


@dataclass
class TableChanges:
    spec: ResolvedSpec
    segments: list[Segment]
    tombstones: dict[Key, Sequence_]  # deletes of this batch: key -> sequence of the last delete
    events: int = 0
    dropped_late: int = 0  # events not newer than a recorded delete of their key

    @property
    def is_image(self) -> bool:
        """The batch replaces the table (an initial snapshot): applying it again is harmless, and
        needed when the source took the snapshot again (see ``sparkcdc.apply.targets.base``)."""
        return any(segment.replace_at is not None for segment in self.segments)


@dataclass
class _Version:
    values: list[Any]
    start: Sequence_
    end: Sequence_ | None = None
    dirty: bool = False


def fold_changes(
    spec: ResolvedSpec,
    events: pa.Table,
    *,
    tombstones: Mapping[Key, Sequence_] | None = None,
    open_versions: Mapping[Key, tuple[Sequence[Any], Sequence_]] | None = None,
    image: bool = False,
    replace_at: Sequence_ | None = None,
    stored: Mapping[Key, Sequence[Any]] | None = None,
) -> TableChanges:
    """Fold ``events`` (the typed view's rows with ``__is_delete``, ``__is_truncate`` and
    ``__unchanged``; any order) into a :class:`TableChanges`.

    ``tombstones``: the target's recorded deletes of the batch's keys. ``open_versions`` (SCD2):
    the target's open version of each of the batch's keys, as (values of ``spec.columns``, start).
    ``stored`` (SCD1): the target's rows (values of ``spec.columns``) of the old keys of the batch's
    primary-key changes (``__old_key``); SCD2 finds them among ``open_versions``.
    ``image``: the events are the table's whole image (see the module doc), taken at ``replace_at``
    (default: the first event's sequence; given, it implies ``image`` and must not be after any event).
    """
    ordered = _sorted(events, spec.sequence)
    first = _first_sequence(ordered, spec.sequence) if ordered.num_rows else None
    replace_at = _image_at(spec, first, image=image, replace_at=replace_at)
    known_deletes = dict(tombstones or {})
    changes = TableChanges(spec, [Segment(replace_at=replace_at)], {})
    if spec.scd_type == 1:
        _fold_scd1(spec, _rows(spec, ordered), known_deletes, changes, stored or {})
    else:
        _fold_scd2(spec, _rows(spec, ordered), known_deletes, dict(open_versions or {}), changes)
    return changes


def _image_at(spec: ResolvedSpec, first: Sequence_ | None, *, image: bool, replace_at: Sequence_ | None) -> Sequence_ | None:
    """The sequence an image batch replaces the table at (None: the batch is no image); ``first``:
    the batch's first event's sequence."""
    if replace_at is not None:
        replace_at = tuple(replace_at)
        if first is not None and first < replace_at:
            raise ApplyError(f"the image of {spec.spec.qualified_table} replaces at {replace_at}, after its first event")
        return replace_at
    if image:
        if first is None and spec.scd_type == 2:
            raise ApplyError(f"an empty image of {spec.spec.qualified_table} needs the sequence it was taken at (replace_at)")
        return () if first is None else first  # SCD1 removes rows without a sequence
    return None


def _sorted(events: pa.Table, sequence: tuple[str, ...]) -> pa.Table:
    missing = [name for name in sequence if name not in events.column_names]
    if missing:
        raise ApplyError(f"sequence_by column(s) {missing} are not in the changes")
    for name in sequence:
        if events.column(name).null_count:
            raise ApplyError(f"sequence_by column {name} is null in {events.column(name).null_count} event(s): sequences must be set")
    return events.sort_by([(name, "ascending") for name in sequence]) if events.num_rows > 1 else events


def _first_sequence(events: pa.Table, sequence: tuple[str, ...]) -> Sequence_:
    return tuple(events.column(name)[0].as_py() for name in sequence)


_Row = tuple[Key, Sequence_, bool, bool, list[Any], frozenset[str], Key | None]


def _require(spec: ResolvedSpec, events: pa.Table) -> None:
    for required in (*spec.columns, DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED):
        if required not in events.column_names:
            raise ApplyError(f"the changes of {spec.spec.qualified_table} have no column {required}")


def _rows(spec: ResolvedSpec, events: pa.Table) -> Iterator[_Row]:
    """(key, sequence, delete?, truncate?, values, columns the event does not carry, old key) per event."""
    names = events.column_names
    _require(spec, events)
    columns = [events.column(name).to_pylist() for name in spec.columns]
    sequences = list(zip(*(events.column(name).to_pylist() for name in spec.sequence), strict=True))
    deletes = events.column(DELETE_FLAG).to_pylist()
    truncates = events.column(TRUNCATE_FLAG).to_pylist()
    unchanged = events.column(UNCHANGED).to_pylist()
    old_keys = events.column(OLD_KEY).to_pylist() if OLD_KEY in names else [None] * events.num_rows
    key_index = [spec.columns.index(k) for k in spec.keys]
    ignore_nulls = spec.spec.ignore_null_updates
    non_key = [i for i, name in enumerate(spec.columns) if name not in set(spec.keys)]
    selected = set(spec.columns)
    for i, values in enumerate(zip(*columns, strict=True) if columns else ()):
        row = list(values)
        missing = frozenset(c for c in (unchanged[i] or ()) if c in selected)
        if ignore_nulls and not deletes[i]:
            missing = missing | {spec.columns[j] for j in non_key if row[j] is None}
        old = old_keys[i]
        # The old key counts only when it is a key of the spec (``keys`` may name other columns).
        old_key = tuple(old[k] for k in spec.keys) if old and all(k in old for k in spec.keys) else None
        yield tuple(row[j] for j in key_index), sequences[i], bool(deletes[i]), bool(truncates[i]), row, missing, old_key


def _fold_scd1(
    spec: ResolvedSpec, rows: Iterator[_Row], known_deletes: dict[Key, Sequence_], changes: TableChanges,
    stored: Mapping[Key, Sequence[Any]],
) -> None:
    index = {name: i for i, name in enumerate(spec.columns)}
    segment = changes.segments[-1]
    # Per key, its values after its last non-delete event of the segment (a delete keeps them: the
    # create that ends a primary-key change takes the old row's values from here).
    images: dict[Key, tuple[list[Any], tuple[str, ...]]] = {}
    for key, sequence, is_delete, is_truncate, values, missing, old_key in rows:
        changes.events += 1
        if is_truncate:
            # What came before the truncate is gone from the table: only its tombstones still count.
            segment = Segment(truncate_at=sequence)
            changes.segments[:] = [segment]
            images = {}
            continue
        if _is_late(key, sequence, known_deletes):
            changes.dropped_late += 1
            continue
        if is_delete:
            segment.final[key] = (True, values, ())
            known_deletes[key] = changes.tombstones[key] = sequence
            continue
        earlier = segment.final.get(key)
        if earlier is not None and not earlier[0]:
            for name in missing:
                values[index[name]] = earlier[1][index[name]]
            kept = tuple(sorted(missing & set(earlier[2])))
        elif old_key is not None and missing:
            # A primary-key change: what the create could not carry is the old row's, as this batch
            # left it or else as the target stores it (none after a truncate of this batch).
            source = images.get(old_key)
            old_row = None if segment.truncate_at is not None else stored.get(old_key)
            for name in missing:
                if source is not None and name not in source[1]:
                    values[index[name]] = source[0][index[name]]
                else:
                    values[index[name]] = None if old_row is None else old_row[index[name]]
            kept = ()
        else:
            # No earlier value in this batch: after a delete or a truncate there is no stored row
            # either (null); otherwise the target keeps what it has.
            for name in missing:
                values[index[name]] = None
            kept = () if earlier is not None or segment.truncate_at is not None else tuple(sorted(missing))
        segment.final[key] = (False, values, kept)
        images[key] = (values, kept)


def _fold_scd2(
    spec: ResolvedSpec, rows: Iterator[_Row],
    known_deletes: dict[Key, Sequence_], open_versions: dict[Key, tuple[Sequence[Any], Sequence_]],
    changes: TableChanges,
) -> None:
    index = {name: i for i, name in enumerate(spec.columns)}
    tracked = [index[name] for name in spec.tracked]
    segment = changes.segments[-1]
    current: dict[Key, _Version | None] = {}  # None: known to have no open version

    def close_segment(end: Sequence_ | None) -> None:
        """Emit the versions still open; a truncate (``end``) closes every one of them. An image
        emits every open version, so that the target can tell which of its keys it lacks."""
        whole = end is not None or segment.replace_at is not None
        for version in current.values():
            if version is not None and version.end is None and (version.dirty or whole):
                segment.versions.append((version.values, version.start, end))

    # Per key, the values of its last version seen (a delete keeps them, for a key change's create).
    last_values: dict[Key, list[Any]] = {}
    for key, sequence, is_delete, is_truncate, values, missing, old_key in rows:
        changes.events += 1
        if is_truncate:
            last_values = {}
            close_segment(sequence)
            current = {}
            open_versions = {}  # the truncate closes every open version the target has
            segment = Segment(truncate_at=sequence)
            changes.segments.append(segment)
            continue
        if _is_late(key, sequence, known_deletes):
            changes.dropped_late += 1
            continue
        if key in current:
            version = current[key]
        else:
            stored = open_versions.get(key)
            version = None if stored is None else _Version(list(stored[0]), tuple(stored[1]))
        if is_delete:
            if version is not None:
                last_values[key] = version.values
                version.end = sequence
                segment.versions.append((version.values, version.start, sequence))
            current[key] = None
            known_deletes[key] = changes.tombstones[key] = sequence
            continue
        source = version.values if version is not None else None
        if source is None and old_key is not None and missing:
            # A primary-key change: the old key's last version, in this batch or open in the target.
            stored = open_versions.get(old_key)
            source = last_values.get(old_key) or (list(stored[0]) if stored is not None else None)
        for name in missing:
            values[index[name]] = None if source is None else source[index[name]]
        last_values[key] = values
        if version is None:
            current[key] = _Version(values, sequence, dirty=True)
        elif any(values[i] != version.values[i] for i in tracked):
            segment.versions.append((version.values, version.start, sequence))
            current[key] = _Version(values, sequence, dirty=True)
        elif values != version.values:
            version.values = values  # only untracked columns changed: the open version is rewritten
            version.dirty = True
            current[key] = version
        else:
            current[key] = version
    close_segment(None)


def _is_late(key: Key, sequence: Sequence_, known_deletes: Mapping[Key, Sequence_]) -> bool:
    deleted_at = known_deletes.get(key)
    return deleted_at is not None and sequence <= deleted_at


# -- the fold's result as Arrow --------------------------------------------------------------------


def fold_arrow(
    spec: ResolvedSpec,
    events: pa.Table,
    *,
    tombstones: Mapping[Key, Sequence_] | None = None,
    open_versions: Mapping[Key, tuple[Sequence[Any], Sequence_]] | None = None,
    image: bool = False,
    replace_at: Sequence_ | None = None,
    stored: Mapping[Key, Sequence[Any]] | None = None,
) -> Folded:
    """:func:`fold_changes` as a :class:`~sparkcdc.apply.staged.Folded`: column at a time where
    that gives the same result (:func:`fold_scd1_vectorized`), else event by event."""
    if vectorizable(spec, events):
        try:
            folded = fold_scd1_vectorized(spec, events, tombstones=tombstones, image=image, replace_at=replace_at)
        except pa.ArrowNotImplementedError:  # a key type Arrow cannot sort, compare or join: event by event
            folded = None
        if folded is not None:
            return folded
    changes = fold_changes(spec, events, tombstones=tombstones, open_versions=open_versions, image=image,
                           replace_at=replace_at, stored=stored)
    return staged_form(changes, events.schema)


def vectorizable(spec: ResolvedSpec, events: pa.Table) -> bool:
    """Whether the batch is what :func:`fold_scd1_vectorized` folds: SCD1, no truncate, no column
    an event could not carry (``__unchanged``, ``ignore_null_updates``); then no event takes a value
    from another one, and the last event of each key is its row."""
    if spec.scd_type != 1 or spec.spec.ignore_null_updates:
        return False
    _require(spec, events)
    if events.num_rows == 0:
        return True
    if pc.any(events.column(TRUNCATE_FLAG)).as_py():
        return False
    lengths = pc.max(pc.list_value_length(events.column(UNCHANGED))).as_py()
    return not lengths


def fold_scd1_vectorized(
    spec: ResolvedSpec, events: pa.Table, *, tombstones: Mapping[Key, Sequence_] | None = None, image: bool = False,
    replace_at: Sequence_ | None = None,
) -> Folded | None:
    """The SCD1 fold of a :func:`vectorizable` batch, column at a time: sort by key and sequence,
    drop the events not newer than the key's recorded delete, keep each key's last event (and
    last delete, the tombstone). None when the batch has two events of one key at the same sequence
    (their order is the event-by-event fold's to decide) or a null key."""
    _require(spec, events)
    keys, sequence = list(spec.keys), list(spec.sequence)
    missing = [name for name in sequence if name not in events.column_names]
    if missing:
        raise ApplyError(f"sequence_by column(s) {missing} are not in the changes")
    for name in sequence:
        if events.column(name).null_count:
            raise ApplyError(f"sequence_by column {name} is null in {events.column(name).null_count} event(s): sequences must be set")
    if any(events.column(k).null_count for k in keys):
        return None
    n = events.num_rows
    first = None
    if n and (image or replace_at is not None):
        head = pc.sort_indices(events.select(sequence), [(s, "ascending") for s in sequence])[0].as_py()
        first = tuple(events.column(s)[head].as_py() for s in sequence)
    replace_at = _image_at(spec, first, image=image, replace_at=replace_at)
    wanted = list(dict.fromkeys([*spec.columns, *sequence, DELETE_FLAG]))
    ordered = events.select(wanted)
    if n > 1:
        ordered = ordered.take(pc.sort_indices(ordered, [(k, "ascending") for k in keys] + [(s, "ascending") for s in sequence]))
        if vector.equal_neighbours(ordered, [*keys, *sequence]).any():
            return None
    late = np.zeros(n, dtype=bool)
    if tombstones and n:
        recorded = _tombstone_table(spec, events.schema, tombstones)
        index = vector.match_rows(ordered, recorded, keys)
        if index.null_count < len(index):
            deleted_at = [recorded.column(s).take(index) for s in sequence]
            late = pc.fill_null(vector.not_later([ordered.column(s) for s in sequence], deleted_at), False).to_numpy(
                zero_copy_only=False).astype(bool)
    survivors = ordered.filter(pa.array(~late)) if late.any() else ordered
    final = survivors.filter(pa.array(vector.ends_of_runs(survivors, keys)))
    deletes = survivors.filter(pc.fill_null(survivors.column(DELETE_FLAG), False))
    deletes = deletes.filter(pa.array(vector.ends_of_runs(deletes, keys)))
    rows_schema = staged.rows_schema(spec, events.schema)
    rows = pa.Table.from_arrays(
        [final.column(name) for name in spec.columns] + [
            pc.fill_null(final.column(DELETE_FLAG), False),
            pa.nulls(final.num_rows, pa.list_(pa.string())),
            pa.array(np.zeros(final.num_rows, dtype=np.int32)),
        ],
        schema=rows_schema,
    )
    seq_type = staged.sequence_type(spec, events.schema)
    tombs = pa.Table.from_arrays(
        [deletes.column(k) for k in keys] + [vector.struct_column([deletes.column(s) for s in sequence], seq_type)],
        schema=staged.tombstones_schema(spec, events.schema),
    )
    return Folded(spec, [SegmentBounds(None, replace_at)], rows, tombs, events=n, dropped_late=int(late.sum()))


def _tombstone_table(spec: ResolvedSpec, schema: pa.Schema, tombstones: Mapping[Key, Sequence_]) -> pa.Table:
    """The target's recorded deletes as a table of the key and sequence columns, typed as the events'."""
    items = list(tombstones.items())
    columns = {
        name: pa.array([key[i] for key, _ in items], type=schema.field(name).type) for i, name in enumerate(spec.keys)
    }
    for i, name in enumerate(spec.sequence):
        columns[name] = pa.array([sequence[i] for _, sequence in items], type=schema.field(name).type)
    return pa.table(columns)


def staged_form(changes: TableChanges, schema: pa.Schema) -> Folded:
    """An event-by-event fold's :class:`TableChanges` as a :class:`~sparkcdc.apply.staged.Folded`
    (``schema``: the events' types)."""
    spec = changes.spec
    rows_schema = staged.rows_schema(spec, schema)
    names = list(spec.columns)
    values: list[list[Any]] = []
    extra: list[tuple[Any, Any, int]] = []  # SCD1: (delete, kept); SCD2: (start, end); and the segment
    for index, segment in enumerate(changes.segments):
        if spec.scd_type == 1:
            for delete, row, kept in segment.final.values():
                values.append(row)
                extra.append((bool(delete), list(kept) or None, index))
        else:
            for row, start, end in segment.versions:
                values.append(row)
                extra.append((_as_struct(spec, start), None if end is None else _as_struct(spec, end), index))
    columns = list(zip(*values, strict=True)) if values else [() for _ in names]
    arrays = [_array(list(column), rows_schema.field(name).type) for name, column in zip(names, columns, strict=True)]
    tail = list(zip(*extra, strict=True)) if extra else [(), (), ()]
    arrays += [_array(list(tail[0]), rows_schema.field(len(names)).type), _array(list(tail[1]), rows_schema.field(len(names) + 1).type),
               pa.array(list(tail[2]), type=pa.int32())]
    rows = pa.Table.from_arrays(arrays, schema=rows_schema)
    tomb_schema = staged.tombstones_schema(spec, schema)
    items = list(changes.tombstones.items())
    tomb_arrays = [_array([key[i] for key, _ in items], tomb_schema.field(i).type) for i in range(len(spec.keys))]
    tomb_arrays.append(_array([_as_struct(spec, sequence) for _, sequence in items], tomb_schema.field(staged.SEQUENCE).type))
    tombstones = pa.Table.from_arrays(tomb_arrays, schema=tomb_schema)
    bounds = [SegmentBounds(s.truncate_at, s.replace_at) for s in changes.segments]
    return Folded(spec, bounds, rows, tombstones, events=changes.events, dropped_late=changes.dropped_late)


def _as_struct(spec: ResolvedSpec, sequence: Sequence_) -> dict[str, Any]:
    return dict(zip(spec.sequence, sequence, strict=True))


def _array(values: list[Any], type_: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, type=type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.array(values).cast(type_)
