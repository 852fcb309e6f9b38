""":class:`ChangeApplier`, the ``foreachBatch`` function of ``apply_changes``, and
:func:`apply_changes` itself: per micro-batch, the census, each table's plan, one job that folds
and stages every table in the executors, and each table's commit (see the package's doc).
"""

from __future__ import annotations

import logging
import pickle
import uuid
from collections.abc import Mapping, Sequence
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql.streaming import DataStreamWriter

from ...apply.errors import ApplyError, ApplySpecError
from ...apply.evolution import Evolution
from ...apply.fold import DELETE_FLAG, OLD_KEY, TRUNCATE_FLAG, UNCHANGED, fold_arrow
from ...apply.spec import DEFAULT_SEQUENCE, ApplySpec, ResolvedSpec
from ...apply.staged import StagedBatch, StagedPart
from ...apply.target_column import TargetColumn
from ...apply.targets import ApplyTarget, already_applied, target_for
from ..outputs.changes.typed import BlockTyper, table_blocks, versioned_changes
from ..running_session import default_parallelism, job_description
from ..source.options import config_from_options
from ..views import TableView, describe_table, table_changes
from ..views.versions import lossy_columns, merged_view, view_of_description
from .census import Census, take_census
from .fold_input import arrow_schema_of, column_named, condition_flag
from .rereads import read_again
from .stage_task import STAGE_JOB, STAGE_JOB_TAG, SUMMARY, StageTask
from .stats import ApplyStats
from .table_plan import TablePlan, count_changes, typed_in_python, whole_from_census
from .target_setup import evolution_policy, target_columns, typed_fills

__all__ = ["ChangeApplier", "apply_changes"]

log = logging.getLogger(__name__)


class ChangeApplier:
    """The ``foreachBatch`` function. ``specs``: tables with their own parameters; with
    ``all_tables`` every other captured table found in a batch is applied with ``defaults``.
    ``events_per_partition``: a table's batch is split by key into one partition per that many
    events (at least ``defaultParallelism`` partitions once split; see ``sparkcdc.apply.changes.per.task``);
    by default the properties' ``sparkcdc.apply.changes.per.task`` (200,000). Splitting costs a
    shuffle of the typed changes (and, on frames other than the source's ``changes`` layout, a count
    and cache of them), which measured (local[2], 200,000 changes of a 6-column table, two batches,
    with the count) more than the executors' fold and COPY of those rows: about 3.5 s against 2.3 s
    unsplit. So a batch up to this size is folded by one task; a bigger one is split so that no task
    holds much more than this many."""

    #: The executors' function (a subclass may wrap it; it must be importable by the workers).
    stage_task: type[StageTask] = StageTask

    def __init__(
        self,
        target: str | ApplyTarget,
        properties: Mapping[str, str],
        *,
        pipeline_id: str,
        specs: Sequence[ApplySpec] = (),
        all_tables: bool = False,
        defaults: Mapping[str, Any] | None = None,
        events_per_partition: int | None = None,
    ) -> None:
        if not specs and not all_tables:
            raise ApplySpecError("name the tables to apply (specs) or apply all tables", prop="table")
        if not pipeline_id:
            raise ApplySpecError("a pipeline id is required (the checkpoint location is the usual one)", prop="pipeline_id")
        self._target_location = target if isinstance(target, str) else None
        self._target: ApplyTarget | None = None if isinstance(target, str) else target
        self.properties = dict(properties)
        self.pipeline_id = pipeline_id
        self.specs = {spec.qualified_table: spec for spec in specs}
        targets = [spec.target or spec.qualified_table for spec in specs]
        if len(set(targets)) != len(targets):
            raise ApplySpecError(f"two tables are applied to one target table: {sorted(targets)}", prop="target")
        self.all_tables = all_tables
        self.defaults = dict(defaults or {})
        if all_tables:
            ApplySpec(table="defaults.check", **self.defaults)  # parameters fail here, before any batch runs
        if events_per_partition is None:
            events_per_partition = config_from_options(properties).get_int("sparkcdc.apply.changes.per.task")
        if events_per_partition < 1:
            raise ApplySpecError(f"must be at least 1, not {events_per_partition}", prop="events_per_partition")
        self.events_per_partition = events_per_partition
        self.stats = ApplyStats()
        self._versions: dict[str, TableView] = {}  # a table version's view, by the digest of its description
        #: Per target table, the columns it was last prepared with and the evolution that prepared it.
        self._prepared: dict[str, tuple[tuple[TargetColumn, ...], Evolution]] = {}
        self.policy = evolution_policy(config_from_options(properties))
        self._parallelism: int | None = None  # the scheduler's default parallelism, once a split table asks

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
        plans: list[TablePlan] = []
        try:
            with self.stats.timed("census"):
                census = take_census(batch)
            self.stats.changes_by_batch[batch_id] = sum(census.changes.values())
            for spec in self._specs_for(census):
                plan = self._plan(batch, batch_id, spec, census)
                if plan is not None:
                    plans.append(plan)
            images = self._apply(batch, batch_id, plans, census) if plans else []
            self.stats.batches += 1
            self.stats.images += any(images)
        finally:
            for plan in plans:
                if plan.split and plan.changes is not None:
                    plan.changes.unpersist()
            if persisted:
                batch.unpersist()

    def _specs_for(self, census: Census) -> list[ApplySpec]:
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
        from ...engine.core.filters import TableFilter
        from ...engine.core.signals import signal_table_of

        config = config_from_options(self.properties)
        signal = signal_table_of(config)
        if signal is None or TableFilter(config)(*signal):
            return None
        return f"{signal[0]}.{signal[1]}"

    def _captured_tables(self) -> list[str]:
        from ...engine.connection import sql_connection
        from ...engine.setup import captured_tables

        config = config_from_options(self.properties)
        with sql_connection(config, application_name="sparkcdc-apply") as conn:
            return [f"{schema}.{table}" for schema, table in captured_tables(conn, config)]

    # -- 1. plan --------------------------------------------------------------------------------------

    def _plan(self, batch: DataFrame, batch_id: int, spec: ApplySpec, census: Census) -> TablePlan | None:
        """A table of the batch to apply, prepared in the target; None when there is nothing to do."""
        image = census.image_at is not None
        present = spec.qualified_table in census.tables
        if not image and not present:
            return None
        with self.stats.timed("describe"):
            versions = [(shape, self._version_view(shape, text)) for shape, text in census.versions.get(spec.qualified_table, ())]
            # A table the batch has no block of (an image empties it), or the columns layout: as the catalog has it now.
            view = merged_view([v for _, v in versions]) if versions else describe_table(self.properties, spec.qualified_table)
            resolved = spec.resolve([c.name for c in view.columns], view.keys)
            applied = self.target.applied_batch(resolved, self.pipeline_id)
        if already_applied(applied, batch_id, image=image):
            self.stats.applied_batches_skipped += 1
            return None
        if versions:
            typed = versioned_changes(batch, versions, view)
        else:
            typed = table_changes(batch, view, layout="changes" if census.blocks else None)
        typed = typed.withColumn(DELETE_FLAG, condition_flag(spec.apply_as_deletes)).withColumn(
            TRUNCATE_FLAG, condition_flag(spec.apply_as_truncates)
        )

        def selected(resolved: ResolvedSpec) -> DataFrame:
            wanted = list(dict.fromkeys([*resolved.columns, *resolved.sequence, DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED, OLD_KEY]))
            return typed.select(*[column_named(name) for name in wanted])

        changes = selected(resolved)
        schema = arrow_schema_of(changes)
        with self.stats.timed("describe"):
            columns, sequence = self._prepare(resolved, view, schema, batch, image=image)
        if view.uncertain and not image:
            read_again(self.properties, resolved, view.uncertain, "were renamed or dropped, which the stream could not tell (it "
                                                                  "read the table's shape after later DDL)")
        lossy = lossy_columns([v for _, v in versions], view) if len(versions) > 1 else ()
        if lossy and not image:
            read_again(self.properties, resolved, lossy, "changed type in the batch in a way that is not a widening: the values "
                                                         "PostgreSQL converted them to are in no WAL record")
        if [c.name for c in columns] != list(resolved.columns):  # the policy leaves columns out (ignore-new-columns, drop)
            resolved = spec.resolve([c.name for c in columns], view.keys)
            changes = selected(resolved)
            schema = arrow_schema_of(changes)
        if not present:
            return TablePlan(resolved, columns, sequence, schema, None, events=0)
        if census.changes.get(spec.qualified_table, 0) <= self.events_per_partition:
            return TablePlan(resolved, columns, sequence, schema, changes)
        if image and census.reads_only.get(spec.qualified_table, False) and self._keys_unique(spec):
            typer = BlockTyper(view) if census.blocks and len(versions) == 1 and typed_in_python(spec, view) else None
            return TablePlan(resolved, columns, sequence, schema, changes, events=census.changes[spec.qualified_table], chunked=True,
                             typer=typer)
        whole = whole_from_census(spec, census)
        if whole is not None:  # counted by the census: split by key without a counting job
            return TablePlan(resolved, columns, sequence, schema, changes, events=census.changes[spec.qualified_table], whole=whole)
        # Read by the count and by the staging job: the typed view is computed once.
        return TablePlan(resolved, columns, sequence, schema, changes.persist(StorageLevel.MEMORY_AND_DISK), split=True)

    def _keys_unique(self, spec: ApplySpec) -> bool:
        """Whether each key is read once by an initial snapshot: the keys are the event key's (the
        table's primary key or replica identity index), not columns the user named (``keys``,
        ``message.key.columns``), which may repeat."""
        return spec.keys is None and not config_from_options(self.properties).settings.message_key_columns

    def _version_view(self, shape: str, description: str) -> TableView:
        view = self._versions.get(shape)
        if view is None:
            view = self._versions[shape] = view_of_description(description, self.properties)
        return view

    def _prepare(self, resolved: ResolvedSpec, view: TableView, schema: pa.Schema, batch: DataFrame, *,
                 image: bool) -> tuple[list[TargetColumn], list[TargetColumn]]:
        """The target table made ready for the batch: created, or brought to the source's shape under
        the policy (:mod:`sparkcdc.apply.evolution`), once per shape; the columns the batch stages.
        Added columns whose older rows' values no WAL carries are read again: an incremental
        snapshot of the table is signalled (not for an image, which holds every row)."""
        columns, sequence = target_columns(resolved, view, schema)
        known = self._prepared.get(resolved.target)
        if known is not None and known[0] == tuple(columns):
            return list(known[1].columns), sequence
        evolution = self.target.prepare(resolved, typed_fills(batch.sparkSession, view, columns), sequence, self.policy,
                                        relation_id=view.relation_id)
        if evolution.reread and not image:
            read_again(self.properties, resolved, evolution.reread, "were added with values no WAL record carries (a volatile "
                                                                    "default, or the table was rewritten since)")
        self._prepared[resolved.target] = (tuple(columns), evolution)
        return list(evolution.columns), sequence

    # -- 2. fold and stage, 3. commit ----------------------------------------------------------------------

    def _apply(self, batch: DataFrame, batch_id: int, plans: list[TablePlan], census: Census) -> list[bool]:
        """Stage every table's changes in one job, then commit each table; per table, whether it was
        applied as its image."""
        image = census.image_at is not None
        split = [plan for plan in plans if plan.split]
        if split:
            with self.stats.timed("plan"):
                count_changes(split)
        typed = any(plan.typer is not None for plan in plans)
        summaries = self._stage(batch, batch_id, plans, image, typed=typed)
        refusals = [row["refused"] for row in summaries if row["refused"]]
        if refusals:
            # A value no Arrow kernel types exactly (a year past 9999, say): Spark SQL types the batch.
            # What the other tasks of the refused attempt staged is never committed (not collected here).
            log.warning("batch %s: %s", batch_id, refusals[0])
            summaries = self._stage(batch, batch_id, plans, image, typed=False)
        parts: dict[str, list[StagedPart]] = {}
        for row in summaries:
            part = pickle.loads(row["part"])
            parts.setdefault(row["target"], []).append(part)
            for step, seconds in part.seconds:
                self.stats.seconds[f"executors {step}"] = self.stats.seconds.get(f"executors {step}", 0.0) + seconds
        return [self._commit(plan, parts.get(plan.resolved.target, []), batch_id, census) for plan in plans]

    def _stage(self, batch: DataFrame, batch_id: int, plans: list[TablePlan], image: bool, *, typed: bool) -> list[Any]:
        """One job: every table's changes folded and staged by the executors; their summaries.
        ``typed``: plans with a typer stage their blocks, typed by the stage task."""
        location = self._target_location or self.target.location
        options = self.target.open_options()
        staging = []
        for plan in plans:
            if plan.changes is None or plan.events == 0:
                continue
            partitions = 1 if plan.events is None or plan.whole else -(-plan.events // self.events_per_partition)
            typing = typed and plan.typer is not None
            if plan.typer is not None and typed:  # the blocks as the source read them: no shuffle, and no typed row in the JVM
                frame = table_blocks(batch, plan.typer.view)
            elif plan.chunked:  # folded in the partitions that read it: no shuffle
                # Snapshot reads carry neither unchanged TOAST columns nor an old key (null in every
                # block): the JVM need not turn them into rows and back into Arrow for the stage task,
                # which puts them back (StageTask: nulls, or empty lists where the view cannot be null).
                frame = plan.changes.drop(UNCHANGED, OLD_KEY)
            elif partitions == 1:  # one task reads the changes (cached, when counted): no shuffle
                frame = plan.changes.coalesce(1)
            else:
                if self._parallelism is None:  # asked once: on Spark Connect it costs a small job
                    self._parallelism = max(1, default_parallelism(batch.sparkSession))
                frame = plan.changes.repartition(max(partitions, self._parallelism), *[column_named(k) for k in plan.resolved.keys])
            task = self.stage_task(location, options, plan, pipeline_id=self.pipeline_id, batch_id=batch_id, image=image, typed=typing)
            staging.append(frame.mapInArrow(task, SUMMARY))
        if not staging:
            return []
        with self.stats.timed("stage"):
            with job_description(batch.sparkSession, f"{STAGE_JOB} (batch {batch_id})", STAGE_JOB_TAG):
                return reduce(DataFrame.union, staging).collect()

    def _commit(self, plan: TablePlan, parts: list[StagedPart], batch_id: int, census: Census) -> bool:
        """Commit one table's staged parts; True when they were applied as the table's image."""
        resolved = plan.resolved
        if not parts:
            if census.image_at is None:
                return False
            # An image without a row of this table: the table is emptied (SCD2: its versions closed).
            if resolved.scd_type == 2 and resolved.sequence != DEFAULT_SEQUENCE:
                log.warning("%s has no row in the initial snapshot, but its open versions cannot be closed at a "
                            "sequence_by of its own columns: they stay open", resolved.spec.qualified_table)
                return False
            folded = fold_arrow(resolved, plan.schema.empty_table(), image=True,
                                replace_at=census.image_at if resolved.scd_type == 2 else None)
            parts = [self.target.stage(folded, pipeline_id=self.pipeline_id, batch_id=batch_id, tag=uuid.uuid4().hex)]
        staged = StagedBatch(resolved, tuple(parts))
        if plan.events is not None and staged.events != plan.events:
            raise ApplyError(f"batch {batch_id} of {resolved.spec.qualified_table}: the staged parts hold {staged.events} "
                             f"events, the batch {plan.events}")
        with self.stats.timed("commit"):
            written = self.target.commit(staged, pipeline_id=self.pipeline_id, batch_id=batch_id)
        if written:
            self.stats.events[resolved.target] = self.stats.events.get(resolved.target, 0) + staged.events
            self.stats.dropped_late += staged.dropped_late
            return staged.is_image
        self.stats.applied_batches_skipped += 1
        return False


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
