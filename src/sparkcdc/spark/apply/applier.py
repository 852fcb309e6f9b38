"""``apply_changes``: the ``postgres-cdc`` source applied to mirror tables, exactly once.

Each micro-batch runs in ``foreachBatch``; the driver plans and commits, executors move data:

1. **Plan (driver).** One job over the batch (persisted: the source would otherwise decode the WAL
   again for every job) finds its tables, about how many changes each has, and whether it is an
   initial snapshot. Per table: the catalog's description, the parameters resolved, the target's
   recorded batch (a batch at or below it is skipped: a batch Spark re-executes after a crash
   changes nothing), the target table and its staging prepared. A table's batch is split by key
   only when it is big (over ``sparkcdc.apply.changes.per.task`` changes), unless the fold needs the
   batch whole (a truncate, or a primary-key change whose new row lacks columns, unchanged TOAST, it
   must take from the old key's row). The census knows both for the source's ``changes`` layout (its
   block headers count them) and for snapshot reads; for other frames one more job, over the typed
   changes of every such table (``views.table_changes``, cached for the next step), counts them.
2. **Fold and stage (executors).** A table's typed changes go to one task (no shuffle), or, when
   split, are hash-partitioned by key into one partition per ``sparkcdc.apply.changes.per.task`` changes
   (at least ``defaultParallelism``), and ``mapInArrow`` runs :class:`StageTask` on each
   partition: it folds the partition's events against the target's state of their keys and
   stages the result in the target's staging under a tag of its own
   (:mod:`sparkcdc.apply.partition`), answering one small summary row. All tables' partitions run
   in one job; no change row reaches the driver.
3. **Commit (driver).** Per table, the target commits the staged parts of the tags the driver
   collected, atomically with the batch id, and removes the batch's staging (a failed or
   speculative task attempt's tag included: it is never committed).

The initial snapshot's batch is the tables' whole image: it replaces every applied table (rows the
image lacks are deleted, SCD2 versions closed), and it is applied again when Spark re-executes it,
because the source may then have taken a newer snapshot and streams on from that one (see
``sparkcdc.apply.targets.base``). Tables the image has no row of are emptied. A big table's image
keyed by the event key holds each key once, read by one chunk: it is folded and staged in the
partitions that read it, without the shuffle by key (``docs/apply-path.md``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming import DataStreamWriter

from ...apply.errors import ApplyError, ApplySpecError
from ...apply.evolution import Evolution, EvolutionPolicy
from ...apply.fold import DELETE_FLAG, OLD_KEY, TRUNCATE_FLAG, UNCHANGED, fold_arrow
from ...apply.partition import stage_partition, with_target
from ...apply.spec import DEFAULT_DELETES, DEFAULT_SEQUENCE, DEFAULT_TRUNCATES, ApplySpec, ResolvedSpec
from ...apply.staged import StagedBatch, StagedPart
from ...apply.targets import ApplyTarget, TargetColumn, already_applied, target_for
from ..changes_layout import BlockTyper, arrow_typable, table_blocks, versioned_changes
from ..options import config_from_options
from ..session import default_parallelism, job_description
from ..views import CHANGE_OPS, TableView, describe_table, table_changes
from ..views.kernels import KernelRefused
from ..views.versions import fill_expression, lossy_columns, merged_view, ordered_versions, view_of_description

__all__ = ["ApplyStats", "ChangeApplier", "StageTask", "apply_changes"]

log = logging.getLogger(__name__)


#: What a :class:`StageTask` answers per partition: the target table, the tag, counts, and the
#: pickled :class:`~sparkcdc.apply.staged.StagedPart`.
SUMMARY = T.StructType([
    T.StructField("target", T.StringType(), False), T.StructField("tag", T.StringType(), False),
    T.StructField("events", T.LongType(), False), T.StructField("dropped_late", T.LongType(), False),
    T.StructField("rows", T.LongType(), False), T.StructField("part", T.BinaryType(), False),
])
_SUMMARY_ARROW = pa.schema([("target", pa.string()), ("tag", pa.string()), ("events", pa.int64()), ("dropped_late", pa.int64()),
                            ("rows", pa.int64()), ("part", pa.binary())])


@dataclass
class ApplyStats:
    """Counts since the applier started (what ``make demo`` and the benchmarks print)."""

    batches: int = 0
    events: dict[str, int] = field(default_factory=dict)  # target table -> events applied
    applied_batches_skipped: int = 0
    dropped_late: int = 0
    images: int = 0  # initial-snapshot batches applied (again, when re-executed) as the tables' whole image
    #: batch id -> the row changes its census counted (on the changes layout a source row is a block
    #: of changes, so Spark's numInputRows counts blocks; the runner reports these instead)
    changes_by_batch: dict[int, int] = field(default_factory=dict)
    #: Driver seconds per phase: census (which tables, snapshot?), describe (the catalog and the
    #: target's position), plan (the count of each big table's typed changes), stage (the
    #: executors' fold and staging), commit (the target's commit of the staged rows); and
    #: "executors read/fold/stage": the executors' seconds of each step, summed over partitions.
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
    #: Per table, its changes as the source counts them (at least as many as its typed changes:
    #: the source's rows may include some the typed view leaves out).
    changes: Mapping[str, int] = field(default_factory=dict)
    #: Per table, the versions its changes were written for (the changes layout's blocks carry
    #: theirs; absent otherwise): (shape, description), oldest first (see ``ordered_versions``).
    versions: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    #: Per table, whether its changes are snapshot reads only (op ``r``; a block whose first change is
    #: a read holds only reads: blocks do not mix snapshot rows with streamed changes).
    reads_only: Mapping[str, bool] = field(default_factory=dict)
    #: Per table, from the changes layout's block headers: its (truncates, key changes, key changes
    #: lacking an unchanged TOASTed value); absent on other frames, whose typed changes are counted.
    fold_hints: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    blocks: bool = False  # the batch is the source's changes layout (blocks of typed changes)


@dataclass
class _Plan:
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


class StageTask:
    """The function ``mapInArrow`` runs on each partition of a table's changes, in an executor:
    fold the partition's events against the target and stage the result (see the module doc)."""

    def __init__(self, location: str, options: dict[str, Any], plan: _Plan, *, pipeline_id: str, batch_id: int,
                 image: bool, typed: bool = False) -> None:
        self.location = location
        self.options = options
        self.resolved = plan.resolved
        self.columns = plan.columns
        self.sequence = plan.sequence
        self.schema = plan.schema
        self.pipeline_id = pipeline_id
        self.batch_id = batch_id
        self.image = image
        #: typed: the partition holds the table's blocks, typed here (``plan.typer``), not typed rows.
        self.typer = plan.typer if typed else None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        started = time.perf_counter()
        if self.typer is not None:
            batches = self._flagged(self.typer(batches))
        gathered = [batch for batch in batches if batch.num_rows]
        if not gathered:
            return
        typing = time.perf_counter() - started  # the blocks' decoding and typing, when typed here
        table = pa.Table.from_batches(gathered)
        for wanted in self.schema:
            if wanted.name not in table.column_names:  # left out by the driver (see ChangeApplier._apply)
                table = table.append_column(wanted, _carried_by_no_row(wanted, table.num_rows))
        events = table.select(self.schema.names).cast(self.schema)
        part = with_target(self.location, self.options, lambda target: stage_partition(
            target, self.resolved, self.columns, self.sequence, events, pipeline_id=self.pipeline_id, batch_id=self.batch_id,
            image=self.image))
        if self.typer is not None:
            part = dataclasses.replace(part, seconds=(*part.seconds, ("type", typing)))
        yield pa.RecordBatch.from_pylist([{
            "target": self.resolved.target, "tag": part.tag, "events": part.events, "dropped_late": part.dropped_late,
            "rows": sum(part.rows_per_segment), "part": pickle.dumps(part),
        }], schema=_SUMMARY_ARROW)

    def _flagged(self, typed: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The typed changes with the delete and truncate flags of the default conditions (a plan
        gets a typer only with those: another condition is a Spark SQL expression)."""
        spec = self.resolved.spec
        for batch in typed:
            op = batch.column("__op")
            flags = [pc.equal(op, "d") if spec.apply_as_deletes is not None else pa.repeat(False, batch.num_rows),
                     pc.equal(op, "t") if spec.apply_as_truncates is not None else pa.repeat(False, batch.num_rows)]
            yield pa.RecordBatch.from_arrays([*batch.columns, *flags], names=[*batch.schema.names, DELETE_FLAG, TRUNCATE_FLAG])


def _carried_by_no_row(field: pa.Field, size: int) -> pa.Array:
    """A column no row carries a value of: nulls, or empty lists where the column cannot be null
    (``__unchanged`` as the typed view of the ``columns`` layout has it)."""
    if field.nullable:
        return pa.nulls(size, field.type)
    if pa.types.is_list(field.type):
        return pa.ListArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), size + 1), pa.array([], field.type.value_type)).cast(field.type)
    raise ApplyError(f"the stage task lacks the column {field.name} ({field.type}), which cannot be null")


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
            raise ApplySpecError("table", "name the tables to apply (specs) or apply all tables")
        if not pipeline_id:
            raise ApplySpecError("pipeline_id", "a pipeline id is required (the checkpoint location is the usual one)")
        self._target_location = target if isinstance(target, str) else None
        self._target: ApplyTarget | None = None if isinstance(target, str) else target
        self.properties = dict(properties)
        self.pipeline_id = pipeline_id
        self.specs = {spec.qualified_table: spec for spec in specs}
        targets = [spec.target or spec.qualified_table for spec in specs]
        if len(set(targets)) != len(targets):
            raise ApplySpecError("target", f"two tables are applied to one target table: {sorted(targets)}")
        self.all_tables = all_tables
        self.defaults = dict(defaults or {})
        if all_tables:
            ApplySpec(table="defaults.check", **self.defaults)  # parameters fail here, before any batch runs
        if events_per_partition is None:
            events_per_partition = config_from_options(properties).get_int("sparkcdc.apply.changes.per.task")
        if events_per_partition < 1:
            raise ApplySpecError("events_per_partition", f"must be at least 1, not {events_per_partition}")
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
        plans: list[_Plan] = []
        try:
            with self.stats.timed("census"):
                census = _census(batch)
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
        from ...engine.filters import TableFilter
        from ...engine.signals import signal_table_of

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

    def _plan(self, batch: DataFrame, batch_id: int, spec: ApplySpec, census: _Census) -> _Plan | None:
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
        typed = typed.withColumn(DELETE_FLAG, _condition(spec.apply_as_deletes)).withColumn(
            TRUNCATE_FLAG, _condition(spec.apply_as_truncates)
        )

        def selected(resolved: ResolvedSpec) -> DataFrame:
            wanted = list(dict.fromkeys([*resolved.columns, *resolved.sequence, DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED, OLD_KEY]))
            return typed.select(*[_column(name) for name in wanted])

        changes = selected(resolved)
        schema = _arrow_schema(changes)
        with self.stats.timed("describe"):
            columns, sequence = self._prepare(resolved, view, schema, batch, image=image)
        if view.uncertain and not image:
            self._read_again(resolved, view.uncertain, "were renamed or dropped, which the stream could not tell (it read the "
                                                       "table's shape after later DDL)")
        lossy = lossy_columns([v for _, v in versions], view) if len(versions) > 1 else ()
        if lossy and not image:
            self._read_again(resolved, lossy, "changed type in the batch in a way that is not a widening: the values PostgreSQL "
                                              "converted them to are in no WAL record")
        if [c.name for c in columns] != list(resolved.columns):  # the policy leaves columns out (ignore-new-columns, drop)
            resolved = spec.resolve([c.name for c in columns], view.keys)
            changes = selected(resolved)
            schema = _arrow_schema(changes)
        if not present:
            return _Plan(resolved, columns, sequence, schema, None, events=0)
        if census.changes.get(spec.qualified_table, 0) <= self.events_per_partition:
            return _Plan(resolved, columns, sequence, schema, changes)
        if image and census.reads_only.get(spec.qualified_table, False) and self._keys_unique(spec):
            typer = BlockTyper(view) if census.blocks and len(versions) == 1 and _typed_in_python(spec, view) else None
            return _Plan(resolved, columns, sequence, schema, changes, events=census.changes[spec.qualified_table], chunked=True,
                         typer=typer)
        whole = _whole_from_census(spec, census)
        if whole is not None:  # counted by the census: split by key without a counting job
            return _Plan(resolved, columns, sequence, schema, changes, events=census.changes[spec.qualified_table], whole=whole)
        # Read by the count and by the staging job: the typed view is computed once.
        return _Plan(resolved, columns, sequence, schema, changes.persist(StorageLevel.MEMORY_AND_DISK), split=True)

    def _keys_unique(self, spec: ApplySpec) -> bool:
        """Whether each key is read once by an initial snapshot: the keys are the event key's (the
        table's primary key or replica identity index), not columns the user named (``keys``,
        ``message.key.columns``), which may repeat."""
        from ..options import config_from_options

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
            self._read_again(resolved, evolution.reread, "were added with values no WAL record carries (a volatile default, "
                                                         "or the table was rewritten since)")
        self._prepared[resolved.target] = (tuple(columns), evolution)
        return list(evolution.columns), sequence

    def _read_again(self, resolved: ResolvedSpec, columns: Sequence[str], why: str) -> None:
        """Signal an incremental snapshot of the source table, whose rows' values of ``columns`` the
        mirror cannot have from the stream (``why``)."""
        from ...engine.signal_channels import enabled_channels, open_channel
        from ...engine.signals import READ_AGAIN, Signal

        table = resolved.spec.qualified_table
        config = config_from_options(self.properties)
        usable = [name for name in enabled_channels(config)
                  if name != "source" or config.get("signal.data.collection")]
        if not usable:
            raise ApplyError(
                f"column(s) {', '.join(columns)} of {table} {why}: the mirror {resolved.target} must read the table again, and "
                f"sparkcdc asks for that with an incremental snapshot signal, but no signal channel is set up: set "
                f"signal.data.collection (the source channel), or enable the file or kafka channel (signal.enabled.channels), "
                f"and restart the run", table=table)
        data = {"data-collections": [table], "type": "incremental", READ_AGAIN: True}
        signal = Signal(f"sparkcdc-reread-{uuid.uuid4().hex[:12]}", "execute-snapshot", json.dumps(data), usable[0])
        channel = open_channel(config, usable[0])
        try:
            where = channel.send(signal)
        finally:
            channel.close()
        log.warning("%s: column(s) %s %s; an incremental snapshot of the table reads them again (signal %s through %s)",
                    table, ", ".join(columns), why, signal.id, where)

    def _count(self, plans: list[_Plan]) -> None:
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

    # -- 2. fold and stage, 3. commit ----------------------------------------------------------------------

    def _apply(self, batch: DataFrame, batch_id: int, plans: list[_Plan], census: _Census) -> list[bool]:
        """Stage every table's changes in one job, then commit each table; per table, whether it was
        applied as its image."""
        image = census.image_at is not None
        split = [plan for plan in plans if plan.split]
        if split:
            with self.stats.timed("plan"):
                self._count(split)
        typed = any(plan.typer is not None for plan in plans)
        try:
            summaries = self._stage(batch, batch_id, plans, image, typed=typed)
        except Exception as exc:
            if not typed or KernelRefused.MARKER not in str(exc):
                raise
            # A value no Arrow kernel types exactly (a year past 9999, say): Spark SQL types the batch.
            # The refused attempts' staging is never committed (their tags are not collected).
            refusal = next((line.strip() for line in str(exc).splitlines() if KernelRefused.MARKER in line), KernelRefused.MARKER)
            log.warning("batch %s: %s", batch_id, refusal)
            summaries = self._stage(batch, batch_id, plans, image, typed=False)
        parts: dict[str, list[StagedPart]] = {}
        for row in summaries:
            part = pickle.loads(row["part"])
            parts.setdefault(row["target"], []).append(part)
            for step, seconds in part.seconds:
                self.stats.seconds[f"executors {step}"] = self.stats.seconds.get(f"executors {step}", 0.0) + seconds
        return [self._commit(plan, parts.get(plan.resolved.target, []), batch_id, census) for plan in plans]

    def _stage(self, batch: DataFrame, batch_id: int, plans: list[_Plan], image: bool, *, typed: bool) -> list[Any]:
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
                frame = plan.changes.repartition(max(partitions, self._parallelism), *[_column(k) for k in plan.resolved.keys])
            task = self.stage_task(location, options, plan, pipeline_id=self.pipeline_id, batch_id=batch_id, image=image, typed=typing)
            staging.append(frame.mapInArrow(task, SUMMARY))
        if not staging:
            return []
        with self.stats.timed("stage"):
            with job_description(batch.sparkSession, f"{STAGE_JOB} (batch {batch_id})", STAGE_JOB_TAG):
                return reduce(DataFrame.union, staging).collect()

    def _commit(self, plan: _Plan, parts: list[StagedPart], batch_id: int, census: _Census) -> bool:
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


#: The description of the job whose tasks fold and stage (the Spark UI and event log show it).
STAGE_JOB = "sparkcdc apply: fold and stage"


#: The tag of that job on Spark Connect, whose clients cannot describe jobs.
STAGE_JOB_TAG = "sparkcdc-apply-fold-and-stage"


def target_columns(resolved: ResolvedSpec, view: Any, schema: pa.Schema) -> tuple[list[TargetColumn], list[TargetColumn]]:
    """The target's columns and sequence columns of a table: their Arrow types as the typed changes
    (``schema``) have them, PostgreSQL types, nullability and source identity as its view says."""
    by_name = {c.name: c for c in view.columns}
    columns = [
        TargetColumn(name, schema.field(name).type, by_name[name].pg_type, by_name[name].nullable, attnum=by_name[name].attnum,
                     fill_known=by_name[name].fill_known or by_name[name].dropped, dropped=by_name[name].dropped)
        for name in resolved.columns
    ]
    sequence = [TargetColumn(name, schema.field(name).type, None, False) for name in resolved.sequence]
    return columns, sequence


def typed_fills(spark: Any, view: TableView, columns: Sequence[TargetColumn]) -> list[TargetColumn]:
    """``columns`` with the value (as the target stores it) that rows older than each take, where
    PostgreSQL gave them one (:attr:`ViewColumn.fill`): one small Spark job types them all with
    their codecs, as the changes are typed."""
    by_name = {c.name: c for c in view.columns}
    expressions = {c.name: fill_expression(by_name[c.name]) for c in columns}
    wanted = {name: text for name, text in expressions.items() if text is not None}
    if not wanted:
        return list(columns)
    row = spark.range(1).selectExpr(*[f"{text} AS {_quoted(name)}" for name, text in wanted.items()]).toArrow()
    return [dataclasses.replace(c, fill=row.column(c.name)[0].cast(c.arrow_type).as_py()) if c.name in wanted else c
            for c in columns]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _census(batch: DataFrame) -> _Census:
    """The tables of the batch, their changes, and whether it is an initial snapshot: one job over
    the batch's header columns, without a shuffle. Each partition summarises its own rows per table
    (:class:`_PartialCensus`, in Arrow); the driver merges the summaries (a row per partition and
    table, however many changes the batch holds). Measured against a Spark aggregation (1,000,000-row
    image, 10 chunks, local[2]): the aggregation's shuffle made two more jobs after the one that reads
    and persists the batch, about 1 to 1.4 s; here the summaries come from the reading job itself."""
    columns = set(batch.columns)
    blocks = "rows" in columns and "block" in columns  # a row is a change; in the changes layout a block of ``rows``
    summarise = _PartialCensus(blocks=blocks, snapshots="snapshot" in columns, shapes=blocks and "description" in columns,
                               hinted=blocks and set(HINT_COLUMNS) <= columns)
    rows = batch.select(*summarise.columns).mapInArrow(summarise, _CENSUS_SCHEMA).collect()
    image_at: dict[str, tuple[int, int, int]] = {}
    counts: dict[str, int] = {}
    versions: dict[str, dict[str, tuple[str, bool, tuple[int, int, int]]]] = {}
    reads: dict[str, bool] = {}
    hints: dict[str, list[int]] = {}
    for row in rows:
        table = f"{row['schema']}.{row['table']}"
        counts[table] = counts.get(table, 0) + int(row["changes"])
        found_versions = versions.setdefault(table, {})
        for version in row["versions"] or ():
            at = (int(version["commit_lsn"]), int(version["lsn"]), int(version["ordinal"]))
            known = found_versions.get(version["shape"])
            if known is not None:
                at = max(at, known[2])
            only_reads = bool(version["reads_only"]) and (known is None or known[1])
            found_versions[version["shape"]] = (version["description"], only_reads, at)
        reads[table] = reads.get(table, True) and bool(row["reads_only"])
        if row["image_commit_lsn"] is not None:
            at = (int(row["image_commit_lsn"]), int(row["image_lsn"]), int(row["image_ordinal"]))
            image_at[table] = min(at, image_at.get(table, at))
        if summarise.hinted:
            found = hints.setdefault(table, [0] * len(HINT_COLUMNS))
            for index, name in enumerate(HINT_COLUMNS):
                found[index] += int(row[name])
    starts = list(image_at.values())
    return _Census(tuple(sorted(counts)), min(starts) if starts else None, counts,
                   {table: ordered_versions(found) for table, found in versions.items() if found}, reads,
                   {table: (found[0], found[1], found[2]) for table, found in hints.items()}, blocks)


#: What :class:`_PartialCensus` answers: per partition and table.
_CENSUS_SCHEMA = T.StructType([
    T.StructField("schema", T.StringType()), T.StructField("table", T.StringType()),
    T.StructField("changes", T.LongType(), False),
    T.StructField("versions", T.ArrayType(T.StructType([
        T.StructField("shape", T.StringType()), T.StructField("description", T.StringType()),
        T.StructField("reads_only", T.BooleanType()), T.StructField("commit_lsn", T.LongType()),
        T.StructField("lsn", T.LongType()), T.StructField("ordinal", T.LongType()),
    ]))),
    T.StructField("reads_only", T.BooleanType(), False),
    T.StructField("image_commit_lsn", T.LongType()), T.StructField("image_lsn", T.LongType()), T.StructField("image_ordinal", T.LongType()),
    T.StructField("truncates", T.LongType(), False), T.StructField("key_changes", T.LongType(), False),
    T.StructField("partial_key_changes", T.LongType(), False),
])
_CENSUS_ARROW = to_arrow_schema(_CENSUS_SCHEMA)


@dataclass(frozen=True)
class _PartialCensus:
    """The ``mapInArrow`` function of :func:`_census`: one partition's row changes summarised per
    table. ``blocks``: a row is a block of ``rows`` changes; ``snapshots``: the frame has the source's
    snapshot marker (an initial snapshot's rows give the image's start: its least position);
    ``shapes``/``hinted``: the blocks carry their shape and fold hints."""

    blocks: bool
    snapshots: bool
    shapes: bool
    hinted: bool

    @property
    def columns(self) -> list[str]:
        names = ["schema", "table", "op"]
        if self.snapshots:
            names += ["snapshot", "commit_lsn", "lsn", "ordinal"]
        if self.blocks:
            names.append("rows")
        if self.shapes:
            names += ["shape", "description"]
            if not self.snapshots:
                names += ["commit_lsn", "lsn", "ordinal"]
        if self.hinted:
            names += list(HINT_COLUMNS)
        return names

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept = [batch for batch in batches if batch.num_rows]
        if not kept:
            return
        rows = pa.Table.from_batches(kept)
        rows = rows.filter(pc.is_in(rows.column("op"), pa.array(CHANGE_OPS)))
        if not rows.num_rows:
            return
        size = rows.num_rows
        rows = rows.append_column("__changes", rows.column("rows").cast(pa.int64()) if self.blocks else pa.repeat(pa.scalar(1, pa.int64()), size))
        rows = rows.append_column("__read", pc.equal(rows.column("op"), "r"))
        aggregates: list[tuple[str, str]] = [("__changes", "sum"), ("__read", "all")]
        aggregates += [(name, "sum") for name in HINT_COLUMNS] if self.hinted else []
        grouped = rows.group_by(["schema", "table"]).aggregate(aggregates).to_pylist()
        versions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        if self.shapes:
            # Per version of a table: its description, whether its blocks are all snapshot reads, and
            # its newest block's position (the last of each group once sorted by position).
            ordered = rows.sort_by([("commit_lsn", "ascending"), ("lsn", "ascending"), ("ordinal", "ascending")])
            last = ordered.group_by(["schema", "table", "shape"], use_threads=False).aggregate(
                [("description", "last"), ("__read", "all"), ("commit_lsn", "last"), ("lsn", "last"), ("ordinal", "last")])
            for version in last.to_pylist():
                versions.setdefault((version["schema"], version["table"]), []).append({
                    "shape": version["shape"], "description": version["description_last"], "reads_only": version["__read_all"],
                    "commit_lsn": version["commit_lsn_last"], "lsn": version["lsn_last"], "ordinal": version["ordinal_last"]})
        starts: dict[tuple[str, str], dict[str, Any]] = {}
        if self.snapshots:
            marker = rows.column("snapshot")
            initial = pc.and_(pc.is_valid(marker), pc.invert(pc.is_in(marker, pa.array(["false", "incremental", "blocking"]))))
            images = rows.filter(pc.fill_null(initial, False)).sort_by([("commit_lsn", "ascending"), ("lsn", "ascending"), ("ordinal", "ascending")])
            firsts = images.group_by(["schema", "table"], use_threads=False).aggregate(
                [("commit_lsn", "first"), ("lsn", "first"), ("ordinal", "first")])
            starts = {(row["schema"], row["table"]): row for row in firsts.to_pylist()}
        out = []
        for group in grouped:
            start = starts.get((group["schema"], group["table"]), {})
            out.append({
                "schema": group["schema"], "table": group["table"], "changes": group["__changes_sum"] or 0,
                "versions": versions.get((group["schema"], group["table"]), []), "reads_only": bool(group["__read_all"]),
                "image_commit_lsn": start.get("commit_lsn_first"), "image_lsn": start.get("lsn_first"),
                "image_ordinal": start.get("ordinal_first"),
                **{name: group.get(f"{name}_sum") or 0 for name in HINT_COLUMNS},
            })
        yield pa.RecordBatch.from_pylist(out, schema=_CENSUS_ARROW)


#: The changes layout's block-header counts that tell whether a table's batch must be folded whole.
HINT_COLUMNS = ("truncates", "key_changes", "partial_key_changes")


def evolution_policy(config: Any) -> EvolutionPolicy:
    """The schema evolution policy the properties set (``sparkcdc.apply.schema.*``)."""
    return EvolutionPolicy(config.get("sparkcdc.apply.schema.evolution") or "evolve",
                           config.get("sparkcdc.apply.schema.dropped.columns") or "keep")


def _whole_from_census(spec: ApplySpec, census: _Census) -> bool | None:
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


def _typed_in_python(spec: ApplySpec, view: Any) -> bool:
    """Whether the stage task can type the table's blocks: the delete and truncate conditions are
    the defaults (or none; another is a Spark SQL expression) and every codec has an Arrow kernel."""
    return (spec.apply_as_deletes in (None, DEFAULT_DELETES) and spec.apply_as_truncates in (None, DEFAULT_TRUNCATES)
            and arrow_typable(view))


def _condition(expression: str | None) -> Any:
    return F.lit(False) if expression is None else F.coalesce(F.expr(expression), F.lit(False))


def _column(name: str) -> Any:
    """A top-level column by its name, whatever characters it holds."""
    return F.col("`" + name.replace("`", "``") + "`")


def _arrow_schema(frame: DataFrame) -> pa.Schema:
    """The Arrow schema of ``frame``'s rows as the fold reads them (as ``toArrow`` would give them)."""
    large = frame.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true"
    return to_arrow_schema(frame.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC", prefers_large_types=large)


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

