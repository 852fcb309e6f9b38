"""``apply_changes``: the ``postgres-cdc`` source applied to mirror tables, exactly once.

Each micro-batch runs in ``foreachBatch``: the batch is persisted (the source would otherwise
decode the WAL again for every table), each table's typed changes (``views.table_changes``) are
collected as Arrow, folded per key (``sparkcdc.apply.fold``) and handed to the target, which writes
them atomically with the batch id. Batches are applied in order and a batch at or below the
recorded id is skipped, so a batch Spark re-executes after a crash changes nothing.

The fold needs each table's changes of one batch in the driver (a micro-batch's worth, not the
table's): bound it with the source's batch size when tables change in bulk.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

from ..apply.errors import ApplySpecError
from ..apply.fold import DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED, fold_changes
from ..apply.spec import ApplySpec, ResolvedSpec
from ..apply.targets.base import ApplyTarget, TargetColumn, target_for
from .views import CHANGE_OPS, describe_table, table_changes

__all__ = ["ApplyStats", "ChangeApplier", "apply_changes"]

log = logging.getLogger(__name__)

@dataclass
class ApplyStats:
    """Counts since the applier started (what ``make demo`` and the benchmarks print)."""

    batches: int = 0
    events: dict[str, int] = field(default_factory=dict)  # target table -> events applied
    applied_batches_skipped: int = 0
    dropped_late: int = 0


class ChangeApplier:
    """The ``foreachBatch`` function. ``specs``: tables with their own parameters; with
    ``all_tables`` every other captured table found in a batch is applied with ``defaults``."""

    def __init__(
        self,
        target: str | ApplyTarget,
        properties: Mapping[str, str],
        *,
        pipeline_id: str,
        specs: Sequence[ApplySpec] = (),
        all_tables: bool = False,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        if not specs and not all_tables:
            raise ApplySpecError("table", "name the tables to apply (specs) or apply all tables")
        if not pipeline_id:
            raise ApplySpecError("pipeline_id", "a pipeline id is required (the checkpoint location is the usual one)")
        self._target_location = target if isinstance(target, str) else None
        self._target: ApplyTarget | None = None if isinstance(target, str) else target
        self.properties = dict(properties)
        self.pipeline_id = pipeline_id
        self.specs = {spec.qualified_table: spec for spec in specs}
        self.all_tables = all_tables
        self.defaults = dict(defaults or {})
        if all_tables:
            ApplySpec(table="defaults.check", **self.defaults)  # parameters fail here, before any batch runs
        self.stats = ApplyStats()
        self._prepared: dict[str, tuple[tuple[str, ...], tuple[pa.DataType, ...]]] = {}

    @property
    def target(self) -> ApplyTarget:
        if self._target is None:
            assert self._target_location is not None
            self._target = target_for(self._target_location)
        return self._target

    def close(self) -> None:
        if self._target is not None:
            self._target.close()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        persisted = batch.storageLevel == StorageLevel.NONE
        if persisted:
            batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            for spec in self._specs_for(batch):
                self._apply_table(batch, batch_id, spec)
            self.stats.batches += 1
        finally:
            if persisted:
                batch.unpersist()

    def _specs_for(self, batch: DataFrame) -> list[ApplySpec]:
        specs = list(self.specs.values())
        if self.all_tables:
            found = batch.where(F.col("op").isin(*CHANGE_OPS)).select("schema", "table").distinct().collect()
            for row in sorted(found, key=lambda r: (r["schema"], r["table"])):
                name = f"{row['schema']}.{row['table']}"
                if name not in self.specs:
                    specs.append(ApplySpec(table=name, **self.defaults))
        return specs

    def _apply_table(self, batch: DataFrame, batch_id: int, spec: ApplySpec) -> None:
        view = describe_table(self.properties, spec.qualified_table)
        resolved = spec.resolve([c.name for c in view.columns], view.keys)
        applied = self.target.applied_batch(resolved, self.pipeline_id)
        if applied is not None and applied >= batch_id:
            self.stats.applied_batches_skipped += 1
            return
        changes = table_changes(batch, view)
        changes = changes.withColumn(DELETE_FLAG, _condition(spec.apply_as_deletes)).withColumn(
            TRUNCATE_FLAG, _condition(spec.apply_as_truncates)
        )
        wanted = list(dict.fromkeys([*resolved.columns, *resolved.sequence, DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED]))
        events = changes.select(*wanted).toArrow()
        if events.num_rows == 0:
            return
        self._prepare(resolved, view, events)
        keys = _keys(events, resolved.keys)
        tombstones = self.target.tombstones(resolved, keys)
        open_versions = self.target.open_versions(resolved, keys) if resolved.scd_type == 2 else None
        folded = fold_changes(resolved, events, tombstones=tombstones, open_versions=open_versions)
        if self.target.apply(folded, pipeline_id=self.pipeline_id, batch_id=batch_id):
            self.stats.events[resolved.target] = self.stats.events.get(resolved.target, 0) + folded.events
            self.stats.dropped_late += folded.dropped_late
        else:
            self.stats.applied_batches_skipped += 1

    def _prepare(self, resolved: ResolvedSpec, view: Any, events: pa.Table) -> None:
        shape = (resolved.columns, tuple(events.schema.field(c).type for c in resolved.columns))
        if self._prepared.get(resolved.target) == shape:
            return
        by_name = {c.name: c for c in view.columns}
        columns = [
            TargetColumn(name, events.schema.field(name).type, by_name[name].pg_type, by_name[name].nullable)
            for name in resolved.columns
        ]
        sequence = [TargetColumn(name, events.schema.field(name).type, None, False) for name in resolved.sequence]
        self.target.prepare(resolved, columns, sequence)
        self._prepared[resolved.target] = shape


def _condition(expression: str | None) -> Any:
    return F.lit(False) if expression is None else F.coalesce(F.expr(expression), F.lit(False))


def _keys(events: pa.Table, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    return list(dict.fromkeys(zip(*(events.column(k).to_pylist() for k in keys), strict=True)))


def apply_changes(
    source: DataFrame,
    target: str | ApplyTarget,
    *,
    properties: Mapping[str, str],
    checkpoint_location: str | Path,
    table: str | None = None,
    **parameters: Any,
) -> DataStreamWriter:
    """``source.writeStream`` applying ``table`` (or, without it, every captured table) to ``target``.

    ``target``: ``postgresql://…`` or a Delta Lake root path. ``parameters`` are AUTO CDC's
    (``keys``, ``sequence_by``, ``stored_as_scd_type``, ``apply_as_deletes``, …; see
    :class:`sparkcdc.apply.ApplySpec`). The checkpoint location identifies the pipeline in the
    target's recorded positions. Start it with ``.start()`` after choosing the trigger.
    """
    pipeline_id = str(Path(checkpoint_location).absolute()) if "://" not in str(checkpoint_location) else str(checkpoint_location)
    if table is not None:
        applier = ChangeApplier(target, properties, pipeline_id=pipeline_id, specs=[ApplySpec(table=table, **parameters)])
    else:
        applier = ChangeApplier(target, properties, pipeline_id=pipeline_id, all_tables=True, defaults=parameters)
    return source.writeStream.foreachBatch(applier).option("checkpointLocation", str(checkpoint_location))

