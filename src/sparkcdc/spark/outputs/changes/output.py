"""The ``changes`` output's object: its rows, its reader side and its record count (see
:mod:`.blocks` for what its rows hold and why)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..base import Output, PlannedPartition
from ..decoding import DECODING_PROPERTIES, decoded_pieces, decoding_processes, warn_idle_chunk_messages

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

    from ....debezium.config import ConnectorConfig

__all__ = ["ChangesOutput"]


class ChangesOutput(Output):
    """Each table's row changes as typed Arrow blocks, without JSON: what ``table_changes`` and
    ``apply_changes`` read fastest. The query's sink (an applier) writes them."""

    name = "changes"
    carries_typed_changes = True
    own_properties = DECODING_PROPERTIES

    def schema(self) -> str:
        from .schema import CHANGES_DDL_SCHEMA

        return CHANGES_DDL_SCHEMA

    def check(self, config: ConnectorConfig) -> None:
        warn_idle_chunk_messages(config, self.decoding_processes(config))

    def decoding_processes(self, config: ConnectorConfig) -> int:
        """With ``auto``, several: decoding and building the blocks is the stream task's whole cost
        here, no bytes are written (measured: benchmarks/RESULTS.md, apply, 2026-11-29 evening)."""
        return decoding_processes(config, pays=True)

    def record_count(self) -> Column:
        """A row change block holds ``rows`` changes; other rows (transaction markers and the like)
        are not counted, as the appliers' census counts only row changes."""
        from pyspark.sql import functions as F

        from ...views.model import CHANGE_OPS

        return F.sum(F.when(F.col("op").isin(*CHANGE_OPS), F.col("rows")))

    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        """A snapshot chunk's rows typed a run at a time; other work's records."""
        from ....engine.snapshot_plan import SnapshotChunk
        from ....engine.snapshot_reader import read_chunk_columns
        from ....engine.work import read_work_records
        from .blocks import change_blocks, chunk_blocks
        from .pieces import BlockPieceEncoder, piece_blocks

        work = partition.work
        if isinstance(work, SnapshotChunk):
            return chunk_blocks(read_chunk_columns(config, work, run_id=partition.run_id), config, kind=work.kind)
        pieces = decoded_pieces(self, config, partition, lambda: BlockPieceEncoder(config))
        if pieces is not None:
            return piece_blocks(pieces)
        return change_blocks(read_work_records(config, work, run_id=partition.run_id), config)
