"""The driver's plan of one table of a batch (:class:`TablePlan`): its resolved parameters, its
target columns, the typed changes and how they reach the stage tasks (whole, split by key, or
folded where an initial snapshot's chunk read them). The census decides most of it
(:func:`whole_from_census`, :func:`typed_in_python`); for other frames one counting job over the
typed changes of every big table does (:func:`count_changes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...apply.fold import OLD_KEY, TRUNCATE_FLAG, UNCHANGED
from ...apply.spec import DEFAULT_DELETES, DEFAULT_TRUNCATES, ApplySpec, ResolvedSpec
from ...apply.target_column import TargetColumn
from ..outputs.changes.typed import BlockTyper, arrow_typable
from .census import Census

__all__ = ["TablePlan", "count_changes", "typed_in_python", "whole_from_census"]


@dataclass
class TablePlan:
    """One table of a batch, as the driver plans it."""

    resolved: ResolvedSpec
    columns: list[TargetColumn]
    sequence: list[TargetColumn]
    schema: pa.Schema  # the typed changes as Arrow (what the fold reads)
    changes: DataFrame | None  # None: the table has no row in the batch
    split: bool = False  # big enough to be split by key, if the fold allows: counted (and cached) first
    events: int | None = None  # the typed changes, when counted
    whole: bool = False  # the fold needs the table's batch in one partition
    #: An initial snapshot's image whose keys are the table's own: each key is read once, by one
    #: chunk, so every partition of the batch is folded where it was read (no shuffle by key).
    chunked: bool = False
    #: A chunked image's blocks can be typed by the stage task itself (``changes`` layout, every codec
    #: with an Arrow kernel, the default delete and truncate conditions): their rows never become
    #: Spark rows. The typed view (``changes``) stays for when a kernel refuses a value.
    typer: BlockTyper | None = None


def whole_from_census(spec: ApplySpec, census: Census) -> bool | None:
    """Whether the table's batch must be folded whole, when the census knows it; None when only a
    counting job over its typed changes can tell.

    The census knows for snapshot reads only (an initial or blocking snapshot's batch: no truncate,
    no key change) and for the changes layout, whose block headers count truncates and key changes
    (truncates as ``__op = 't'``: another ``apply_as_truncates`` condition needs the typed rows)."""
    table = spec.qualified_table
    if census.reads_only.get(table, False):
        return False
    counts = census.fold_hints.get(table)
    if counts is None or spec.apply_as_truncates not in (None, DEFAULT_TRUNCATES):
        return None
    truncates, key_changes, partial = counts
    truncating = truncates > 0 and spec.apply_as_truncates is not None
    return truncating or partial > 0 or (spec.ignore_null_updates and key_changes > 0)


def typed_in_python(spec: ApplySpec, view: Any) -> bool:
    """Whether the stage task can type the table's blocks: the delete and truncate conditions are
    the defaults (or none; another is a Spark SQL expression) and every codec has an Arrow kernel."""
    return (spec.apply_as_deletes in (None, DEFAULT_DELETES) and spec.apply_as_truncates in (None, DEFAULT_TRUNCATES)
            and arrow_typable(view))


def count_changes(plans: list[TablePlan]) -> None:
    """One job: each table's events, and whether its fold needs the batch whole."""
    frames = []
    for plan in plans:
        assert plan.changes is not None
        lacking = F.col(OLD_KEY).isNotNull() & (
            (F.coalesce(F.size(F.col(UNCHANGED)), F.lit(0)) > 0) | F.lit(plan.resolved.spec.ignore_null_updates))
        frames.append(plan.changes.agg(
            F.count(F.lit(1)).alias("events"),
            F.max(F.col(TRUNCATE_FLAG).cast("int")).alias("truncates"),
            F.max(lacking.cast("int")).alias("lacking"),
        ).withColumn("target", F.lit(plan.resolved.target)))
    if not frames:
        return
    by_target = {plan.resolved.target: plan for plan in plans}
    for row in reduce(DataFrame.unionByName, frames).collect():
        plan = by_target[row["target"]]
        plan.events = int(row["events"])
        plan.whole = bool(row["truncates"]) or bool(row["lacking"])
