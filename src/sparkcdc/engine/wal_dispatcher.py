"""The WAL reader of a parallel stream read (:mod:`.parallel_stream`): frames in, pieces to the
decoding processes out.

It runs in a thread of the task. Per XLogData frame it looks at the pgoutput message's type (and,
for BEGIN, COMMIT and logical decoding messages, a few fields more: :mod:`sparkcdc.pgoutput.frame_peek`)
without decoding it, and cuts the WAL into chunks of whole transactions, one process each in turn; a
large transaction goes to its process in pieces, as it arrives. Every process receives each
Relation and Type message (the decoder's state) before the first chunk that follows it, and with
each chunk the last commit before it (``source.sequence``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Final

from ..lsn import format_lsn
from ..pgoutput.frame_peek import (
    BEGIN,
    COMMIT,
    LOGICAL_MESSAGE,
    MESSAGE_TYPE_AT,
    RELATION,
    TYPE,
    begin_final_lsn,
    commit_end_and_time,
    message_has_prefix,
    message_is_transactional,
    message_lsn,
)
from ..postgres.errors import ReplicationConnectionLost
from ..postgres.replication import LogicalReplicationReader, StreamRestarted
from .batch_reader import HEARTBEAT_MESSAGE_PREFIX, StreamStalledError, start_planned
from .decoding_pool import DecodingPool

__all__ = ["PIECE_MESSAGES", "WalDispatcher"]

#: Messages sent at once at most, about (a piece of a chunk): a large transaction streams to its process.
PIECE_MESSAGES: Final = 4096


class WalDispatcher:
    """Reads the batch's WAL frames and sends them, whole transactions per chunk, to the processes."""

    def __init__(self, reader: LogicalReplicationReader, pool: DecodingPool, end_lsn: int,
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
        except DecodingPool.Stopped:
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
                kind = frame[MESSAGE_TYPE_AT]
                if kind == BEGIN:
                    if begin_final_lsn(frame) >= end_lsn:
                        return
                    in_transaction = True
                elif kind == COMMIT:
                    pending.append(frame)
                    in_transaction = False
                    self.last_commit = commit_end_and_time(frame)
                    if self._chunk_frames + len(pending) >= self.chunk_messages:
                        self._send(chunk_ends=True)
                    continue
                elif kind == LOGICAL_MESSAGE and not message_is_transactional(frame):  # a unit of its own
                    lsn = message_lsn(frame)
                    if lsn > end_lsn:
                        return
                    pending.append(frame)
                    if self.messages and not message_has_prefix(frame, HEARTBEAT_MESSAGE_PREFIX):
                        self.last_commit = (lsn, self.last_commit[1])
                    if not in_transaction and self._chunk_frames + len(pending) >= self.chunk_messages:
                        self._send(chunk_ends=True)
                    continue
                elif kind == RELATION or kind == TYPE:
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
