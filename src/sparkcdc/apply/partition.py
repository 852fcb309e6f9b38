"""One partition of a table's batch, folded against the target's state and staged: what an
executor does for ``apply_changes`` (the driver plans before it and commits after it).

A partition holds every event of its keys (the driver hash-partitions a table's batch by key, or
keeps it whole when the fold needs it whole: a truncate, or a primary-key change whose new row
takes columns from the old key's). For those keys the target is read (recorded deletes; SCD2 the
open versions; the stored rows of primary-key changes), the events are folded
(:func:`~sparkcdc.apply.fold.fold_arrow`) and the result staged under a tag of its own
(:meth:`~sparkcdc.apply.targets.ApplyTarget.stage`), which is what the partition reports.

The target is opened from its location once per process and kept: PySpark reuses its Python
workers, and a connection per task would cost more than a small batch's fold. A kept target that
fails is dropped, and once the work is tried again on a new one: its server may have restarted
since it was opened (a new tag, so the first try's staging, if any, is never committed).
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..phase_seconds import PhaseSeconds
from .fold import OLD_KEY, TRUNCATE_FLAG, UNCHANGED, Key, fold_arrow
from .spec import ResolvedSpec
from .staged import Folded, StagedPart
from .target_column import TargetColumn
from .targets import ApplyTarget, target_for
from .targets.base import key_tuples

__all__ = ["TargetState", "distinct_keys", "fold_with", "old_keys", "stage_partition", "target_state", "with_target"]

R = TypeVar("R")

_OPENED: dict[tuple[str, str], ApplyTarget] = {}


def with_target(location: str, options: dict[str, Any], work: Callable[[ApplyTarget], R]) -> R:
    """``work`` with the process's target at ``location`` (opened once and kept; see the module doc)."""
    cache_key = (location, repr(sorted(options.items())))  # options may hold dicts (Delta's storage_options)
    target = _OPENED.get(cache_key)
    if target is not None:
        try:
            return work(target)
        except Exception:
            _forget(cache_key)  # perhaps stale: one more try on a new one
    target = _OPENED[cache_key] = target_for(location, **options)
    try:
        return work(target)
    except Exception:
        _forget(cache_key)
        raise


def _forget(cache_key: tuple[str, str]) -> None:
    target = _OPENED.pop(cache_key, None)
    if target is not None:
        try:
            target.close()
        except Exception:  # noqa: BLE001 - a broken target's close may fail too; it is dropped either way
            pass


def stage_partition(
    target: ApplyTarget, spec: ResolvedSpec, columns: Sequence[TargetColumn], sequence: Sequence[TargetColumn],
    events: pa.Table, *, pipeline_id: str, batch_id: int, image: bool = False, replace_at: tuple[Any, ...] | None = None,
) -> StagedPart:
    """Fold one partition's ``events`` against ``target`` and stage the result under a new tag; the
    part carries the seconds of each step (read the target, fold, stage) for the applier's stats."""
    target.attach(spec, columns, sequence)
    clock = PhaseSeconds()
    with clock.timed("read"):
        held = target_state(target, spec, events)
    with clock.timed("fold"):
        folded = fold_with(spec, events, held, image=image, replace_at=replace_at)
    with clock.timed("stage"):
        part = target.stage(folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=uuid.uuid4().hex)
    return dataclasses.replace(part, worker=os.getpid(), seconds=tuple(clock.seconds.items()))


@dataclass(frozen=True)
class TargetState:
    """What the target holds of a batch's keys, as the fold needs it: recorded deletes, the stored
    rows (SCD1) of the old keys of primary-key changes, or the open versions (SCD2) of the keys."""

    tombstones: Any
    stored: Any = None
    open_versions: Any = None


def target_state(target: ApplyTarget, spec: ResolvedSpec, events: pa.Table) -> TargetState:
    """Read from ``target`` what folding ``events`` needs (:class:`TargetState`)."""
    keys = distinct_keys(events, spec.keys)
    old = old_keys(events, spec.keys)
    open_versions = None
    if spec.scd_type == 2:
        wanted: Any = keys if not old else list(dict.fromkeys([*key_tuples(keys), *old]))
        open_versions = target.open_versions(spec, wanted)
    return TargetState(target.tombstones(spec, keys), target.stored_rows(spec, old) if old and spec.scd_type == 1 else None,
                       open_versions)


def fold_with(spec: ResolvedSpec, events: pa.Table, held: TargetState, *, image: bool = False,
              replace_at: tuple[Any, ...] | None = None) -> Folded:
    """Fold ``events`` with what the target holds of their keys (:func:`target_state`)."""
    return fold_arrow(spec, events, tombstones=held.tombstones, open_versions=held.open_versions, image=image,
                      replace_at=replace_at, stored=held.stored)


def distinct_keys(events: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The batch's distinct keys, as a table of the key columns (a truncate has no row, so no key)."""
    rows = events.select(list(keys))
    if TRUNCATE_FLAG in events.column_names and pc.any(events.column(TRUNCATE_FLAG)).as_py():
        rows = rows.filter(pc.invert(pc.fill_null(events.column(TRUNCATE_FLAG), False)))
    try:
        return rows.group_by(list(keys), use_threads=False).aggregate([])
    except pa.ArrowNotImplementedError:  # a key type Arrow cannot group by: distinct by Python's equality
        return pa.Table.from_pylist([dict(zip(keys, key, strict=True)) for key in dict.fromkeys(key_tuples(rows))],
                                    schema=rows.schema)


def old_keys(events: pa.Table, keys: Sequence[str]) -> list[Key]:
    """The old keys of the batch's key-change creates that lack a column (unchanged TOAST)."""
    if OLD_KEY not in events.column_names or events.column(OLD_KEY).null_count == events.num_rows:
        return []
    lacking = pc.and_(pc.is_valid(events.column(OLD_KEY)), pc.greater(pc.fill_null(pc.list_value_length(events.column(UNCHANGED)), 0), 0))
    rows = events.filter(lacking)
    found: dict[Key, None] = {}
    for old in rows.column(OLD_KEY).to_pylist():
        if old and all(k in old for k in keys):
            found[tuple(old[k] for k in keys)] = None
    return list(found)
