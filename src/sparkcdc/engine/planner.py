"""The driver side of the connector: set-up, offsets, batch planning, and confirming the slot.

Runtime-independent (no Spark here): ``sparkcdc.spark.source`` calls these methods from Spark's
``DataSourceStreamReader`` callbacks. See docs/spark-source.md for the design, in short:

* ``initial_offset`` (a new query): set up tables, replica identities and the publication; decide
  whether an initial snapshot is needed (``snapshot.mode``); if so, create the slot with an exported
  snapshot, kept open here until the snapshot batch is committed.
* ``latest_offset(start)``: the end of the next batch: the WAL insert position (a record boundary),
  capped by ``sparkcdc.max.batch.wal.bytes`` and, for ``availableNow``, by the position at the start.
* ``partitions(start, end)``: the snapshot's chunks, or the one stream range.
* ``commit(end)``: only now does the slot move (``pg_replication_slot_advance``).

What it delegates: the slots' creation, confirmation and checks at a restart
(:mod:`.driver_slots`), the snapshot it holds open while its batch runs (:mod:`.held_snapshot`),
what ``snapshot.mode`` decides (:mod:`.core.snapshot_mode`) and the polling of signal channels
(:mod:`.signal_channels.polling`); what it keeps is the order of these steps and the offsets.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import replace
from typing import Any

from ..debezium.config import ConnectorConfig
from ..debezium.stream_params import check_server_supports
from ..errors import ConfigurationError, ServerError
from ..lsn import format_lsn
from ..postgres.slots import (
    FAILOVER_SLOTS_MAJOR,
    create_logical_slot,
    current_wal_insert_lsn,
    drop_slot,
    emit_logical_message,
    get_slot,
    invalidation_explained,
    run_statement,
)
from .batch_reader import HEARTBEAT_MESSAGE_PREFIX
from .connection import conninfo_from_config, sql_connection
from .core.heartbeat import HeartbeatTimer
from .core.incremental import IncrementalState
from .core.metric_reports import (
    complete_snapshot_reports,
    metrics_location,
    prune_stream_reports,
    write_json,
)
from .core.notifications import Notifier, notification_pieces
from .core.offset_mismatch import trusts_slot
from .core.offsets import SourceOffset
from .core.signals import Signal, enabled_channels, signal_table_of
from .core.snapshot_mode import streams_after_snapshot, takes_snapshot
from .core.state_store import StreamState, StreamStateStore, default_state_location
from .core.stream_range import StreamRange
from .core.stream_slots import check_parallel_streaming, stream_slots
from .driver_slots import (
    check_resumed_slot,
    confirm_slots,
    ensure_slots,
    missing_slot_error,
    refuse_invalidated,
    server_of,
)
from .held_snapshot import HeldSnapshot
from .incremental_planner import BlockingRequest, IncrementalSnapshots
from .setup import (
    apply_replica_identities,
    captured_tables,
    check_guardrail,
    check_heartbeat_action_query,
    ensure_stream_publications,
    unpublished_signal_table,
)
from .signal_channels.polling import ChannelPolling
from .standby import check_standby, log_slot_creation_wait

__all__ = ["ConnectorPlanner"]

log = logging.getLogger(__name__)


class ConnectorPlanner:
    def __init__(self, config: ConnectorConfig, *, state_location: str | None = None, run_id: str | None = None) -> None:
        check_parallel_streaming(config)  # before any connection: what N streams cannot do is refused first
        self.config = config
        self.conninfo = conninfo_from_config(config)
        self.admin = sql_connection(config, autocommit=True, application_name="sparkcdc-driver")
        self.database = self.admin.info.dbname
        self.slot_name = config.settings.slot_name
        #: slot.failover: every slot sparkcdc creates is a failover slot (17+), one it finds is made one.
        self.failover = config.settings.slot_failover
        #: Every slot the connector streams through (one unless ``sparkcdc.stream.slots`` says more), the main one first.
        self.slot_names = tuple(stream.slot for stream in stream_slots(config))
        self.run_id = run_id or str(uuid.uuid4())
        self.state_location = str(state_location or config.settings.sparkcdc_state_location
                                  or default_state_location(self.database, self.slot_name))
        self.state_store = StreamStateStore(self.state_location)
        # Each stream hands its own state (its last commit) from batch to batch; stream 0's is ``state_store``.
        self.state_stores = tuple(StreamStateStore(self.state_location, index) for index in range(len(self.slot_names)))
        self.metrics_location = metrics_location(config, self.state_location)
        self.mode = config.settings.snapshot_mode
        self.heartbeat = HeartbeatTimer(config.settings.heartbeat_interval_ms)
        self.max_batch_bytes = config.settings.sparkcdc_max_batch_wal_bytes
        self.available_now_target: int | None = None
        #: offset.mismatch.strategy: a slot behind the checkpoint that the strategy does not advance at the
        #: start is not confirmed when batches are planned, only when one commits (see driver_slots.check_resumed_slot).
        self._confirm_held = False
        #: The initial or blocking snapshot of the batch planned, open until that batch commits.
        self.snapshot = HeldSnapshot(config, self.conninfo, self.metrics_location)
        self._reports_closed = False  # whether an earlier run's open snapshot reports were completed
        self._checked_resume = False
        self._streaming_delayed = False  # streaming.delay.ms is waited once, before the first streaming batch
        # Streaming never starts before this LSN: the consistent point of a snapshot re-taken after
        # the checkpoint had recorded an older one (see "The initial snapshot" in docs/spark-source.md).
        self._floor_lsn = 0
        self._initial: dict[str, Any] | None = None
        #: The server was a standby at the start (engine/standby.py); set by _set_up.
        self.standby = False
        self.tables: list[tuple[str, str]] = []
        self.notifier = Notifier(config.settings.notification_enabled_channels, config.topic_prefix)
        self.notification_topic = config.settings.notification_sink_topic_name if self.notifier.sinks else None
        self.signal_table = signal_table_of(config)
        self.source_signals = "source" in enabled_channels(config) and self.signal_table is not None
        # file and kafka: polled from the start offset's cursor when a batch is planned
        self.channels = ChannelPolling(config)
        self.incremental = IncrementalSnapshots(config, self.admin, self.conninfo, self.notifier)
        # The end planned for a start whose batch reads an incremental snapshot chunk (or acts on signals):
        # planning a chunk writes watermarks and exports a snapshot, and a signal is acted on once, so it
        # is done once per start, however often Spark asks.
        self._planned: tuple[dict[str, Any], dict[str, Any]] | None = None

    # -- a new query -----------------------------------------------------------------------------
    def initial_offset(self) -> dict[str, Any]:
        """The offset a new query starts from. Spark asks more than once; the set-up (which may
        create a slot and an exported snapshot) must happen once, so the answer is kept."""
        if self._initial is None:
            self._set_up()
            self._checked_resume = True
            if takes_snapshot(self.config, fresh=True):
                self._initial = self._begin_snapshot().to_dict()
            else:
                slot = ensure_slots(self.admin, self.conninfo, self.slot_names, failover=self.failover, standby=self.standby)
                self.notifier.initial("SKIPPED")
                self._initial = SourceOffset(self.slot_name, self.database, slot.confirmed_flush_lsn or 0,
                                             streams=len(self.slot_names)).to_dict()
        return self._initial

    def _set_up(self) -> None:
        # slot.stream.params: origin needs a PostgreSQL 16 pgoutput; refused before anything is set up or read
        check_server_supports(self.config.raw, self.admin.info.server_version)
        if self.failover and self.admin.info.server_version < FAILOVER_SLOTS_MAJOR * 10000:
            raise ConfigurationError(f"failover slots need PostgreSQL {FAILOVER_SLOTS_MAJOR} or later; the server "
                              f"is {self.admin.info.server_version // 10000} (set slot.failover=false)", prop="slot.failover")
        self.tables = captured_tables(self.admin, self.config)
        check_guardrail(self.config, self.tables)  # guardrail.collections.max, before anything is set up or read
        published = list(self.tables)
        if self.signal_table is not None and self.signal_table not in published:
            published.append(self.signal_table)  # its rows must reach the stream (signals, watermarks)
        # A standby (PostgreSQL 16+) is read from as it is: what would write there is refused first (engine/standby.py).
        self.standby = check_standby(self.admin, self.config, published)
        apply_replica_identities(self.admin, self.config, self.tables)
        ensure_stream_publications(self.admin, self.config, published)
        check_heartbeat_action_query(self.admin, self.config)
        unpublished = unpublished_signal_table(self.admin, self.config, self.signal_table)
        if unpublished is not None:
            log.warning("%s", unpublished[0])
        write_json(self.metrics_location / "connector.json", {"captured_tables": [f"{s}.{t}" for s, t in self.tables]})

    @property
    def streams(self) -> bool:
        return streams_after_snapshot(self.config)

    def _begin_snapshot(self) -> SourceOffset:
        """A fresh slot with an exported snapshot; the offset of the snapshot batch's start."""
        time.sleep(self.config.settings.snapshot_delay_ms / 1000)  # snapshot.delay.ms, as Debezium: before the snapshot
        for name in self.slot_names:
            if get_slot(self.admin, name) is not None:
                # A snapshot must start where its slot starts: a slot at some older position would
                # replay changes the snapshot already contains, so it is re-created.
                log.warning("re-creating slot %s for a new initial snapshot (snapshot.mode=%s)", name, self.mode)
                drop_slot(self.admin, name, wait=30)
        self.snapshot.close()
        if self.standby:
            log_slot_creation_wait(self.slot_name)
        if self.streams:
            # The other streams' slots first, the exporting one last: its consistent point is then at or
            # after theirs, and every stream starts there (a slot asked to start past its own consistent
            # point skips the transactions that commit before the asked position).
            for name in self.slot_names[1:]:
                create_logical_slot(self.admin, name, failover=self.failover)
        include = self.config.settings.snapshot_include_collection_list
        tables = tuple(t for t in self.tables if not include or any(p.fullmatch(f"{t[0]}.{t[1]}") for p in include))
        # A temporary slot (nothing streams after the snapshot) cannot be a failover slot; it has no use after one.
        spec = self.snapshot.take_initial(self.slot_name, tables, temporary=not self.streams, failover=self.failover and self.streams)
        # Debezium carries the snapshot's time into streaming (see StreamingProcessor).
        for store in self.state_stores:
            store.write(spec.lsn, StreamState(None, spec.ts_us, relations=self.snapshot.relations))
        return SourceOffset(self.slot_name, self.database, spec.lsn, phase="snapshot", snapshot=spec, streams=len(self.slot_names))

    # -- offsets ---------------------------------------------------------------------------------
    def parse(self, raw: dict[str, Any]) -> SourceOffset:
        return SourceOffset.from_dict(raw, slot=self.slot_name, database=self.database, streams=len(self.slot_names))

    def prepare_for_available_now(self) -> None:
        """``--once``: the target is everything written to the WAL now."""
        self.available_now_target = self._insert_lsn()

    def latest_offset(self, start_raw: dict[str, Any]) -> dict[str, Any]:
        start = self.parse(start_raw)
        if not self._checked_resume:
            self._checked_resume = True
            resumed = self._resume(start)
            if resumed is not None:
                return self._ending(start, resumed)
        if start.phase == "snapshot":
            # The snapshot batch; streaming then starts at its LSN. Its notifications are fixed now,
            # with the batch: STARTED before its chunks, COMPLETED after them (see partitions).
            self.notifier.initial("STARTED")
            self.notifier.initial("COMPLETED")
            return self._ending(start, start.streaming_from(start.lsn))
        if not self.streams:
            return start_raw
        if not self._streaming_delayed:
            self._streaming_delayed = True
            time.sleep(self.config.settings.streaming_delay_ms / 1000)
        if not self._confirm_held:
            confirm_slots(self.admin, self.config, self.slot_names, start.lsn)  # ``start`` ends a committed batch (docs/spark-source.md)
        if self._planned is not None and self._planned[0] == start_raw:
            return self._planned[1]
        base = max(start.lsn, self._floor_lsn)
        end_lsn = reachable = self._insert_lsn()
        if self.available_now_target is not None:
            end_lsn = reachable = min(end_lsn, max(self.available_now_target, base))
        if self.max_batch_bytes > 0:
            end_lsn = min(end_lsn, base + self.max_batch_bytes)
        end = start.at(max(end_lsn, base))
        if self.available_now_target is None and self.heartbeat.due():
            self._beat()
            end = end.with_heartbeat().at(max(self._insert_lsn(), base))
        end = self._signals_and_snapshots(start, end, backlog=end_lsn < reachable)
        if end == start:  # a moved signal cursor alone is a change: its batch commits the position
            return start_raw  # no batch: notifications made meanwhile wait for the next end
        out = self._ending(start, end)
        if (end.phase == "snapshot" or (end.incremental is not None and end.incremental.chunk is not None)
                or end.signal_cursor != start.signal_cursor):
            self._planned = (start_raw, out)  # acted on: asked again for this start, the answer stays
        return out

    def _ending(self, start: SourceOffset, end: SourceOffset) -> dict[str, Any]:
        """``end`` as the end of a new batch from ``start``, with the notifications made since the
        last one. Called exactly when a new end is returned, so each notification is in one batch's
        end offset."""
        return end.emitting(self.notifier.take(), start).to_dict()

    # -- blocking snapshots ------------------------------------------------------------------------
    def _begin_blocking(self, request: BlockingRequest, end: SourceOffset) -> SourceOffset:
        """The offset that ends streaming at a blocking snapshot's consistent point.

        The batch up to it streams the changes before the point (see :meth:`partitions`); the next
        batch is the snapshot, read in parallel chunks like the initial one; streaming then goes on
        from the point with the same slot: no gap, no overlap."""
        spec = self.snapshot.take_blocking(self.slot_name, request.tables, request.filters)
        self.notifier.notify("Initial Snapshot", "STARTED", {"data_collections": ",".join(f"{s}.{t}" for s, t in spec.tables)})
        log.info("blocking snapshot of %s at %s (signal %s)", ", ".join(f"{s}.{t}" for s, t in spec.tables),
                 format_lsn(spec.lsn), request.id)
        return replace(end, phase="snapshot", snapshot=spec, lsn=max(end.lsn, spec.lsn))

    def _signals_and_snapshots(self, start: SourceOffset, end: SourceOffset, *, backlog: bool) -> SourceOffset:
        """``end`` with the signals that arrived up to ``start`` (the signal table's) and those the
        polled channels hold now acted on, their positions moved; and, while an incremental snapshot
        runs, its next chunk window planned (the batch then reaches past the window).

        No window is planned while a ``backlog`` (more WAL than ``sparkcdc.max.batch.wal.bytes``)
        waits: the window is written at the end of the WAL, and its batch would take all of it."""
        signals: list[Signal] = []
        cursor = dict(start.signal_cursor or {})
        if self.source_signals and cursor.get("source") != start.lsn:
            state = self.state_store.read(start.lsn)
            if state is not None and state.signals:
                signals = [Signal.from_dict(raw) for raw in state.signals]
                cursor["source"] = start.lsn  # acted on once, even if the next batch ends at the same LSN
        signals += self.channels.poll(cursor)
        if not signals and start.incremental is None:
            return replace(end, signal_cursor=cursor or None)
        incremental: IncrementalState | None = self.incremental.advance(start.incremental, signals, self.tables)
        blocking = self.incremental.blocking
        if blocking is not None:
            return self._begin_blocking(blocking, replace(end, incremental=incremental, signal_cursor=cursor or None))
        high = 0
        if incremental is not None and incremental.chunk is None and not incremental.paused and not backlog:
            incremental, high = self.incremental.plan_chunk(incremental)
        end = replace(end, incremental=incremental, signal_cursor=cursor or None)
        return end.at(max(end.lsn, high)) if high else end

    def _resume(self, start: SourceOffset) -> SourceOffset | None:
        """First ``latest_offset`` of a restarted query: check the slot against the checkpoint."""
        self._set_up()
        slots = {name: get_slot(self.admin, name) for name in self.slot_names}
        # snapshot.mode=when_needed: a new snapshot when any stream's slot is gone or has lost WAL
        usable = all(s is not None and not s.invalidated for s in slots.values())
        if start.phase == "stream" and takes_snapshot(self.config, fresh=False, slot_lost=not usable):
            log.warning("snapshot.mode=%s: a new initial snapshot at restart%s", self.mode, "".join(
                f"; slot {name!r} was invalidated ({invalidation_explained(s, self.admin)})"
                for name, s in slots.items() if s is not None and s.invalidated))
            return self._begin_snapshot()
        if start.phase == "stream" and self.streams:
            refuse_invalidated(self.admin, slots, start)
        if start.phase == "stream":
            self.notifier.initial("SKIPPED")  # as Debezium, at every start that takes no snapshot
        if start.phase == "snapshot" or not self.streams:
            return None  # an interrupted snapshot batch is read again (see partitions); no slot to check otherwise
        state = self.state_store.read(start.lsn)
        if state is not None and state.stream_from_lsn is not None:
            self._floor_lsn = max(self._floor_lsn, state.stream_from_lsn)
        checkpoint = max(start.lsn, self._floor_lsn)
        for index, (name, found) in enumerate(slots.items()):
            read_from, held = check_resumed_slot(self.admin, self.config, self.conninfo, name, found, start, checkpoint,
                                                 self.state_stores[index])
            self._confirm_held = self._confirm_held or held
            self._floor_lsn = max(self._floor_lsn, read_from)  # the first batch's end is not before any stream's start
        return None

    def _replayed_range_slots(self, start: SourceOffset, end: SourceOffset) -> bool:
        """A restarted query first re-runs the batch its checkpoint planned but did not commit, before any
        ``latest_offset`` (where :meth:`_resume` checks the slots). Its slots gone (a failover to a standby
        they had not been synchronised to, a drop), reading it would fail for ever: an error naming the
        slot, or, where the snapshot mode takes a new snapshot for a missing slot (when_needed, always) or
        offset.mismatch.strategy trusts the slot, the batch reads nothing and ``_resume`` decides next (the
        new snapshot holds its changes; a trusted new slot skips them, as it skips the others).
        Whether the batch is read."""
        missing = [name for name in self.slot_names if get_slot(self.admin, name) is None]
        if not missing:
            return True
        if not (takes_snapshot(self.config, fresh=False) or trusts_slot(self.config.settings.offset_mismatch_strategy)):
            raise missing_slot_error(self.admin, self.config, missing[0], start)
        log.warning("slot %s does not exist on %s: the replayed batch %s..%s reads nothing, and what follows is decided "
                    "as at a restart (snapshot.mode=%s, offset.mismatch.strategy=%s)", missing[0], server_of(self.admin),
                    format_lsn(start.lsn), format_lsn(end.lsn), self.mode, self.config.settings.offset_mismatch_strategy)
        return False

    def _insert_lsn(self) -> int:
        return current_wal_insert_lsn(self.admin)

    def _beat(self) -> None:
        query = self.config.settings.heartbeat_action_query
        if query:
            run_statement(self.admin, query)
        else:
            # Table-free: a logical decoding message moves the WAL (and so the slot) even when
            # nothing captured changes; the stream reader never turns it into a record.
            emit_logical_message(self.admin, HEARTBEAT_MESSAGE_PREFIX)

    # -- planning --------------------------------------------------------------------------------
    def partitions(self, start_raw: dict[str, Any], end_raw: dict[str, Any]) -> list[Any]:
        """The batch's pieces of work, with its notifications (the ``sink`` channel) around them."""
        start, end = self.parse(start_raw), self.parse(end_raw)
        return notification_pieces(self.notification_topic, start.lsn, end.notifications, end.first_notification, self._work(start, end))

    def _work(self, start: SourceOffset, end: SourceOffset) -> list[Any]:
        if start.phase == "snapshot":
            return self._snapshot_partitions(start, end)
        if end.phase == "snapshot" and end.snapshot is not None and end.snapshot.kind == "blocking":
            # The changes before a blocking snapshot's consistent point; the snapshot is the next batch.
            return [StreamRange(start.to_dict(), end.to_dict(), self.state_location)] if end.lsn > start.lsn else []
        if start.phase == "stream" and not self.snapshot.planned and not self._reports_closed:
            # Streaming on from a committed offset past a snapshot that an earlier run took: that
            # snapshot's batch was committed, but Spark tells a source of its last batch's commit only
            # when it plans the next batch, which an availableNow run (--once) never does.
            self._reports_closed = True
            complete_snapshot_reports(self.metrics_location)
        reads_chunk = end.incremental is not None and end.incremental.chunk is not None
        if end.phase == "snapshot" or (end.lsn <= start.lsn and end.heartbeat == start.heartbeat and not reads_chunk):
            return []
        if not self._checked_resume and self.streams and not self._replayed_range_slots(start, end):
            return []
        # One range per stream (sparkcdc.stream.slots): the same WAL, each through its own slot and publication.
        first, last = replace(start, notifications=()).to_dict(), replace(end, notifications=()).to_dict()
        return [StreamRange(first, last, self.state_location, index) for index in range(len(self.slot_names))]

    def _snapshot_partitions(self, start: SourceOffset, end: SourceOffset) -> list[Any]:
        assert start.snapshot is not None
        held = self.snapshot
        if held.export is None or held.spec is None or held.spec.id != start.snapshot.id:
            # The exported snapshot died with the driver that created it: snapshot again, from a
            # new slot (see "The initial snapshot" in docs/spark-source.md).
            log.warning("the exported snapshot of an interrupted %s snapshot is gone: taking a new one", start.snapshot.kind)
            self._set_up()
            if start.snapshot.kind == "blocking":
                held.take_blocking(self.slot_name, start.snapshot.tables, start.snapshot.filters)
            else:
                self._begin_snapshot()
        assert held.export is not None and held.tx is not None and held.spec is not None
        if end.lsn != held.spec.lsn:
            # A re-executed snapshot batch (the checkpoint fixed its end before the driver died):
            # the new slot starts at the new snapshot's consistent point; streaming goes on from there.
            self._floor_lsn = held.spec.lsn
            # After a blocking snapshot the slot is the same: the stream's last commit still precedes the point.
            before = self.state_store.read(end.lsn) if start.snapshot.kind == "blocking" else None
            last_commit, last_ts = (before.last_commit_lsn, before.last_commit_ts_us) if before else (None, held.spec.ts_us)
            # What the stream knows of the tables' shapes: the stream's before a blocking snapshot, which
            # emits no schema change records; the new initial snapshot's (whose CREATE records it emits).
            relations = (before.relations if before else ()) if start.snapshot.kind == "blocking" else held.relations
            for store in self.state_stores:
                store.write(end.lsn, StreamState(last_commit, last_ts, stream_from_lsn=held.spec.lsn, relations=relations))
        held.planned = True
        return list(held.plan)

    # -- after Spark committed a batch -----------------------------------------------------------
    def commit(self, end_raw: dict[str, Any]) -> None:
        end = self.parse(end_raw)
        if end.phase != "stream":
            return
        held = self.snapshot
        if held.export is not None and held.planned:
            if held.spec is not None and held.spec.kind == "blocking":
                self.notifier.notify("Initial Snapshot", "COMPLETED", {})
                log.info("blocking snapshot %s committed", held.spec.id)
            held.report_completed()
            held.close()  # the snapshot batch is committed: its exported snapshot has served
        self.incremental.release(end.incremental)
        self.channels.acknowledge(end.signal_cursor)
        if self.streams:
            self._confirm_held = False
            confirm_slots(self.admin, self.config, self.slot_names, end.lsn)
            self.state_store.prune(end.lsn)
            prune_stream_reports(self.metrics_location, end.lsn)

    # -- teardown --------------------------------------------------------------------------------
    def stop(self) -> None:
        self.snapshot.close()
        self.incremental.close()
        self.channels.close()
        if self.config.settings.slot_drop_on_stop:
            for name in self.slot_names:
                try:
                    drop_slot(self.admin, name, wait=30)
                except ServerError as exc:  # drop_slot maps the server's errors (postgres.errors)
                    log.warning("slot.drop.on.stop: could not drop %s: %s", name, exc)
        self.admin.close()

