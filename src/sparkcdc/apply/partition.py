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
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from .fold import OLD_KEY, TRUNCATE_FLAG, UNCHANGED, Key, fold_arrow
from .spec import ResolvedSpec
from .staged import Folded, StagedPart
from .target_column import TargetColumn
from .targets import ApplyTarget, target_for
from .targets.base import key_tuples

__all__ = ["distinct_keys", "fold_against", "old_keys", "stage_partition", "with_target"]

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
    """Fold one partition's ``events`` against ``target`` and stage the result under a new tag."""
    target.attach(spec, columns, sequence)
    seconds: dict[str, float] = {}
    folded = fold_against(target, spec, events, image=image, replace_at=replace_at, seconds=seconds)
    started = time.perf_counter()
    part = target.stage(folded, pipeline_id=pipeline_id, batch_id=batch_id, tag=uuid.uuid4().hex)
    seconds["stage"] = time.perf_counter() - started
    return dataclasses.replace(part, worker=os.getpid(), seconds=tuple(seconds.items()))


def fold_against(
    target: ApplyTarget, spec: ResolvedSpec, events: pa.Table, *, image: bool = False, replace_at: tuple[Any, ...] | None = None,
    seconds: dict[str, float] | None = None,
) -> Folded:
    """Fold ``events`` with what the target holds of their keys: recorded deletes, the stored rows
    (SCD1) or open versions (SCD2) of the old keys of primary-key changes, SCD2 the keys' open versions.
    ``seconds``: gets the time spent reading the target ("read") and folding ("fold")."""
    started = time.perf_counter()
    keys = distinct_keys(events, spec.keys)
    tombstones = target.tombstones(spec, keys)
    old = old_keys(events, spec.keys)
    stored = target.stored_rows(spec, old) if old and spec.scd_type == 1 else None
    open_versions = None
    if spec.scd_type == 2:
        wanted: Any = keys if not old else list(dict.fromkeys([*key_tuples(keys), *old]))
        open_versions = target.open_versions(spec, wanted)
    read = time.perf_counter()
    folded = fold_arrow(spec, events, tombstones=tombstones, open_versions=open_versions, image=image,
                        replace_at=replace_at, stored=stored)
    if seconds is not None:
        seconds["read"] = read - started
        seconds["fold"] = time.perf_counter() - read
    return folded


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
