"""``sparkcdc-apply``: ``apply_changes``'s targets (PostgreSQL, Delta, Iceberg) as a streaming sink of
a Python data source, for what cannot run ``foreachBatch``: a Declarative Pipelines sink
(``dp.create_sink(name, format="sparkcdc-apply", options=...)`` with ``@dp.append_flow``), or any
``writeStream.format("sparkcdc-apply")``.

One sink applies one table. Its input is the table's typed changes (``views.table_changes``)
prepared by :func:`apply_input`: the delete and truncate flags evaluated (Spark SQL expressions, so
in the query) and the whole micro-batch in one partition. Then, per micro-batch, as
``apply_changes`` does (docs/apply-path.md), with the same code (:mod:`sparkcdc.apply.partition`,
the targets' ``stage`` and ``commit``):

* **the driver**, when the query starts (:class:`ApplyStreamWriter` is made there): the table
  described, the parameters resolved, the target table and its staging prepared;
* **the executor** of the partition (``write``): folds the batch's events against the target's
  state of their keys and stages the result under a tag of its own; its commit message is the
  staged part;
* **the driver** (``commit(messages, batch_id)``): one target commit of the staged parts with the
  batch id, atomically; a batch at or below the recorded one changes nothing (a re-executed batch).

What differs from ``apply_changes``: a batch is never split by key (one task folds it), and a
batch is applied as the table's *image* (target rows the initial snapshot lacks deleted, as
``apply_changes`` does) only when it holds the table's **whole** initial snapshot. The sink's
micro-batches are those of the flow that feeds it (e.g. over a streaming table), not the source's,
and it sees one table: it cannot use the source's batch marker as ``apply_changes``'s census does.
It reads the rows' own marks instead (:func:`whole_snapshot`): Debezium's snapshot markers
(``__snapshot``: the table's first row ``first``/``first_in_data_collection``, its last
``last_in_data_collection``/``last``) and the ordinal (``__ordinal``: a table's first row of chunk 0
is at position 0). A batch with only part of the snapshot is applied as upserts, and a table
empty at the snapshot sends the sink no row at all, so its target is not emptied (see
docs/declarative-pipelines.md). The positions are recorded under the ``pipeline_id`` option (give
each sink its own).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ...apply.errors import ApplyError, ApplySpecError
from ...apply.fold import DELETE_FLAG, OLD_KEY, TRUNCATE_FLAG, UNCHANGED
from ...apply.partition import stage_partition, with_target
from ...apply.spec import DEFAULT_DELETES, DEFAULT_TRUNCATES, ApplySpec
from ...apply.staged import StagedBatch, StagedPart
from ...apply.targets import target_for
from ...engine.core.snapshot import ORDINAL_TABLE_SHIFT

__all__ = ["APPLY_SINK_FORMAT", "ApplyDataSource", "ApplyStreamWriter", "apply_input", "apply_sink_options", "register_apply_sink",
           "whole_snapshot"]

#: The data source's name (``format``).
APPLY_SINK_FORMAT = "sparkcdc-apply"

_PARAMETERS_OPTION = "sparkcdc.apply.parameters"  # ApplySpec's parameters, as JSON
_BATCH_ID_PROPERTY = "streaming.sql.batchId"  # the micro-batch of a task (Spark sets it for micro-batch queries)
_MARKER, _ORDINAL = "__snapshot", "__ordinal"  # the typed view's snapshot marker and ordinal
_NOT_INITIAL = pa.array(["false", "incremental", "blocking"])  # markers of rows that are no initial snapshot's
_STARTS, _ENDS = pa.array(["first", "first_in_data_collection"]), pa.array(["last", "last_in_data_collection"])


def whole_snapshot(events: pa.Table) -> bool:
    """Whether ``events`` (one table's batch, with ``__snapshot`` and ``__ordinal``) holds the table's
    whole initial snapshot: its first row (a start marker, or the position 0 of its ordinals: the first
    row of chunk 0) and its last (an end marker; Debezium's markers are exact, see
    :mod:`sparkcdc.engine.core.snapshot`). A one-row table marked only ``first`` (the first table, not the
    last) is not known whole: applied as upserts."""
    if _MARKER not in events.column_names or _ORDINAL not in events.column_names:
        return False
    markers = events.column(_MARKER)
    initial = events.filter(pc.and_(pc.is_valid(markers), pc.invert(pc.is_in(markers, value_set=_NOT_INITIAL))))
    if initial.num_rows == 0:
        return False
    markers = initial.column(_MARKER)
    if not pc.any(pc.is_in(markers, value_set=_ENDS)).as_py():
        return False
    positions = pc.bit_wise_and(initial.column(_ORDINAL).cast(pa.int64()), pa.scalar((1 << ORDINAL_TABLE_SHIFT) - 1, pa.int64()))
    return bool(pc.any(pc.is_in(markers, value_set=_STARTS)).as_py() or pc.any(pc.equal(positions, 0)).as_py())


def apply_sink_options(target: str, table: str, properties: Mapping[str, str], *, pipeline_id: str,
                       **parameters: Any) -> dict[str, str]:
    """The sink's options: the ``target`` location (``postgresql://...``, a Delta or Iceberg location),
    the source ``table`` ("schema.table"), the connector ``properties`` (the table is described with
    them), the ``pipeline_id`` its batches are recorded under, and ``parameters`` as for
    ``apply_changes`` (``keys``, ``stored_as_scd_type``, ``target``...: JSON-serialisable values)."""
    from ..source.options import options_for

    return {"target": target, "table": table, "pipeline_id": pipeline_id, **options_for(properties),
            _PARAMETERS_OPTION: json.dumps(parameters)}


def apply_input(changes: DataFrame, *, apply_as_deletes: str | None = DEFAULT_DELETES,
                apply_as_truncates: str | None = DEFAULT_TRUNCATES) -> DataFrame:
    """What a flow into the sink returns: ``changes`` (one table's typed changes) with the delete and
    truncate flags the fold reads, in one partition. No analysis: it can run in a pipeline's query
    function. Give the same ``apply_as_deletes`` / ``apply_as_truncates`` as the sink's parameters.

    A ``select``, not ``withColumn``: in a pipeline (pyspark 4.3), a flow whose plan holds a
    ``withColumn`` loses its dependency on the pipeline's tables once they exist in the catalog, and
    starts before them in the next run (docs/declarative-pipelines.md, "Flow order")."""
    from ..apply.fold_input import condition_flag

    flagged = changes.select("*", condition_flag(apply_as_deletes).alias(DELETE_FLAG),
                             condition_flag(apply_as_truncates).alias(TRUNCATE_FLAG))
    return flagged.coalesce(1)


def register_apply_sink(spark: Any) -> None:
    """Register ``sparkcdc-apply`` on ``spark`` (a classic or Spark Connect session)."""
    spark.dataSource.register(ApplyDataSource)


class ApplyDataSource(DataSource):
    """The ``sparkcdc-apply`` data source: a streaming writer only."""

    @classmethod
    def name(cls) -> str:
        return APPLY_SINK_FORMAT

    def streamWriter(self, schema: StructType, overwrite: bool) -> ApplyStreamWriter:  # noqa: N802 - PySpark's name
        return ApplyStreamWriter(dict(self.options), schema)


@dataclass
class AppliedPart(WriterCommitMessage):
    """An executor's staged part of a micro-batch (None: its partition had no change)."""

    part: StagedPart | None


class ApplyStreamWriter(DataSourceStreamArrowWriter):
    """Made on the driver when the query starts (it prepares the target there), then pickled to the
    executors for ``write``; ``commit`` runs on the driver. It holds no connection: executors open
    the target once per Python worker (:func:`sparkcdc.apply.partition.with_target`)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..apply.target_setup import evolution_policy, target_columns
        from ..source.options import config_from_options, properties_from_options
        from ..views.describe import describe_table

        lowered = {key.lower(): value for key, value in options.items()}
        missing = [name for name in ("target", "table", "pipeline_id") if not lowered.get(name)]
        if missing:
            raise ApplySpecError(f"the {APPLY_SINK_FORMAT} sink needs the option {missing[0]!r} "
                                             "(apply_sink_options builds them)", prop=missing[0])
        self.location = lowered["target"]
        self.pipeline_id = lowered["pipeline_id"]
        properties, _ = properties_from_options({k: v for k, v in options.items() if k.lower() not in ("target", "table", "pipeline_id", _PARAMETERS_OPTION)})
        parameters = json.loads(lowered.get(_PARAMETERS_OPTION) or "{}")
        spec = ApplySpec(table=lowered["table"], **parameters)
        view = describe_table(properties, spec.qualified_table)
        self.resolved = spec.resolve([c.name for c in view.columns], view.keys)
        wanted = list(dict.fromkeys([*self.resolved.columns, *self.resolved.sequence, DELETE_FLAG, TRUNCATE_FLAG, UNCHANGED, OLD_KEY]))
        absent = [name for name in wanted if name not in schema.fieldNames()]
        if absent:
            raise ApplySpecError(f"the {APPLY_SINK_FORMAT} sink of {spec.qualified_table} needs the columns "
                                          f"{absent}: feed it table_changes(...) through apply_input(...)", prop="input")
        arrow = to_arrow_schema(schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC", prefers_large_types=False)
        self.schema = pa.schema([arrow.field(name) for name in wanted])
        self.columns, self.sequence = target_columns(self.resolved, view, self.schema)
        #: The input carries the rows' snapshot marks (table_changes does): a batch may be the table's image.
        self.marked = {_MARKER, _ORDINAL} <= set(schema.fieldNames())
        target = target_for(self.location)
        try:
            evolution = target.prepare(self.resolved, self.columns, self.sequence, evolution_policy(config_from_options(properties)),
                                       relation_id=view.relation_id)
            self.columns = list(evolution.columns)
            self.open_options = target.open_options()
        finally:
            target.close()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> AppliedPart:
        """Fold and stage this partition's events (an executor)."""
        from pyspark import TaskContext

        gathered = [batch for batch in iterator if batch.num_rows]
        if not gathered:
            return AppliedPart(None)
        context = TaskContext.get()
        batch_id = context.getLocalProperty(_BATCH_ID_PROPERTY) if context is not None else None
        if not batch_id:
            raise ApplyError(f"the {APPLY_SINK_FORMAT} sink runs in micro-batch streaming queries only (no {_BATCH_ID_PROPERTY})")
        batch = pa.Table.from_batches(gathered)
        image = self.marked and whole_snapshot(batch)
        events = batch.select(self.schema.names).cast(self.schema)
        part = with_target(self.location, self.open_options, lambda target: stage_partition(
            target, self.resolved, self.columns, self.sequence, events, pipeline_id=self.pipeline_id, batch_id=int(batch_id),
            image=image))
        return AppliedPart(part)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """Apply the staged parts and record the batch, in one target commit (the driver)."""
        parts = tuple(m.part for m in messages if isinstance(m, AppliedPart) and m.part is not None)
        if not parts:
            return
        staged = StagedBatch(self.resolved, parts)

        def commit(target: Any) -> bool:
            target.attach(self.resolved, self.columns, self.sequence)  # prepared when the query started
            return bool(target.commit(staged, pipeline_id=self.pipeline_id, batch_id=batchId))

        with_target(self.location, self.open_options, commit)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """Nothing to undo: an aborted batch's staging is never committed, and the next commit to the
        table (Spark runs the batch again under the same id) removes the staging up to its batch."""
