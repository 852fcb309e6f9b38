"""The source's input partition: one piece of planned work and what the reader task needs with it.

Spark pickles a partition from the driver to the executor that reads it, so it carries the
connector properties (the executor builds its configuration from them) beside the work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql.datasource import InputPartition

__all__ = ["WorkPartition"]


class WorkPartition(InputPartition):
    """A snapshot chunk or a stream range, with the configuration the executor needs (the
    :class:`~sparkcdc.spark.outputs.base.PlannedPartition` an output reads)."""

    def __init__(self, properties: Mapping[str, str], work: Any, run_id: str, index: int = 0, snapshot_batch: bool = False) -> None:
        super().__init__(work)
        self.properties = dict(properties)
        self.work = work
        self.run_id = run_id
        self.index = index  # the partition's place in its batch
        self.snapshot_batch = snapshot_batch  # the batch reads an initial (or blocking) snapshot's chunks
