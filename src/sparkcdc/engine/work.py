"""Reading one planned piece of work — a snapshot chunk, a stream range or a batch's notifications —
as encoded batches.

The planner (:class:`~sparkcdc.engine.planner.ConnectorPlanner`) cuts the connector's work into
pieces; this is the one function that reads a piece, wherever it runs: a Spark task of the
``postgres-cdc`` source (which turns the batches into Arrow) and the in-process loop
(:class:`~sparkcdc.engine.connector.LocalConnector`, which hands them to its caller) both call it,
so every path produces the same bytes from the same plan.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial
from itertools import chain
from typing import Any

from ..debezium.config import ConnectorConfig
from ..debezium.records import ChangeRecord
from ..lsn import format_lsn
from .core.emission import emitted, serializer_for
from .core.encoded import Constant, EncodedBatch, encode_records
from .core.lines import encode_lines
from .core.metric_reports import counted_chunk, metrics_location
from .core.notifications import NotificationPiece, notification_records
from .core.offsets import SourceOffset
from .core.state_store import StreamStateStore
from .core.stream_range import StreamRange
from .snapshot_plan import SnapshotChunk

__all__ = ["read_stream_encoded", "read_work", "read_work_records"]

log = logging.getLogger(__name__)


def read_work(config: ConnectorConfig, work: Any, *, run_id: str, lines: bool = False, line_end: bytes = b"") -> Iterator[EncodedBatch]:
    """The records of ``work`` (a :class:`StreamRange`, a :class:`SnapshotChunk` or a
    :class:`NotificationPiece`), serialized.

    ``lines``: the batches carry each record's topic-files line where the reader can build it
    (the ``lines`` output layout), each ended by ``line_end`` where the reader builds them from
    records (a batch says what its lines end with: ``EncodedBatch.line_end``). ``run_id`` is the
    ``__debezium.context.runId`` header: one per run.
    """
    serializer = serializer_for(config)
    encode = partial(encode_lines, line_end=line_end) if lines else encode_records
    if isinstance(work, StreamRange):
        return encode(emitted(config, _stream_records(config, work, run_id)), serializer)
    if isinstance(work, SnapshotChunk):
        from .snapshot_rendered import read_encoded_chunk

        batches = counted_chunk(metrics_location(config), work, read_encoded_chunk(config, work, run_id=run_id, serializer=serializer,
                                                                                    lines=lines, line_end=line_end), _batch_size)
        if work.kind != "initial":
            return _marked(batches, work.kind)
        if work.chunk_index == 0 and config.settings.include_schema_changes:
            # The table's CREATE schema change record, before its rows (not counted as one of them).
            from .snapshot_reader import chunk_schema_changes

            return chain(encode(emitted(config, chunk_schema_changes(config, work, run_id=run_id)), serializer), batches)
        return batches
    if isinstance(work, NotificationPiece):
        return encode(emitted(config, notification_records(work)), serializer)
    raise TypeError(f"not a planned piece of work: {type(work).__name__}")


def read_work_records(config: ConnectorConfig, work: Any, *, run_id: str) -> Iterator[ChangeRecord]:
    """The records of ``work``, not serialized: what the typed ``changes`` layout reads (each row
    change carries its ``TableSchema``, through which its columns are typed without JSON).

    A snapshot chunk is read through the Python converters (the server-rendered path makes JSON);
    a blocking or incremental chunk's rows are marked with their kind, as :func:`read_work` marks them.
    A snapshot chunk gives no schema change record here, and a stream range's (``include.schema.changes``)
    are records without a ``TableSchema``, which the ``changes`` layout leaves out as it leaves out
    heartbeats: it carries row changes only.
    """
    if isinstance(work, StreamRange):
        return _stream_records(config, work, run_id)
    if isinstance(work, SnapshotChunk):
        from .snapshot_reader import read_snapshot_chunk

        records = counted_chunk(metrics_location(config), work, read_snapshot_chunk(config, work, run_id=run_id), _one)
        return records if work.kind == "initial" else _marked_records(records, work.kind)
    if isinstance(work, NotificationPiece):
        return notification_records(work)
    raise TypeError(f"not a planned piece of work: {type(work).__name__}")


def _stream_records(config: ConnectorConfig, work: StreamRange, run_id: str) -> Iterator[ChangeRecord]:
    """A stream range's records, read from its stream's slot (``sparkcdc.stream.slots``)."""
    from .batch_reader import read_stream_range

    return read_stream_range(
        config, SourceOffset.from_dict(work.start), SourceOffset.from_dict(work.end),
        run_id=run_id, state_store=StreamStateStore(work.state_location, work.stream), stream=work.stream,
    )


def read_stream_encoded(config: ConnectorConfig, work: StreamRange, *, run_id: str, processes: int,
                        encoder: Any) -> Iterator[tuple[Any, Callable[[Any], None]]] | None:
    """A stream range's records as ``encoder`` (a :class:`~.decoding_process.PieceEncoder`) makes
    them in ``processes`` decoding processes (``sparkcdc.stream.decode.processes``,
    :mod:`.parallel_stream`): ``(header, reply)`` in WAL order; ``None`` where
    the range is better read by the task itself, as :func:`read_work` does: a batch with an
    incremental snapshot's window (read in order), or one shorter than a chunk's worth of WAL
    (:func:`~.parallel_stream.worth_parallel_decoding`: a second process would get nothing, and the
    processes and their connections would cost more than the batch)."""
    from .parallel_stream import DECODE_PROCESSES, read_stream_range_parallel, worth_parallel_decoding

    start, end = SourceOffset.from_dict(work.start), SourceOffset.from_dict(work.end)
    if end.incremental is not None and end.incremental.chunk is not None:
        log.warning("%s=%d: the batch ending at %s holds an incremental snapshot's chunk, which is read in one process",
                    DECODE_PROCESSES, processes, format_lsn(end.lsn))
        return None
    if not worth_parallel_decoding(config, start.lsn, end.lsn):
        return None
    return read_stream_range_parallel(
        config, start, end, run_id=run_id, state_store=StreamStateStore(work.state_location, work.stream),
        processes=processes, encoder=encoder, stream=work.stream,
    )


def _batch_size(batch: EncodedBatch) -> int:
    return batch.size


def _one(_record: ChangeRecord) -> int:
    return 1


def _marked_records(records: Iterator[ChangeRecord], kind: str) -> Iterator[ChangeRecord]:
    for record in records:
        record.snapshot = kind
        yield record


def _marked(batches: Iterator[EncodedBatch], kind: str) -> Iterator[EncodedBatch]:
    """A blocking snapshot's rows carry Debezium's markers in their JSON, but ``blocking`` in the
    ``snapshot`` column: it tells ``apply_changes`` the rows are not the tables' whole image (an
    initial snapshot's are), so they update the tables they name and leave the others alone."""
    for batch in batches:
        batch.snapshot = Constant(kind)
        yield batch
