"""Reading one stream range with its decoding spread over several processes
(``sparkcdc.stream.decode.processes``).

Why: one replication slot is one connection and so one Spark task, and that task's Python was the
stream's limit — measured (benchmarks/RESULTS.md, stream, issue 13), about 11 µs of one core per
change for decoding pgoutput, building the records and writing their JSON, while the walsender and
the rest of the machine waited. Here the task's own thread only reads the WAL: per XLogData frame it
looks at the message's first byte (and, for BEGIN, COMMIT and logical decoding messages, a few
bytes more) and hands runs of frames to N processes forked from it, each with its own
:class:`~.core.streaming.StreamingProcessor`; their outputs come back and are handed on in WAL order.

What keeps it exact:

- A chunk, the unit a process gets, is one or more whole transactions (a transaction's changes
  are numbered from its BEGIN, and BEGIN/END records count per transaction). A large transaction
  goes to one process in pieces, as it arrives: the reader never holds a transaction whole.
- ``source.sequence`` names the last commit before each change: the reader reads it off every
  COMMIT (and non-transactional message) and gives it with each chunk.
- Relation and Type messages are the decoder's state: every process receives each of them before
  the first chunk that follows it.
- Outputs are taken in the order the pieces were sent, whichever process finishes first.

The parts: this module (the read, and what refuses it), :mod:`.wal_dispatcher` (the task's WAL
reader, which cuts the chunks), :mod:`.decoding_pool` (the processes and the pipes to them) and
:mod:`.decoding_process` (what each process runs).

Not with the signal table or incremental snapshots (their windows filter the stream as it passes,
in order): refused as the configuration is built (:mod:`sparkcdc.debezium.property_rules`). The processes are forked before the task
opens any connection, and end with the batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final

from ..debezium.config import ConnectorConfig
from ..debezium.property_rules import DECODE_PROCESSES
from .batch_reader import first_stream_lsn, last_commit_of, replication_reader, stream_processor, stream_reporter
from .core.emission import emitted
from .core.offsets import SourceOffset
from .core.state_store import StreamState, StreamStateStore
from .core.stream_slots import stream_slot
from .decoding_pool import DecodingPool
from .decoding_process import PieceEncoder
from .wal_dispatcher import WalDispatcher

__all__ = ["DECODE_PROCESSES", "read_stream_range_parallel", "worth_parallel_decoding"]

log = logging.getLogger(__name__)


def worth_parallel_decoding(config: ConnectorConfig, start_lsn: int, end_lsn: int) -> bool:
    """Whether the WAL range holds more than one chunk, about: at least
    ``sparkcdc.stream.decode.chunk.messages`` times :data:`WAL_BYTES_PER_MESSAGE`. A shorter range
    (an idle stream's batches, a heartbeat) is read by the task itself."""
    return end_lsn - start_lsn >= config.settings.sparkcdc_stream_decode_chunk_messages * WAL_BYTES_PER_MESSAGE


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
    pool = DecodingPool(config, run_id, stream, processes, encoder)
    try:
        state = state_store.read(start.lsn)
        last_commit = last_commit_of(state, start.lsn)
        first_lsn = first_stream_lsn(state, start.lsn)
        report = stream_reporter(config, state_store, start, end, stream)
        if end.lsn > first_lsn:
            reader = replication_reader(config, stream_slot(config, stream), first_lsn)
            dispatcher = WalDispatcher(reader, pool, end.lsn, last_commit, stall_timeout, messages=stream == 0,
                                       chunk_messages=config.settings.sparkcdc_stream_decode_chunk_messages)
            for header, reply, last in pool.outputs(dispatcher.run):
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


