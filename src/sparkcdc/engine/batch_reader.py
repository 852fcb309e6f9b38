"""Reading one streaming micro-batch: the changes of a slot between two offsets, as records.

Runs where the batch is read (a Spark task; tests call it directly). A batch (start, end] holds the
transactions whose COMMIT record starts at or after ``start.lsn`` (where START_REPLICATION begins)
and before ``end.lsn``; the driver picks ``end.lsn`` at a WAL record boundary, so that is the same
as "whose COMMIT ends at or before ``end.lsn``", and the next batch, started at ``end.lsn``, holds
exactly the rest. Whether a transaction belongs is known at its BEGIN (``final_lsn`` is the commit
record's start), and transactions arrive in commit order, so reading stops at the first BEGIN (or
non-transactional message) at or beyond the end.

When no message comes, the walsender is asked for a keepalive, which tells how far decoding has
read: once that passes ``end.lsn`` outside a transaction, the batch is complete. The slot is never
confirmed here; the driver does that after Spark commits the batch.

With parallel streaming (``sparkcdc.stream.slots``, engine/core/stream_slots.py) one such read runs per
stream, through that stream's slot and publication. Logical decoding messages are not filtered by
publications, so every slot sees each of them: only stream 0 emits their records (and the batch's
heartbeat record); the other streams only pass them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.records import ChangeRecord
from ..debezium.stream_params import origin_of
from ..debezium.table import TableSchemaFactory
from ..errors import ServerError
from ..lsn import format_lsn
from ..pgoutput.messages import Begin, LogicalMessage
from ..postgres.catalog import Catalog
from ..postgres.errors import ReplicationConnectionLost, SlotLostError, SlotNotFoundError
from ..postgres.replication import LogicalReplicationReader, ReconnectPolicy, ReplicationOptions, StreamRestarted, WalMessage
from .connection import conninfo_from_config, sql_connection
from .core.filters import TableFilter
from .core.metric_reports import StreamReporter, incremental_summary, metrics_location
from .core.offsets import SourceOffset
from .core.signals import signal_table_of
from .core.snapshot_window import StreamSignals
from .core.state_store import StreamState, StreamStateStore
from .core.stream_slots import StreamSlot, stream_slot
from .core.streaming import StreamingProcessor
from .core.tables import TableResolver
from .incremental_reader import chunk_reader
from .reselect_reader import PostProcessing, post_processing

__all__ = [
    "HEARTBEAT_MESSAGE_PREFIX", "StreamStalledError", "first_stream_lsn", "last_commit_of", "process_items", "read_stream_range",
    "replication_reader",
    "stream_processor", "stream_reporter",
]

log = logging.getLogger(__name__)

#: Prefix of the logical decoding messages sparkcdc emits as table-free heartbeats; never emitted as records.
HEARTBEAT_MESSAGE_PREFIX = "sparkcdc-heartbeat"


class StreamStalledError(ServerError):
    """The walsender made no progress towards the batch's end for too long."""


def read_stream_range(
    config: ConnectorConfig,
    start: SourceOffset,
    end: SourceOffset,
    *,
    run_id: str,
    state_store: StreamStateStore,
    stall_timeout: float = 300.0,
    stream: int = 0,
) -> Iterator[ChangeRecord]:
    """The records of the batch (start, end] of stream ``stream``, then a heartbeat record if the batch carries one."""
    admin, factory, events, processor = stream_processor(config, run_id)
    try:
        # post.processors: the events of each run of messages read again from the tables (engine/reselect_reader.py)
        post = post_processing(config, factory, admin)
        processor.post = None if post is None else post.candidate
        state = state_store.read(start.lsn)
        processor.last_commit_lsn, processor.last_commit_ts_us = last_commit_of(state, start.lsn)
        processor.signal_table = signal_table_of(config)
        if processor.shapes is not None and state is not None:
            processor.shapes.load(state.relations)  # what the batch before knew of the tables' shapes
        chunk = end.incremental.chunk if end.incremental is not None else None
        watch = None
        if processor.signal_table is not None or chunk is not None:
            watch = StreamSignals(chunk, chunk_reader(config, events, factory), end_lsn=end.lsn)
        first_lsn = first_stream_lsn(state, start.lsn)
        report = stream_reporter(config, state_store, start, end, stream)
        if end.lsn > first_lsn:
            records = _read(config, stream_slot(config, stream), processor, first_lsn, end.lsn, stall_timeout, post)
            yield from report.count(records if watch is None else watch.filter(records))
        elif watch is not None:
            yield from report.count(watch.filter(()))  # a read-only chunk in a batch without WAL: emitted at once
        report.erroneous, report.filtered = processor.erroneous_events, processor.filtered_events
        report.finish()
        if end.lsn > start.lsn or state is None:
            signals = () if watch is None else tuple(s.to_dict() for s in watch.signals)
            relations = processor.shapes.entries() if processor.shapes is not None else ()
            state_store.write(end.lsn, StreamState(processor.last_commit_lsn, processor.last_commit_ts_us, signals=signals,
                                                   relations=relations))
        if end.heartbeat != start.heartbeat and stream == 0:
            yield events.heartbeat()
    finally:
        admin.close()


def stream_processor(config: ConnectorConfig, run_id: str) -> tuple[Any, TableSchemaFactory, EventFactory, StreamingProcessor]:
    """What turns a stream's messages into records: its catalog connection (the caller closes it),
    the table schemas' factory, the event factory and the processor. One place for every reader of
    a stream range, sequential or parallel (:mod:`.parallel_stream`)."""
    admin = sql_connection(config, autocommit=True, application_name="sparkcdc-stream")
    try:
        factory = TableSchemaFactory(config)
        events = EventFactory(config, admin.info.dbname, factory.topics)
        events.set_run_id(run_id)
        processor = StreamingProcessor(config, TableResolver(Catalog(admin), factory, TableFilter(config, streaming=True)), events)
    except BaseException:
        admin.close()
        raise
    return admin, factory, events, processor


def last_commit_of(state: StreamState | None, start_lsn: int) -> tuple[int | None, int | None]:
    """``source.sequence``'s last commit at the batch's start, from the state the previous batch left."""
    if state is None:
        log.warning("no stream state for %s: source.sequence of the first transaction after it will start with null",
                    format_lsn(start_lsn))
        return None, None
    return state.last_commit_lsn, state.last_commit_ts_us


def first_stream_lsn(state: StreamState | None, start_lsn: int) -> int:
    """Where the batch's reading starts. A snapshot taken again after the driver died sits at a
    later point than the checkpoint says: the changes up to it are in the snapshot, so the stream
    starts there (no overlap)."""
    return max(start_lsn, state.stream_from_lsn or 0) if state is not None else start_lsn


def stream_reporter(config: ConnectorConfig, state_store: StreamStateStore, start: SourceOffset, end: SourceOffset,
                    stream: int) -> StreamReporter:
    """The batch's counts for the metrics (sparkcdc.engine.core.metric_reports), next to the state."""
    return StreamReporter(metrics_location(config, state_store.location), start.lsn, end.lsn, incremental_summary(end.incremental),
                          stream)


def _read(
    config: ConnectorConfig, source: StreamSlot, processor: StreamingProcessor, start_lsn: int, end_lsn: int,
    stall_timeout: float, post: PostProcessing | None = None,
) -> Iterator[ChangeRecord]:
    failure_mode = config.settings.event_processing_failure_handling_mode
    reader = replication_reader(config, source, start_lsn)
    options = reader.options
    start_planned(reader)
    try:
        progress_at, progress_lsn = time.monotonic(), reader.received_lsn
        while True:
            items = reader.read_batch(timeout=0.2)
            if not items:
                if not processor.in_transaction and reader.received_lsn >= end_lsn:
                    return
                if reader.received_lsn != progress_lsn:
                    progress_at, progress_lsn = time.monotonic(), reader.received_lsn
                elif time.monotonic() - progress_at > stall_timeout:
                    raise StreamStalledError(
                        f"slot {options.slot_name!r}: no progress towards {format_lsn(end_lsn)} for {stall_timeout:.0f} s "
                        f"(decoding has reached {format_lsn(reader.received_lsn)})"
                    )
                reader.request_reply()
                continue
            progress_at = time.monotonic()
            cut, done = _cut(items, end_lsn)
            if cut:
                records = process_items(processor, cut, failure_mode, messages=source.index == 0)
                if post is not None:
                    post.run()  # before the records leave: what follows sees the values read again
                yield from records
            if done:
                return
    finally:
        reader.close()  # nothing was confirmed, so the last status update confirms nothing


def replication_reader(config: ConnectorConfig, source: StreamSlot, start_lsn: int) -> LogicalReplicationReader:
    """The (not yet started) reader of ``source``'s slot from ``start_lsn``, as every stream range reads it.

    Connecting to the slot (the server coming back, the slot still active for another process) is
    tried slot.max.retries more times, slot.retry.delay.ms apart, as Debezium does. A connection
    lost mid-batch fails the task all the same (see _cut): the batch is read again from its start
    when `sparkcdc run` restarts the query."""
    options = ReplicationOptions(
        source.slot,
        (source.publication,),
        proto_version=1,
        messages=True,
        origin=origin_of(config.raw),  # slot.stream.params (the planner checked the server has it)
        status_interval=config.settings.status_update_interval_ms / 1000,
    )
    delay = config.settings.slot_retry_delay_ms / 1000
    reconnect = ReconnectPolicy(attempts=config.settings.slot_max_retries + 1, initial_delay=delay, max_delay=delay)
    return LogicalReplicationReader(conninfo_from_config(config), options, start_lsn=start_lsn, reconnect=reconnect)


def start_planned(reader: LogicalReplicationReader) -> None:
    """Start the reader of a planned range. The planner made sure of its slot before it planned the range,
    so a slot missing now went away under the run (dropped, or the server that accepts writes is now a
    standby promoted before the slot was synchronised to it): :class:`SlotLostError`, after which
    ``sparkcdc run`` restarts and the planner decides from the checkpoint (see ``_resume``)."""
    try:
        reader.start()
    except SlotLostError:
        raise
    except SlotNotFoundError as exc:
        raise SlotLostError(f"slot {reader.options.slot_name!r}, which this batch was planned to read, is gone: {exc}",
                            sqlstate=exc.sqlstate, slot=reader.options.slot_name) from exc


def _cut(items: list, end_lsn: int) -> tuple[list[WalMessage], bool]:
    """The items that belong to the batch, and whether the batch ends within this list."""
    for index, item in enumerate(items):
        if isinstance(item, StreamRestarted):
            raise ReplicationConnectionLost(
                f"replication connection lost and re-established at {format_lsn(item.start_lsn)}: {item.reason}"
            )
        message = item.message
        kind = type(message)
        if kind is Begin:
            if message.final_lsn >= end_lsn:
                return items[:index], True
        elif kind is LogicalMessage and not message.transactional and message.lsn > end_lsn:
            return items[:index], True
    return items, False


def process_items(processor: StreamingProcessor, items: list[WalMessage], failure_mode: str | None, *,
                  messages: bool = True) -> list[ChangeRecord]:
    """The records of ``items``, the batch's own heartbeat messages dropped, failures handled per
    event.processing.failure.handling.mode."""
    # sparkcdc's own heartbeat messages never become records (inline: this runs once per change), and
    # no logical decoding message does in the streams after the first (see the module docstring)
    if messages:
        items = [i for i in items if type(i.message) is not LogicalMessage or i.message.prefix != HEARTBEAT_MESSAGE_PREFIX]
    else:
        items = [i for i in items if type(i.message) is not LogicalMessage]
    if failure_mode == "fail":
        return processor.process_batch(items)
    out: list[ChangeRecord] = []
    for item in items:
        try:
            out.extend(processor.process(item))
        except Exception as exc:  # noqa: BLE001 - event.processing.failure.handling.mode decides
            processor.erroneous_events += 1
            if failure_mode == "warn":
                log.warning("skipping the event at LSN %s: %s", format_lsn(item.data_start), exc)
    return out
