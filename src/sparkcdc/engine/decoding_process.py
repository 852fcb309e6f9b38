"""A decoding process of a parallel stream read (:mod:`.parallel_stream`): WAL frames in, encoded
records out.

Forked by :class:`~.decoding_pool.DecodingPool`, it runs :func:`decode_loop` until its pieces end:
each piece's frames are decoded and made into records by its own
:class:`~.core.streaming.StreamingProcessor`, and encoded by the read's
:class:`PieceEncoder`; what the encoder retains is delivered when the task
answers its header, in WAL order.
"""

from __future__ import annotations

import os
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final, Protocol

from ..debezium.config import ConnectorConfig
from ..debezium.records import ChangeRecord
from ..errors import ServerError
from ..malloc_policy import keep_freed_memory
from ..postgres.replication_protocol import XLogDataDecoder
from .batch_reader import process_items, stream_processor
from .core.emission import emitted
from .core.metric_reports import StreamReporter

__all__ = ["DecodingProcessFailed", "PieceEncoder", "decode_loop"]


class PieceEncoder(Protocol):
    """What the decoding processes make of their records, and how it reaches the output.

    ``encode`` runs in a process: records to ``(header, retained)``; the header (small: it is sent
    to the task) says what was made, ``retained`` stays in the process. The task answers each header
    in WAL order (``reply(answer)`` on what :func:`~.parallel_stream.read_stream_range_parallel` yields), and the
    process then calls ``deliver(retained, answer)``: the topic files' processes write their bytes
    at the places the task gives, so no byte of output passes through the task."""

    def encode(self, records: Iterable[ChangeRecord]) -> tuple[Any, Any]: ...

    def deliver(self, retained: Any, answer: Any) -> None: ...


class DecodingProcessFailed(ServerError):
    """A decoding process of a parallel stream read died or failed; names what it raised."""


def decode_loop(pieces: Any, results: Any, config: ConnectorConfig, run_id: str, stream: int, encoder: PieceEncoder) -> None:
    """A decoding process: pieces in, ``("piece", (header, last event))`` out; each answer to a
    header delivers what it retained; at the end, once every output is delivered, its counts."""
    try:
        keep_freed_memory()
        admin, _, _, processor = stream_processor(config, run_id)
        counter = StreamReporter(_NOWHERE, 0, 0, None)
        decode = XLogDataDecoder(1).decode
        failure_mode = config.settings.event_processing_failure_handling_mode
        messages = stream == 0
        waiting: deque[Any] = deque()  # what each header not yet answered retained, in order
        ended = False
        while not ended or waiting:
            piece = pieces.recv()
            if piece is None:
                ended = True
                continue
            if piece[0] == "answer":
                encoder.deliver(waiting.popleft(), piece[1])
                continue
            first, chunk_commit, control, blob, bounds = piece
            if first:
                processor.last_commit_lsn, processor.last_commit_ts_us = chunk_commit
            frames = _Frames(decode, blob, bounds)
            if control:
                process_items(processor, frames.take(control), failure_mode, messages=messages)  # state only: no records
            last_before = counter.last
            header, retained = encoder.encode(emitted(config, counter.count(_records(processor, frames, failure_mode, messages))))
            if header:
                waiting.append(retained)
            last = counter.last if counter.last is not last_before else None
            results.send(("piece", (header, last)))
        counter.erroneous, counter.filtered = processor.erroneous_events, processor.filtered_events
        admin.close()
        results.send(("counts", counter.counts()))
    except BaseException as exc:  # noqa: BLE001 - the task raises it
        results.send(("error", _sendable(exc)))
    finally:
        results.close()


class _Frames:
    """A piece's frames, decoded a run at a time as they are taken."""

    def __init__(self, decode: Callable[[Any], Any], blob: bytes, bounds: list[int]) -> None:
        self.decode, self.view, self.bounds = decode, memoryview(blob), bounds
        self.done = 0  # frames taken
        self.at = 0  # where the next frame starts

    def take(self, count: int) -> list[Any]:
        decode, view, at = self.decode, self.view, self.at
        ends = self.bounds[self.done:self.done + count]
        items = []
        for end in ends:
            items.append(decode(view[at:end]))
            at = end
        self.done += len(ends)
        self.at = at
        return items


def _records(processor: Any, frames: _Frames, failure_mode: str | None, messages: bool) -> Iterator[ChangeRecord]:
    """The piece's records, made a run of frames at a time and handed on at once: each record is
    encoded while it is still in the core's cache. Measured: making a piece's 4,096 records first
    and encoding them after cost a third more CPU than the task's own reader, which does this."""
    while True:
        items = frames.take(_RUN)
        if not items:
            return
        yield from process_items(processor, items, failure_mode, messages=messages)


#: Frames decoded and made into records at a time in a decoding process.
_RUN: Final = 512


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a :class:`DecodingProcessFailed` naming it."""
    try:
        return pickle.loads(pickle.dumps(exc))  # noqa: S301 - our own bytes
    except Exception:  # noqa: BLE001
        return DecodingProcessFailed(f"{type(exc).__name__}: {exc} (in decoding process {os.getpid()})")


#: A counting reporter's path, never written (the task's own reporter writes the batch's report).
_NOWHERE: Final = Path(os.devnull)
