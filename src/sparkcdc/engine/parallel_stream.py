"""Reading one stream range with its decoding spread over several processes
(``sparkcdc.stream.decode.processes``).

Why: one replication slot is one connection and so one Spark task, and that task's Python was the
stream's limit — measured (benchmarks/RESULTS.md, stream, issue 13), about 11 µs of one core per
change for decoding pgoutput, building the records and writing their JSON, while the walsender and
the rest of the machine waited. Here the task's own thread only reads the WAL: per XLogData frame it
looks at the message's first byte (and, for BEGIN, COMMIT and logical decoding messages, a few
bytes more) and hands runs of frames to N processes forked from it, each with its own
:class:`~.streaming.StreamingProcessor`; their outputs come back and are handed on in WAL order.

What keeps it exact:

- A chunk, the unit a process gets, is one or more whole transactions (a transaction's changes
  are numbered from its BEGIN, and BEGIN/END records count per transaction). A large transaction
  goes to one process in pieces, as it arrives: the reader never holds a transaction whole.
- ``source.sequence`` names the last commit before each change: the reader reads it off every
  COMMIT (and non-transactional message) and gives it with each chunk.
- Relation and Type messages are the decoder's state: every process receives each of them before
  the first chunk that follows it.
- Outputs are taken in the order the pieces were sent, whichever process finishes first.

Not with the signal table or incremental snapshots (their windows filter the stream as it passes,
in order): refused by :func:`check_parallel_decoding`. The processes are forked before the task
opens any connection, and end with the batch.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import queue
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import Any, Final, Protocol

from ..debezium.config import ConfigError, ConnectorConfig
from ..debezium.records import ChangeRecord
from ..errors import ServerError
from ..lsn import format_lsn
from ..pgoutput.messages import PG_EPOCH_OFFSET_US
from ..postgres.errors import ReplicationConnectionLost
from ..postgres.replication import LogicalReplicationReader, StreamRestarted
from ..postgres.replication_protocol import XLogDataDecoder
from .batch_reader import (
    HEARTBEAT_MESSAGE_PREFIX,
    StreamStalledError,
    first_stream_lsn,
    last_commit_of,
    process_items,
    replication_reader,
    start_planned,
    stream_processor,
    stream_reporter,
)
from .offsets import SourceOffset
from .signals import signal_table_of
from .state_store import StreamState, StreamStateStore
from .stream_slots import stream_slot
from .work import emitted

__all__ = [
    "DECODE_PROCESSES", "DecodingProcessFailed", "PieceEncoder", "check_parallel_decoding", "read_stream_range_parallel",
    "worth_parallel_decoding",
]

log = logging.getLogger(__name__)

DECODE_PROCESSES: Final = "sparkcdc.stream.decode.processes"

#: Messages a chunk holds at least before it ends at the next COMMIT (then the next process takes over).
CHUNK_MESSAGES: Final = "sparkcdc.stream.decode.chunk.messages"
#: Messages sent at once at most, about (a piece of a chunk): a large transaction streams to its process.
PIECE_MESSAGES: Final = 4096
#: Pieces sent and not yet handed on, per process: bounds the memory between reader and writer.
#: Counted over all the processes, not each: outputs are taken in order, so a process ahead of the
#: others holds its outputs until theirs are taken, and the reader must keep sending meanwhile (the
#: walsender waits whenever the reader does).
PIECES_IN_FLIGHT: Final = 4

# pgoutput message types (the byte after the 25-byte XLogData header), and their fields' places.
_BEGIN, _COMMIT, _MESSAGE, _RELATION, _TYPE = 0x42, 0x43, 0x4D, 0x52, 0x59
_MESSAGE_TYPE_AT: Final = 25
_U64: Final = struct.Struct(">Q")
_COMMIT_END_AND_TS: Final = struct.Struct(">Qq")  # COMMIT: flags(1) commit LSN(8), then these
_DONE: Final = "done"
_CLOSE: Final = "close"


class _Stopped(Exception):
    """The task stopped taking outputs (it failed, or its reading was abandoned): the dispatcher ends."""


class DecodingProcessFailed(ServerError):
    """A decoding process of a parallel stream read died or failed; names what it raised."""


def check_parallel_decoding(config: ConnectorConfig) -> int:
    """The number of decoding processes, refused (naming the property) where they cannot work."""
    count = config.get_int(DECODE_PROCESSES)
    if count == 1:
        if config.raw.get(CHUNK_MESSAGES):
            raise ConfigError(CHUNK_MESSAGES, f"sizes what each decoding process is given, but {DECODE_PROCESSES}=1: there are "
                                              f"none; set {DECODE_PROCESSES} or drop it")
        return count
    # Only the topic_files output writes the processes' bytes: it declares the property its own
    # (sparkcdc.spark.outputs), and another output refuses it before this runs.
    if signal_table_of(config) is not None:
        raise ConfigError(DECODE_PROCESSES, f"{DECODE_PROCESSES}={count} cannot follow the signal table (signal.data.collection) and "
                                            "the incremental snapshots' windows, which act on the stream in order: drop one of them")
    if config.get_bool("include.schema.changes"):
        raise ConfigError(DECODE_PROCESSES, f"{DECODE_PROCESSES}={count} cannot follow the tables' shapes for include.schema.changes=true "
                                            "(each schema change is known only from the Relation messages before it, in WAL order): "
                                            "drop one of them")
    if config.post_processors:
        raise ConfigError(DECODE_PROCESSES, f"{DECODE_PROCESSES}={count} cannot run post.processors (they read rows again through "
                                            "the stream task's connection, before the records are encoded): drop one of them")
    return count


class PieceEncoder(Protocol):
    """What the decoding processes make of their records, and how it reaches the output.

    ``encode`` runs in a process: records to ``(header, retained)``; the header (small: it is sent
    to the task) says what was made, ``retained`` stays in the process. The task answers each header
    in WAL order (``reply(answer)`` on what :func:`read_stream_range_parallel` yields), and the
    process then calls ``deliver(retained, answer)``: the topic files' processes write their bytes
    at the places the task gives, so no byte of output passes through the task."""

    def encode(self, records: Iterable[ChangeRecord]) -> tuple[Any, Any]: ...

    def deliver(self, retained: Any, answer: Any) -> None: ...


def worth_parallel_decoding(config: ConnectorConfig, start_lsn: int, end_lsn: int) -> bool:
    """Whether the WAL range holds more than one chunk, about: at least
    ``sparkcdc.stream.decode.chunk.messages`` times :data:`WAL_BYTES_PER_MESSAGE`. A shorter range
    (an idle stream's batches, a heartbeat) is read by the task itself."""
    return end_lsn - start_lsn >= config.get_int(CHUNK_MESSAGES) * WAL_BYTES_PER_MESSAGE


#: The fewest WAL bytes a decoded message takes, about (a one-column row's INSERT record is ~70).
WAL_BYTES_PER_MESSAGE: Final = 64


def read_stream_range_parallel(
    config: ConnectorConfig,
    start: SourceOffset,
    end: SourceOffset,
    *,
    run_id: str,
    state_store: StreamStateStore,
    processes: int,
    encoder: PieceEncoder,
    stall_timeout: float = 300.0,
    stream: int = 0,
) -> Iterator[tuple[Any, Callable[[Any], None]]]:
    """``(header, reply)`` for each piece of the batch (start, end] of stream ``stream``, in WAL
    order, the records made and encoded by ``processes`` processes (:class:`PieceEncoder`); the
    caller answers each with ``reply(answer)`` before taking the next. Then the batch's heartbeat,
    encoded here, if it carries one. The batch's state and metric report are written as
    :func:`~.batch_reader.read_stream_range` writes them."""
    # Forked before this task opens a connection: a process inherits no connection it could close.
    pool = _DecodingPool(config, run_id, stream, processes, encoder)
    try:
        state = state_store.read(start.lsn)
        last_commit = last_commit_of(state, start.lsn)
        first_lsn = first_stream_lsn(state, start.lsn)
        report = stream_reporter(config, state_store, start, end, stream)
        if end.lsn > first_lsn:
            reader = replication_reader(config, stream_slot(config, stream), first_lsn)
            dispatcher = _Dispatcher(reader, pool, end.lsn, last_commit, stall_timeout, messages=stream == 0,
                                     chunk_messages=config.get_int(CHUNK_MESSAGES))
            for header, reply, last in pool.outputs(dispatcher):
                if last is not None:
                    report.last, report.last_ms = last, int(time.time() * 1000)
                if header:
                    yield header, reply
            last_commit = dispatcher.last_commit
            for counts in pool.counts:
                report.add(counts)
        report.finish()
        if end.lsn > start.lsn or state is None:
            state_store.write(end.lsn, StreamState(*last_commit))
        if end.heartbeat != start.heartbeat and stream == 0:
            yield _heartbeat_piece(config, run_id, encoder)
    finally:
        pool.close()


def _heartbeat_piece(config: ConnectorConfig, run_id: str, encoder: PieceEncoder) -> tuple[Any, Callable[[Any], None]]:
    """The batch's heartbeat record, encoded in the task (its event factory needs the database's
    name: a connection, opened only for a batch that carries a heartbeat)."""
    admin, _, events, _ = stream_processor(config, run_id)
    try:
        header, retained = encoder.encode(emitted(config, [events.heartbeat()]))
    finally:
        admin.close()
    return header, partial(encoder.deliver, retained)


class _DecodingPool:
    """The processes, a pipe each way to each, and two threads per process: one sending its pieces
    (a pipe holds 64 KiB: a send waits until the process has read the piece, and the reader must not
    wait for one process while the other has nothing to do), one taking its results."""

    def __init__(self, config: ConnectorConfig, run_id: str, stream: int, processes: int,
                 encoder: PieceEncoder) -> None:
        context = multiprocessing.get_context("fork")
        self.size = processes
        self.inputs: list[queue.Queue[Any]] = []
        self.results: list[queue.Queue[Any]] = []
        self.counts: list[dict[str, Any]] = []
        self.order: queue.Queue[Any] = queue.Queue()  # the process each sent piece went to, in WAL order
        self.room = threading.Semaphore(PIECES_IN_FLIGHT * processes)
        self.stopped = threading.Event()  # the task stopped taking outputs
        self._processes: list[Any] = []
        self._threads: list[threading.Thread] = []
        for index in range(processes):
            piece_out, piece_in = context.Pipe(duplex=False)
            result_out, result_in = context.Pipe(duplex=False)
            process = context.Process(target=_decode_loop, args=(piece_out, result_in, config, run_id, stream, encoder),
                                      name=f"sparkcdc-decode-{index}", daemon=True)
            process.start()
            piece_out.close()
            result_in.close()
            self._processes.append(process)
            self.inputs.append(queue.Queue())
            self.results.append(queue.Queue())
            for target, name, pipe in ((self._send_pieces, "pieces", piece_in), (self._take_results, "results", result_out)):
                thread = threading.Thread(target=target, args=(index, pipe), name=f"sparkcdc-decode-{name}-{index}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def send(self, index: int, piece: tuple[Any, ...]) -> None:
        while not self.room.acquire(timeout=0.2):
            if self.stopped.is_set():
                raise _Stopped
        self.inputs[index].put(piece)
        self.order.put(index)

    def finish(self) -> None:
        """No more pieces: each process sends its counts once its outputs are delivered, and ends."""
        for pieces in self.inputs:
            pieces.put(None)
        self.order.put(_DONE)

    def _answer(self, index: int, answer: Any) -> None:
        self.inputs[index].put(("answer", answer))

    def _send_pieces(self, index: int, pipe: Any) -> None:
        pieces = self.inputs[index]
        try:
            while True:
                piece = pieces.get()
                if piece is _CLOSE:
                    return
                pipe.send(piece)
        except OSError:
            return  # the process is gone: its results' thread reports it
        finally:
            pipe.close()

    def outputs(self, dispatcher: _Dispatcher) -> Iterator[tuple[Any, Callable[[Any], None], Any]]:
        """Each piece's ``(header, reply, last event)``, in the order the pieces were sent; then the
        processes' counts are in :attr:`counts`. The dispatcher runs in a thread meanwhile."""
        thread = threading.Thread(target=dispatcher.run, name="sparkcdc-wal-reader", daemon=True)
        thread.start()
        try:
            while True:
                index = self.order.get()
                if index == _DONE:
                    break
                if isinstance(index, BaseException):
                    raise index
                header, last = self._result(index)
                self.room.release()
                yield header, partial(self._answer, index), last
            self.counts = [self._result(index) for index in range(self.size)]
        finally:
            self.stopped.set()
            if not self.counts:
                self.kill()  # a failure or an abandoned read: the dispatcher may wait on a full pipe
            thread.join()

    def _result(self, index: int) -> Any:
        kind, value = self.results[index].get()
        if kind == "error":
            raise value
        return value

    def _take_results(self, index: int, pipe: Any) -> None:
        results = self.results[index]
        try:
            while True:
                message = pipe.recv()
                results.put(message)
                if message[0] in ("counts", "error"):
                    return
        except (EOFError, OSError) as exc:
            code = self._processes[index].exitcode
            results.put(("error", DecodingProcessFailed(f"decoding process {index} ended (exit code {code}) before its work: {exc!r}")))
        finally:
            pipe.close()

    def kill(self) -> None:
        for process in self._processes:
            if process.is_alive():
                process.kill()

    def close(self) -> None:
        if not self.counts:  # the read failed or was abandoned, maybe before its outputs were taken
            self.stopped.set()
            self.kill()
        for pieces in self.inputs:
            pieces.put(_CLOSE)  # its sending thread ends
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        for thread in self._threads:
            thread.join(timeout=10)


class _Dispatcher:
    """Reads the batch's WAL frames and sends them, whole transactions per chunk, to the processes."""

    def __init__(self, reader: LogicalReplicationReader, pool: _DecodingPool, end_lsn: int,
                 last_commit: tuple[int | None, int | None], stall_timeout: float, *, messages: bool, chunk_messages: int) -> None:
        self.reader, self.pool = reader, pool
        #: Whether this stream makes records of logical decoding messages (the first stream only):
        #: a message made no record of moves no position (:func:`~.batch_reader.process_items`).
        self.messages = messages
        self.chunk_messages = chunk_messages
        self.end_lsn = end_lsn
        #: (end LSN, commit time) of the last COMMIT read: source.sequence's first half at each chunk's start.
        self.last_commit = last_commit
        self.stall_timeout = stall_timeout
        self._control: list[bytes] = []  # every Relation and Type message read, in order
        self._control_sent = [0] * pool.size  # how many of them each process has
        self._chunk_control = 0  # how many of them were read before the current chunk began
        self._process = 0
        self._chunk_frames = 0
        self._chunk_commit = last_commit  # last_commit where the current chunk started
        self._pending: list[Any] = []

    def run(self) -> None:
        try:
            start_planned(self.reader)
            try:
                self._read()
            finally:
                self.reader.close()  # nothing was confirmed, so the last status update confirms nothing
            self._send(chunk_ends=True)
            self.pool.finish()
        except _Stopped:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the task's thread, which raises it
            self.pool.order.put(exc)

    def _read(self) -> None:
        reader, end_lsn = self.reader, self.end_lsn
        in_transaction = False
        progress_at, progress_lsn = time.monotonic(), reader.received_lsn
        pending = self._pending
        while not self.pool.stopped.is_set():
            frames = reader.read_batch(timeout=0.2, raw=True)
            if not frames:
                if not in_transaction and reader.received_lsn >= end_lsn:
                    return
                if reader.received_lsn != progress_lsn:
                    progress_at, progress_lsn = time.monotonic(), reader.received_lsn
                elif time.monotonic() - progress_at > self.stall_timeout:
                    raise StreamStalledError(
                        f"slot {reader.options.slot_name!r}: no progress towards {format_lsn(end_lsn)} for {self.stall_timeout:.0f} s "
                        f"(decoding has reached {format_lsn(reader.received_lsn)})"
                    )
                reader.request_reply()
                continue
            progress_at = time.monotonic()
            for frame in frames:
                if type(frame) is StreamRestarted:
                    raise ReplicationConnectionLost(
                        f"replication connection lost and re-established at {format_lsn(frame.start_lsn)}: {frame.reason}"
                    )
                kind = frame[_MESSAGE_TYPE_AT]
                if kind == _BEGIN:
                    if _U64.unpack_from(frame, 26)[0] >= end_lsn:
                        return
                    in_transaction = True
                elif kind == _COMMIT:
                    pending.append(frame)
                    in_transaction = False
                    commit_end, commit_ts = _COMMIT_END_AND_TS.unpack_from(frame, 35)
                    self.last_commit = (commit_end, commit_ts + PG_EPOCH_OFFSET_US)
                    if self._chunk_frames + len(pending) >= self.chunk_messages:
                        self._send(chunk_ends=True)
                    continue
                elif kind == _MESSAGE and not frame[26] & 1:  # a non-transactional message: a unit of its own
                    lsn = _U64.unpack_from(frame, 27)[0]
                    if lsn > end_lsn:
                        return
                    pending.append(frame)
                    if self.messages and not _heartbeat(frame):
                        self.last_commit = (lsn, self.last_commit[1])
                    if not in_transaction and self._chunk_frames + len(pending) >= self.chunk_messages:
                        self._send(chunk_ends=True)
                    continue
                elif kind == _RELATION or kind == _TYPE:
                    self._control.append(bytes(frame))
                pending.append(frame)
            if len(pending) >= PIECE_MESSAGES:
                self._send(chunk_ends=False)

    def _send(self, *, chunk_ends: bool) -> None:
        """The pending frames to the current chunk's process (first, on a chunk's first piece, the
        Relation and Type messages it has not had); at a chunk's end the next process takes over."""
        pending, index = self._pending, self._process
        first = self._chunk_frames == 0
        if pending:
            frames: Sequence[Any] = pending
            control = 0
            if first:
                # the messages of earlier chunks it has not had (this chunk's own are in its frames)
                control = self._chunk_control - self._control_sent[index]
                frames = [*self._control[self._control_sent[index]:self._chunk_control], *pending]
            bounds = list(accumulate(len(f) for f in frames))
            self.pool.send(index, (first, self._chunk_commit, control, b"".join(frames), bounds))
            self._chunk_frames += len(pending)
            pending.clear()
        if chunk_ends and self._chunk_frames:
            self._control_sent[index] = len(self._control)
            self._process = (index + 1) % self.pool.size
            self._chunk_frames = 0
            self._chunk_commit = self.last_commit
            self._chunk_control = len(self._control)


def _heartbeat(frame: Any) -> bool:
    """A non-transactional message frame carries sparkcdc's heartbeat prefix (after flags and LSN)."""
    return bytes(frame[35:35 + len(_HEARTBEAT_PREFIX)]) == _HEARTBEAT_PREFIX


_HEARTBEAT_PREFIX: Final = HEARTBEAT_MESSAGE_PREFIX.encode() + b"\0"


def _decode_loop(pieces: Any, results: Any, config: ConnectorConfig, run_id: str, stream: int, encoder: PieceEncoder) -> None:
    """A decoding process: pieces in, ``("piece", (header, last event))`` out; each answer to a
    header delivers what it retained; at the end, once every output is delivered, its counts."""
    try:
        _keep_freed_memory()
        admin, _, _, processor = stream_processor(config, run_id)
        from .metric_reports import StreamReporter

        counter = StreamReporter(_NOWHERE, 0, 0, None)
        decode = XLogDataDecoder(1).decode
        failure_mode = config.get("event.processing.failure.handling.mode")
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


def _keep_freed_memory() -> None:
    """Have glibc keep what a piece frees for the next piece rather than give it back to the system.

    Measured: a decoding process allocates and frees buffers of megabytes per piece (the frames it
    receives, each batch's lines, their compressed frame); with glibc's defaults it returned them
    and faulted them in again, 676,000 page faults and 1.5 s of system time for 300,000 changes
    (the task's own sequential reader: 73,000)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to tune
    libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest


_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a :class:`DecodingProcessFailed` naming it."""
    try:
        return pickle.loads(pickle.dumps(exc))  # noqa: S301 - our own bytes
    except Exception:  # noqa: BLE001
        return DecodingProcessFailed(f"{type(exc).__name__}: {exc} (in decoding process {os.getpid()})")


#: A counting reporter's path, never written (the task's own reporter writes the batch's report).
_NOWHERE: Final = Path(os.devnull)
