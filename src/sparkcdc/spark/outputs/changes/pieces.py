"""The ``changes`` layout's blocks made in a stream's decoding processes (``sparkcdc.stream.decode.processes``).

Why: one slot is one Spark task, and that task's Python, decoding pgoutput and building each
table's blocks, was the apply path's limit: the census job, which reads and caches the batch, took
23 of the 45 seconds an apply of a million streamed changes spent (benchmarks/RESULTS.md,
apply-2-tables), on one core of two. As for zstd topic files (:mod:`..topic_files.task_files`), the
task's own thread then only reads the WAL and the processes decode (:mod:`sparkcdc.engine.parallel_stream`).

Here the processes make the blocks :func:`.blocks.change_blocks` makes, from their pieces of whole
transactions, and send them to the task as one Arrow IPC stream per piece (the piece's *header*);
nothing stays behind to deliver. The task hands them on in WAL order. A piece's blocks end with the
piece, so a table's changes may be cut into more, smaller blocks than one process would make; each
block keeps its changes' order, and the census and the typed view order blocks by their first
position, as they do for one process's blocks of tables that alternate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from ....debezium.config import ConnectorConfig
from ....debezium.records import ChangeRecord
from .blocks import change_blocks
from .schema import CHANGES_ARROW_SCHEMA

__all__ = ["BlockPieceEncoder", "piece_blocks"]


class BlockPieceEncoder:
    """The :class:`~sparkcdc.engine.decoding_process.PieceEncoder` of the ``changes`` layout: a piece's
    row changes as blocks, in one Arrow IPC stream sent as the piece's header; None for a piece
    without a row change (transaction markers, messages, heartbeats: the layout carries none)."""

    def __init__(self, config: ConnectorConfig) -> None:
        self.config = config

    def encode(self, records: Iterable[ChangeRecord]) -> tuple[pa.Buffer | None, None]:
        batches = list(change_blocks(records, self.config))
        if not batches:
            return None, None
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, CHANGES_ARROW_SCHEMA) as writer:
            for batch in batches:
                writer.write_batch(batch)
        return sink.getvalue(), None

    def deliver(self, retained: None, answer: Any) -> None:
        """Nothing to deliver: the header carried the blocks."""


def piece_blocks(pieces: Iterable[tuple[pa.Buffer | None, Callable[[Any], None]]]) -> Iterator[pa.RecordBatch]:
    """The blocks of each piece, in the order the pieces come (WAL order); each is answered as it is taken."""
    for header, reply in pieces:
        reply(None)
        if header:
            yield from pa.ipc.open_stream(header)
