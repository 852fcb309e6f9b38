"""The task side of signals and incremental snapshots: what the stream reader does with markers.

The streaming processor marks every insert or delete of a signal table row in its output
(:data:`~sparkcdc.engine.core.streaming.SIGNAL_OP`). :class:`StreamSignals` sits between the processor
and the batch's output and

* collects the signals sent through the ``source`` channel (the driver acts on them when it plans
  the next batch: the reader writes them to the stream state of the batch's end);
* runs the chunk window of an incremental snapshot (DBLog, debezium-facts.md §4.2): the driver
  wrote the open watermark, exported a snapshot and wrote the close watermark while planning the
  batch, so both watermarks lie inside it. Between them, every change of the chunk's table drops
  its key from the chunk; at the close watermark the chunk is read from the exported snapshot and
  its remaining rows are emitted as ``r`` records, before anything that follows the watermark.
  A read-only window (no watermark rows) uses the snapshot's transaction lists instead: changes of
  transactions the snapshot does not see drop their keys, and the rows are emitted once the stream
  passes the WAL position read after the snapshot (see :class:`~sparkcdc.engine.core.incremental.Visibility`).

The chunk is read only when its place in the stream is reached, through a callable, so this module
stays free of I/O and its rules can be tested with hand-made records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from ...debezium.records import ChangeRecord
from ...errors import PipelineError
from .incremental import ChunkWindow
from .signals import WINDOW_CLOSE, WINDOW_OPEN, Signal
from .streaming import SIGNAL_OP

__all__ = ["ChunkReader", "StreamSignals", "WindowNotClosedError"]

log = logging.getLogger(__name__)

#: Reads a chunk's rows as ``r`` records, given (chunk, lsn, commit LSN, first ordinal) of the place they
#: go and the ``source.sequence`` they carry (the event's that released them, as in Debezium).
ChunkReader = Callable[[ChunkWindow, int, int, int, "str | None"], Iterable[ChangeRecord]]

#: Read records take ordinals from here within the close watermark's transaction (which holds one
#: statement: its own row change, and a tombstone at most, come first).
READ_ORDINAL_BASE = 1 << 24

_CHANGES = frozenset({"c", "u", "d"})


class WindowNotClosedError(PipelineError):
    """A batch that carries an incremental snapshot chunk ended without the chunk's close watermark."""


class StreamSignals:
    def __init__(self, chunk: ChunkWindow | None, read_chunk: ChunkReader, *, end_lsn: int) -> None:
        self.chunk = chunk
        self.read_chunk = read_chunk
        self.end_lsn = end_lsn
        #: Signals sent through the source channel in this batch, in stream order.
        self.signals: list[Signal] = []
        #: Keys of the chunk's table changed inside the window (their chunk rows are not emitted).
        self.dropped: set[str] = set()
        self.emitted = chunk is None
        self.read_count = 0

    def filter(self, records: Iterable[ChangeRecord]) -> Iterator[ChangeRecord]:
        chunk = self.chunk
        visibility = chunk.visibility if chunk is not None else None
        window_open = visibility is not None
        for record in records:
            if record.op == SIGNAL_OP:
                value = record.value
                if chunk is not None and not self.emitted:
                    if value["op"] == "c" and value["id"] == chunk.open_id:
                        window_open = True
                        continue
                    if (value["op"] == "c" and value["id"] == chunk.close_id) or (value["op"] == "d" and value["id"] == chunk.open_id):
                        yield from self._emit(record.lsn, record.commit_lsn, record.ordinal + READ_ORDINAL_BASE, value.get("sequence"))
                        continue
                if value["op"] == "c" and value["type"] not in (WINDOW_OPEN, WINDOW_CLOSE) and value["id"] is not None:
                    self.signals.append(Signal(str(value["id"]), str(value["type"]), value["data"], "source"))
                continue
            if not self.emitted and chunk is not None:
                if visibility is not None and record.tx_id is not None and record.commit_lsn >= visibility.high:
                    # The first transaction at or after the high mark: every change the read contains is behind us.
                    yield from self._emit(visibility.high - 1, visibility.high - 1, 0, _sequence(record))
                elif window_open and record.op in _CHANGES and record.table == chunk.table and record.schema == chunk.schema:
                    if visibility is None or (record.tx_id is not None and not visibility.sees(record.tx_id)):
                        self.dropped.add(repr(record.key))
            yield record
        if not self.emitted and chunk is not None:
            if visibility is None:
                raise WindowNotClosedError(
                    f"{chunk.describe()}: the batch ended at {self.end_lsn:X} without the close watermark {chunk.close_id!r}; "
                    "is the signal table in the publication, and was its row deleted by someone else?"
                )
            yield from self._emit(visibility.high - 1, visibility.high - 1, 0, None)

    def _emit(self, lsn: int, commit_lsn: int, ordinal: int, sequence: str | None) -> Iterator[ChangeRecord]:
        assert self.chunk is not None
        self.emitted = True
        dropped = self.dropped
        for record in self.read_chunk(self.chunk, lsn, commit_lsn, ordinal, sequence):
            if repr(record.key) in dropped:
                continue
            self.read_count += 1
            yield record
        log.info("%s: %d rows emitted, %d superseded by changes in the window", self.chunk.describe(), self.read_count, len(dropped))


def _sequence(record: ChangeRecord) -> str | None:
    value = record.value
    source = value.get("source") if isinstance(value, dict) else None
    return source.get("sequence") if isinstance(source, dict) else None
