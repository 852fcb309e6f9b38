"""``apply_changes``: the ``postgres-cdc`` source applied to mirror tables, exactly once.

Each micro-batch runs in ``foreachBatch``: the batch is persisted (the source would otherwise
decode the WAL again for every table), each table's typed changes (``views.table_changes``) are
collected as Arrow, folded per key (``sparkcdc.apply.fold``) and handed to the target, which writes
them atomically with the batch id. Batches are applied in order and a batch at or below the
recorded id is skipped, so a batch Spark re-executes after a crash changes nothing.

The initial snapshot's batch is the tables' whole image: it replaces every applied table (rows the
image lacks are deleted, SCD2 versions closed), and it is applied again when Spark re-executes it,
because the source may then have taken a newer snapshot and streams on from that one (see
``sparkcdc.apply.targets.base``). Tables the image has no row of are emptied.

The fold needs each table's changes of one batch in the driver (a micro-batch's worth, not the
table's): bound it with the source's batch size when tables change in bulk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

from ..apply.errors import ApplySpecError
from ..apply.fold import DELETE_FLAG, OLD_KEY, TRUNCATE_FLAG, UNCHANGED, fold_changes
from ..apply.spec import DEFAULT_SEQUENCE, ApplySpec, ResolvedSpec
from ..apply.targets import ApplyTarget, TargetColumn, already_applied, target_for
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
    images: int = 0  # initial-snapshot batches applied (again, when re-executed) as the tables' whole image
    #: Driver seconds per phase: census (which tables, snapshot?), describe (the catalog), read (the
    #: typed view collected as Arrow: Spark's work), fold, write (target reads and the write itself).
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - started


@dataclass(frozen=True)
class _Census:
    """What one job learns of a batch before any table is applied."""

    tables: tuple[str, ...]  # "schema.table" of every table with row changes, sorted
    image_at: tuple[int, int, int] | None  # the batch is an initial snapshot taken at (commit_lsn, lsn, ordinal)


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

    def reconnect(self) -> None:
        """Let go of the target opened from its location; the next batch opens it again. After the
        server went away its connection is dead, and the restarted query must not inherit it."""
        if self._target is not None and self._target_location is not None:
            self._target.close()
            self._target = None
            self._prepared.clear()  # what was prepared on the old target is prepared again on the new one

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        persisted = batch.storageLevel == StorageLevel.NONE
        if persisted:
            batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            with self.stats.timed("census"):
                census = _census(batch)
            images = [self._apply_table(batch, batch_id, spec, census) for spec in self._specs_for(census)]
            self.stats.batches += 1
            self.stats.images += any(images)
        finally:
            if persisted:
                batch.unpersist()

    def _specs_for(self, census: _Census) -> list[ApplySpec]:
        specs = list(self.specs.values())
        if self.all_tables:
            # An image empties the tables it has no row of: every captured table takes part.
            names = set(census.tables) | (set(self._captured_tables()) if census.image_at is not None else set())
            names.discard(self._uncaptured_signal_table())  # streamed for its signals, not mirrored
            specs.extend(ApplySpec(table=name, **self.defaults) for name in sorted(names) if name not in self.specs)
        return specs

    def _uncaptured_signal_table(self) -> str | None:
        """The signal table, when the filters do not capture it: its rows are streamed (Debezium emits
        them) but they are the connector's own bookkeeping, not data to mirror."""
        from ..engine.filters import TableFilter
        from ..engine.signals import signal_table_of
        from .options import config_from_options

        config = config_from_options(self.properties)
        signal = signal_table_of(config)
        if signal is None or TableFilter(config)(*signal):
            return None
        return f"{signal[0]}.{signal[1]}"

    def _captured_tables(self) -> list[str]:
        from ..engine.connection import sql_connection
        from ..engine.setup import captured_tables
        from .options import config_from_options

        config = config_from_options(self.properties)
        with sql_connection(config, application_name="sparkcdc-apply") as conn:
            return [f"{schema}.{table}" for schema, table in captured_tables(conn, config)]

    def _apply_table(self, batch: DataFrame, batch_id: int, spec: ApplySpec, census: _Census) -> bool:
        """Apply one table's changes; True when they were applied as the table's image."""
        image = census.image_at is not None
        if not image and spec.qualified_table not in census.tables:
            return False
        with self.stats.timed("describe"):
            view = describe_table(self.properties, spec.qualified_table)
            resolved = spec.resolve([c.name for c in view.columns], view.keys)
        with self.stats.timed("write"):
            applied = self.target.applied_batch(resolved, self.pipeline_id)
        if already_applied(applied, batch_id, image=image):
            self.stats.applied_batches_skipped += 1
            return False
        changes = table_changes(batch, view)
        changes = changes.withColumn(DELETE_FLAG, _condition(spec.apply_as_deletes)).withColumn(
            TRUNCATE_FLAG, _condition(spec.apply_as_truncates)
        )
        wanted = list(dict.fromkeys([*resolved.columns, *resolved.sequence, DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED, OLD_KEY]))
        with self.stats.timed("read"):
            events = changes.select(*wanted).toArrow()
        replace_at = None
        if image and events.num_rows == 0:
            if resolved.scd_type == 2 and resolved.sequence != DEFAULT_SEQUENCE:
                log.warning("%s has no row in the initial snapshot, but its open versions cannot be closed at a "
                            "sequence_by of its own columns: they stay open", spec.qualified_table)
                return False
            replace_at = census.image_at if resolved.scd_type == 2 else None
        elif events.num_rows == 0:
            return False
        with self.stats.timed("write"):
            self._prepare(resolved, view, events)
            keys = _keys(events, resolved.keys)
            tombstones = self.target.tombstones(resolved, keys)
            # The old rows of primary-key changes whose create could not carry every column.
            old_keys = _old_keys(events, resolved.keys)
            stored = self.target.stored_rows(resolved, old_keys) if old_keys and resolved.scd_type == 1 else None
            open_versions = (self.target.open_versions(resolved, list(dict.fromkeys([*keys, *old_keys])))
                             if resolved.scd_type == 2 else None)
        with self.stats.timed("fold"):
            folded = fold_changes(resolved, events, tombstones=tombstones, open_versions=open_versions, image=image,
                                  replace_at=replace_at, stored=stored)
        with self.stats.timed("write"):
            written = self.target.apply(folded, pipeline_id=self.pipeline_id, batch_id=batch_id)
        if written:
            self.stats.events[resolved.target] = self.stats.events.get(resolved.target, 0) + folded.events
            self.stats.dropped_late += folded.dropped_late
            return folded.is_image
        self.stats.applied_batches_skipped += 1
        return False

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


def _census(batch: DataFrame) -> _Census:
    """The tables of the batch, and whether it is an initial snapshot (one job over the batch)."""
    changes = batch.where(F.col("op").isin(*CHANGE_OPS))
    if "snapshot" in batch.columns:
        initial = F.col("snapshot").isNotNull() & ~F.col("snapshot").isin("false", "incremental", "blocking")
        image_at = F.min(F.when(initial, F.struct("commit_lsn", "lsn", "ordinal")))
    else:  # a frame of the user's own, without the source's snapshot marker
        image_at = F.lit(None)
    rows = changes.groupBy("schema", "table").agg(image_at.alias("image_at")).collect()
    starts = [tuple(row["image_at"]) for row in rows if row["image_at"] is not None]
    return _Census(tuple(sorted(f"{row['schema']}.{row['table']}" for row in rows)), min(starts) if starts else None)


def _condition(expression: str | None) -> Any:
    return F.lit(False) if expression is None else F.coalesce(F.expr(expression), F.lit(False))


def _keys(events: pa.Table, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """The batch's distinct keys (a truncate has no row, so no key)."""
    rows = events.filter(pc.invert(events.column(TRUNCATE_FLAG)))
    return list(dict.fromkeys(zip(*(rows.column(k).to_pylist() for k in keys), strict=True)))


def _old_keys(events: pa.Table, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """The old keys of the batch's key-change creates that lack a column (unchanged TOAST)."""
    if OLD_KEY not in events.column_names or events.column(OLD_KEY).null_count == events.num_rows:
        return []
    found: dict[tuple[Any, ...], None] = {}
    for old, unchanged in zip(events.column(OLD_KEY).to_pylist(), events.column(UNCHANGED).to_pylist(), strict=True):
        if old and unchanged and all(k in old for k in keys):
            found[tuple(old[k] for k in keys)] = None
    return list(found)


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

