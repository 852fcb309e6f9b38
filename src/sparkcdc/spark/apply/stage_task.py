"""The executors' side of ``apply_changes``: :class:`StageTask`, the function ``mapInArrow`` runs
on each partition of a table's changes (fold against the target, stage, answer one
:data:`SUMMARY` row), and the description and tag of the job that runs them.
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from ...apply.errors import ApplyError
from ...apply.fold import DELETE_FLAG, TRUNCATE_FLAG
from ...apply.partition import stage_partition, with_target
from ..views.kernels import KernelRefused
from .table_plan import TablePlan

__all__ = ["STAGE_JOB", "STAGE_JOB_TAG", "SUMMARY", "SUMMARY_ARROW", "StageTask"]


#: What a :class:`StageTask` answers per partition: the target table, the tag, counts, and the
#: pickled :class:`~sparkcdc.apply.staged.StagedPart`; or, where an Arrow kernel refused a value
#: while typing the partition's blocks, ``refused`` (why) and nothing staged. A refusal is an
#: answer, not an exception: an exception crosses Spark's Python worker as text, and the driver
#: would have to match it by its message to tell it from a failure.
SUMMARY = T.StructType([
    T.StructField("target", T.StringType(), False), T.StructField("tag", T.StringType(), False),
    T.StructField("events", T.LongType(), False), T.StructField("dropped_late", T.LongType(), False),
    T.StructField("rows", T.LongType(), False), T.StructField("part", T.BinaryType(), False),
    T.StructField("refused", T.StringType(), True),
])
SUMMARY_ARROW = pa.schema([("target", pa.string()), ("tag", pa.string()), ("events", pa.int64()), ("dropped_late", pa.int64()),
                           ("rows", pa.int64()), ("part", pa.binary()), ("refused", pa.string())])


class StageTask:
    """The function ``mapInArrow`` runs on each partition of a table's changes, in an executor:
    fold the partition's events against the target and stage the result (see :mod:`sparkcdc.spark.apply`)."""

    def __init__(self, location: str, options: dict[str, Any], plan: TablePlan, *, pipeline_id: str, batch_id: int,
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
        if self.typer is None:
            gathered = [batch for batch in batches if batch.num_rows]
        else:
            try:
                gathered = [batch for batch in self._flagged(self.typer(batches)) if batch.num_rows]
            except KernelRefused as refused:
                for _ in batches:  # the rest of the partition, read and left: the driver types the batch with Spark SQL
                    pass
                yield pa.RecordBatch.from_pylist([{"target": self.resolved.target, "tag": "", "events": 0, "dropped_late": 0,
                                                   "rows": 0, "part": b"", "refused": str(refused)}], schema=SUMMARY_ARROW)
                return
        if not gathered:
            return
        typing = time.perf_counter() - started  # the blocks' decoding and typing, when typed here
        table = pa.Table.from_batches(gathered)
        for wanted in self.schema:
            if wanted.name not in table.column_names:  # left out by the driver (see applier.ChangeApplier._stage)
                table = table.append_column(wanted, _carried_by_no_row(wanted, table.num_rows))
        events = table.select(self.schema.names).cast(self.schema)
        part = with_target(self.location, self.options, lambda target: stage_partition(
            target, self.resolved, self.columns, self.sequence, events, pipeline_id=self.pipeline_id, batch_id=self.batch_id,
            image=self.image))
        if self.typer is not None:
            part = dataclasses.replace(part, seconds=(*part.seconds, ("type", typing)))
        yield pa.RecordBatch.from_pylist([{
            "target": self.resolved.target, "tag": part.tag, "events": part.events, "dropped_late": part.dropped_late,
            "rows": sum(part.rows_per_segment), "part": pickle.dumps(part), "refused": None,
        }], schema=SUMMARY_ARROW)

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


#: The description of the job whose tasks fold and stage (the Spark UI and event log show it).
STAGE_JOB = "sparkcdc apply: fold and stage"


#: The tag of that job on Spark Connect, whose clients cannot describe jobs.
STAGE_JOB_TAG = "sparkcdc-apply-fold-and-stage"
