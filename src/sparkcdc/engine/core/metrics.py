"""Debezium's connector metrics (snapshot, streaming, incremental snapshot), as a pure model.

Debezium keeps these counters in the JVM that reads the log, and JMX publishes them as the
attributes of ``debezium.postgres:type=connector-metrics,context=snapshot|streaming,server=<topic.prefix>``.
In a Spark run the reading happens in executor tasks and the decisions in the driver, in other
processes, so the counts arrive as small *reports* (see :mod:`sparkcdc.engine.core.metric_reports`)
and this module folds them into the attributes Debezium documents, with the same names and
meanings (the PostgreSQL connector manual's "Snapshot metrics" and "Streaming metrics" tables, and
the incremental-snapshot attributes of the snapshot MBean). Pure: no I/O, no clock of its own
(``now_ms`` is passed in), so the folding is tested without Spark or a server.

Where sparkcdc cannot mean what Debezium means (there is no queue between a reader and Kafka
Connect), the attribute keeps Debezium's name and a constant value; docs/metrics.md lists them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ATTRIBUTES",
    "Attribute",
    "ConnectorMetrics",
    "SNAPSHOT",
    "STREAMING",
]

SNAPSHOT = "snapshot"
STREAMING = "streaming"


@dataclass(frozen=True)
class Attribute:
    """One attribute of a Debezium metrics MBean: its context, JMX type and documented meaning."""

    name: str
    context: str  # SNAPSHOT or STREAMING (the incremental-snapshot attributes are in the snapshot MBean)
    type: str  # Debezium's: long, int, boolean, string, string[], Map
    meaning: str
    incremental: bool = False  # an attribute of the incremental-snapshot table

    @property
    def numeric(self) -> bool:
        """Whether the Prometheus JMX exporter turns it into a sample (it skips strings, arrays, maps of strings)."""
        return self.type in ("long", "int", "boolean")


def _a(name: str, context: str, kind: str, meaning: str, incremental: bool = False) -> Attribute:
    return Attribute(name, context, kind, meaning, incremental)


_QUEUE = "there is no such queue in sparkcdc (Spark tasks hand whole batches over): constant"
# The two tables of the PostgreSQL connector manual (reference/seeds), in its order, then what later
# Debezium versions added to them (create/update/delete counts, erroneous events, pauses), and the
# incremental-snapshot attributes of the snapshot MBean.
ATTRIBUTES: tuple[Attribute, ...] = (
    _a("LastEvent", SNAPSHOT, "string", "The last snapshot event that the connector has read."),
    _a("MilliSecondsSinceLastEvent", SNAPSHOT, "long", "The number of milliseconds since the connector has read and processed the most recent event."),
    _a("TotalNumberOfEventsSeen", SNAPSHOT, "long", "The total number of events that this connector has seen since last started or reset."),
    _a("TotalNumberOfCreateEventsSeen", SNAPSHOT, "long", "The total number of create events seen since the last start (0: a snapshot reads)."),
    _a("TotalNumberOfUpdateEventsSeen", SNAPSHOT, "long", "The total number of update events seen since the last start (0: a snapshot reads)."),
    _a("TotalNumberOfDeleteEventsSeen", SNAPSHOT, "long", "The total number of delete events seen since the last start (0: a snapshot reads)."),
    _a("NumberOfEventsFiltered", SNAPSHOT, "long", "The number of events that have been filtered by include/exclude list filtering rules configured on the connector."),
    _a("NumberOfErroneousEvents", SNAPSHOT, "long", "The number of events that could not be processed."),
    _a("MonitoredTables", SNAPSHOT, "string[]", "The list of tables that are monitored by the connector (deprecated: CapturedTables)."),
    _a("CapturedTables", SNAPSHOT, "string[]", "The list of tables that are captured by the connector."),
    _a("QueueTotalCapacity", SNAPSHOT, "int", "The length the queue used to pass events between the snapshotter and the main Kafka Connect loop; " + _QUEUE),
    _a("QueueRemainingCapacity", SNAPSHOT, "int", "The free capacity of the queue used to pass events between the snapshotter and the main Kafka Connect loop; " + _QUEUE),
    _a("TotalTableCount", SNAPSHOT, "int", "The total number of tables that are being included in the snapshot."),
    _a("RemainingTableCount", SNAPSHOT, "int", "The number of tables that the snapshot has yet to copy."),
    _a("SnapshotRunning", SNAPSHOT, "boolean", "Whether the snapshot was started."),
    _a("SnapshotPaused", SNAPSHOT, "boolean", "Whether the snapshot was paused (an incremental snapshot, by a pause-snapshot signal)."),
    _a("SnapshotAborted", SNAPSHOT, "boolean", "Whether the snapshot was aborted."),
    _a("SnapshotCompleted", SNAPSHOT, "boolean", "Whether the snapshot completed."),
    _a("SnapshotDurationInSeconds", SNAPSHOT, "long", "The total number of seconds that the snapshot has taken so far, even if not complete."),
    _a("SnapshotPausedDurationInSeconds", SNAPSHOT, "long", "The total number of seconds the snapshot was paused."),
    _a("RowsScanned", SNAPSHOT, "Map", "Map containing the number of rows scanned for each table in the snapshot; sparkcdc updates it "
       "every 10,000 rows a task reads (or every second) and when a chunk ends."),
    _a("MaxQueueSizeInBytes", SNAPSHOT, "long", "The maximum buffer of the queue in bytes (max.queue.size.in.bytes); " + _QUEUE),
    _a("CurrentQueueSizeInBytes", SNAPSHOT, "long", "The current data of records in the queue in bytes; " + _QUEUE),
    _a("ChunkId", SNAPSHOT, "string", "The identifier of the current incremental snapshot chunk.", incremental=True),
    _a("ChunkFrom", SNAPSHOT, "string", "The lower bound of the primary key set defining the current chunk.", incremental=True),
    _a("ChunkTo", SNAPSHOT, "string", "The upper bound of the primary key set defining the current chunk.", incremental=True),
    _a("TableFrom", SNAPSHOT, "string", "The lower bound of the primary key set of the currently snapshotted table.", incremental=True),
    _a("TableTo", SNAPSHOT, "string", "The upper bound of the primary key set of the currently snapshotted table.", incremental=True),
    _a("LastEvent", STREAMING, "string", "The last streaming event that the connector has read."),
    _a("MilliSecondsSinceLastEvent", STREAMING, "long", "The number of milliseconds since the connector has read and processed the most recent event."),
    _a("TotalNumberOfEventsSeen", STREAMING, "long", "The total number of events that this connector has seen since last started or reset."),
    _a("TotalNumberOfCreateEventsSeen", STREAMING, "long", "The total number of create events seen since the last start."),
    _a("TotalNumberOfUpdateEventsSeen", STREAMING, "long", "The total number of update events seen since the last start."),
    _a("TotalNumberOfDeleteEventsSeen", STREAMING, "long", "The total number of delete events seen since the last start."),
    _a("NumberOfEventsFiltered", STREAMING, "long", "The number of events that have been filtered by include/exclude list filtering rules configured on the connector."),
    _a("NumberOfErroneousEvents", STREAMING, "long", "The number of events skipped because they could not be processed (event.processing.failure.handling.mode=warn/skip)."),
    _a("MonitoredTables", STREAMING, "string[]", "The list of tables that are monitored by the connector (deprecated: CapturedTables)."),
    _a("CapturedTables", STREAMING, "string[]", "The list of tables that are captured by the connector."),
    _a("QueueTotalCapacity", STREAMING, "int", "The length the queue used to pass events between the streamer and the main Kafka Connect loop; " + _QUEUE),
    _a("QueueRemainingCapacity", STREAMING, "int", "The free capacity of the queue used to pass events between the streamer and the main Kafka Connect loop; " + _QUEUE),
    _a("Connected", STREAMING, "boolean", "Flag that denotes whether the connector is currently connected to the database server."),
    _a("MilliSecondsBehindSource", STREAMING, "long", "The number of milliseconds between the last change event's timestamp and the connector processing it "
       "(-1 before the first change event). It includes any difference between the clocks of the server and the reader."),
    _a("NumberOfCommittedTransactions", STREAMING, "long", "The number of processed transactions that were committed."),
    _a("SourceEventPosition", STREAMING, "Map", "The coordinates of the last received event."),
    _a("LastTransactionId", STREAMING, "string", "Transaction identifier of the last processed transaction."),
    _a("MaxQueueSizeInBytes", STREAMING, "long", "The maximum buffer of the queue in bytes (max.queue.size.in.bytes); " + _QUEUE),
    _a("CurrentQueueSizeInBytes", STREAMING, "long", "The current data of records in the queue in bytes; " + _QUEUE),
)


@dataclass
class _Snapshot:
    """What the reports of one snapshot (initial or blocking) add up to."""

    id: str
    kind: str
    started_ms: int
    tables: tuple[str, ...]
    completed_ms: int | None = None
    aborted: bool = False
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows read (in table order once seen)
    done_chunks: dict[str, int] = field(default_factory=dict)
    chunk_counts: dict[str, int] = field(default_factory=dict)
    last_event: str = ""
    last_event_ms: int | None = None


@dataclass
class _Streaming:
    events: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    erroneous: int = 0
    filtered: int = 0
    transactions: int = 0
    last_event: str = ""
    last_event_ms: int | None = None
    behind_ms: int = -1
    last_lsn: int | None = None
    last_commit_lsn: int | None = None
    last_tx_id: int | None = None
    last_source_ts_us: int | None = None


@dataclass
class _Incremental:
    """The incremental snapshot the last stream report saw, and the rows its chunks read."""

    id: str
    started_ms: int
    tables: tuple[str, ...]
    remaining: int = 0
    paused: bool = False
    paused_ms: int = 0
    paused_since_ms: int | None = None
    chunk_id: str = ""
    chunk_from: str = ""
    chunk_to: str = ""
    table_from: str = ""
    table_to: str = ""
    completed_ms: int | None = None
    rows: dict[str, int] = field(default_factory=dict)


class ConnectorMetrics:
    """Debezium's attributes for one connector (``topic.prefix``), folded from reports.

    ``fold_*`` take the dictionaries the reports hold; a report of a stream batch is folded once it
    is final (replays of a batch rewrite the same report, and the caller folds each batch once).
    Snapshot chunk reports are cumulative (a task rewrites its chunk's report as it reads), so the
    snapshot's rows are recomputed from all of the snapshot's chunk reports on each fold.
    """

    def __init__(self, connector_name: str, *, queue_capacity: int = 8192, max_queue_bytes: int = 0) -> None:
        self.connector_name = connector_name
        self.queue_capacity = queue_capacity
        self.max_queue_bytes = max_queue_bytes
        self.captured_tables: tuple[str, ...] = ()
        self.snapshot: _Snapshot | None = None
        self.incremental: _Incremental | None = None
        self.streaming = _Streaming()
        self.connected = False

    # -- folding reports -------------------------------------------------------------------------
    def fold_connector(self, report: Mapping[str, Any]) -> None:
        self.captured_tables = tuple(report.get("captured_tables") or ())

    def fold_snapshot(self, plan: Mapping[str, Any], chunks: Iterable[Mapping[str, Any]]) -> None:
        """The state of snapshot ``plan`` (the planner's report) with all its chunk reports so far."""
        snapshot = _Snapshot(str(plan["snapshot"]), str(plan.get("kind", "initial")), int(plan["started_ms"]),
                             tuple(plan.get("tables") or ()), plan.get("completed_ms"), bool(plan.get("aborted")))
        snapshot.rows = {table: 0 for table in snapshot.tables}
        latest: Mapping[str, Any] | None = None
        for chunk in chunks:
            table = str(chunk["table"])
            snapshot.rows[table] = snapshot.rows.get(table, 0) + int(chunk.get("rows", 0))
            snapshot.chunk_counts[table] = int(chunk.get("chunk_count", 1))
            if chunk.get("done"):
                snapshot.done_chunks[table] = snapshot.done_chunks.get(table, 0) + 1
            if chunk.get("rows") and (latest is None or int(chunk.get("updated_ms", 0)) >= int(latest.get("updated_ms", 0))):
                latest = chunk
        if latest is not None:
            snapshot.last_event = str(latest.get("last_event", ""))
            snapshot.last_event_ms = int(latest.get("updated_ms", 0))
        self.snapshot = snapshot

    def fold_stream_batch(self, report: Mapping[str, Any], now_ms: int) -> None:
        """A streaming micro-batch's final report: its events counted once."""
        s = self.streaming
        events = int(report.get("events", 0))
        s.events += events
        s.created += int(report.get("created", 0))
        s.updated += int(report.get("updated", 0))
        s.deleted += int(report.get("deleted", 0))
        s.erroneous += int(report.get("erroneous", 0))
        s.filtered += int(report.get("filtered", 0))
        s.transactions += int(report.get("transactions", 0))
        if events:
            s.last_event = str(report.get("last_event", ""))
            s.last_event_ms = int(report.get("last_event_ms", now_ms))
            s.behind_ms = int(report.get("behind_ms", s.behind_ms))
            s.last_lsn = report.get("last_lsn")
            s.last_commit_lsn = report.get("last_commit_lsn")
            s.last_tx_id = report.get("last_tx_id")
            s.last_source_ts_us = report.get("last_source_ts_us")
        self._fold_incremental(report.get("incremental"), report.get("read_rows") or {}, now_ms)

    def _fold_incremental(self, state: Mapping[str, Any] | None, read_rows: Mapping[str, int], now_ms: int) -> None:
        current = self.incremental
        if state is None:
            if current is not None and current.completed_ms is None:
                current.completed_ms = now_ms  # the batch after its last chunk carries no snapshot
            return
        if current is None or current.id != state["id"]:
            current = self.incremental = _Incremental(str(state["id"]), now_ms, tuple(state.get("tables") or ()))
        current.remaining = int(state.get("remaining", 0))
        paused = bool(state.get("paused"))
        if paused and not current.paused:
            current.paused_since_ms = now_ms
        elif not paused and current.paused and current.paused_since_ms is not None:
            current.paused_ms += now_ms - current.paused_since_ms
            current.paused_since_ms = None
        current.paused = paused
        if state.get("chunk_id"):  # between chunks (no window in the offset) the last chunk stays the current one
            for name in ("chunk_id", "chunk_from", "chunk_to", "table_from", "table_to"):
                setattr(current, name, str(state.get(name) or ""))
        for table, rows in read_rows.items():
            current.rows[table] = current.rows.get(table, 0) + int(rows)

    def tables_done(self) -> list[str]:
        """The tables of the last initial or blocking snapshot whose every chunk has been read."""
        snap = self.snapshot
        if snap is None:
            return []
        return [t for t in snap.tables if snap.chunk_counts.get(t) and snap.done_chunks.get(t, 0) >= snap.chunk_counts[t]]

    # -- Debezium's attributes -------------------------------------------------------------------
    def snapshot_attributes(self, now_ms: int) -> dict[str, Any]:
        """The snapshot MBean's attributes: of the incremental snapshot while one runs (or ran last),
        else of the last initial or blocking snapshot."""
        values = self._common(SNAPSHOT, now_ms)
        inc, snap = self.incremental, self.snapshot
        if inc is not None and (snap is None or inc.started_ms >= snap.started_ms):
            rows = dict(inc.rows)
            end = inc.completed_ms or now_ms
            paused_ms = inc.paused_ms + (now_ms - inc.paused_since_ms if inc.paused_since_ms is not None else 0)
            values.update(
                TotalTableCount=len(inc.tables), RemainingTableCount=inc.remaining if inc.completed_ms is None else 0,
                SnapshotRunning=inc.completed_ms is None, SnapshotPaused=inc.paused, SnapshotAborted=False,
                SnapshotCompleted=inc.completed_ms is not None, SnapshotDurationInSeconds=(end - inc.started_ms) // 1000,
                SnapshotPausedDurationInSeconds=paused_ms // 1000, RowsScanned=rows, TotalNumberOfEventsSeen=sum(rows.values()),
                ChunkId=inc.chunk_id, ChunkFrom=inc.chunk_from, ChunkTo=inc.chunk_to, TableFrom=inc.table_from, TableTo=inc.table_to,
            )
        elif snap is not None:
            completed_tables = sum(1 for t in snap.tables if snap.chunk_counts.get(t) and snap.done_chunks.get(t, 0) >= snap.chunk_counts[t])
            end = snap.completed_ms or now_ms
            values.update(
                TotalTableCount=len(snap.tables),
                RemainingTableCount=0 if snap.completed_ms else len(snap.tables) - completed_tables,
                SnapshotRunning=snap.completed_ms is None and not snap.aborted, SnapshotPaused=False, SnapshotAborted=snap.aborted,
                SnapshotCompleted=snap.completed_ms is not None, SnapshotDurationInSeconds=max(0, end - snap.started_ms) // 1000,
                SnapshotPausedDurationInSeconds=0, RowsScanned=dict(snap.rows), TotalNumberOfEventsSeen=sum(snap.rows.values()),
                LastEvent=snap.last_event,
                MilliSecondsSinceLastEvent=-1 if snap.last_event_ms is None else max(0, now_ms - snap.last_event_ms),
            )
        return values

    def streaming_attributes(self, now_ms: int) -> dict[str, Any]:
        s = self.streaming
        values = self._common(STREAMING, now_ms)
        values.update(
            LastEvent=s.last_event, MilliSecondsSinceLastEvent=-1 if s.last_event_ms is None else max(0, now_ms - s.last_event_ms),
            TotalNumberOfEventsSeen=s.events, TotalNumberOfCreateEventsSeen=s.created, TotalNumberOfUpdateEventsSeen=s.updated,
            TotalNumberOfDeleteEventsSeen=s.deleted, NumberOfEventsFiltered=s.filtered, NumberOfErroneousEvents=s.erroneous,
            Connected=self.connected, MilliSecondsBehindSource=s.behind_ms, NumberOfCommittedTransactions=s.transactions,
            SourceEventPosition={} if s.last_lsn is None else {
                "lsn": str(s.last_lsn), "txId": str(s.last_tx_id), "ts_usec": str(s.last_source_ts_us),
                "lsn_commit": str(s.last_commit_lsn)},
            LastTransactionId="" if s.last_tx_id is None else str(s.last_tx_id),
        )
        return values

    def attributes(self, context: str, now_ms: int) -> dict[str, Any]:
        return self.snapshot_attributes(now_ms) if context == SNAPSHOT else self.streaming_attributes(now_ms)

    def _common(self, context: str, now_ms: int) -> dict[str, Any]:
        """Every attribute of ``context`` at its value before anything happened."""
        values: dict[str, Any] = {}
        for attribute in ATTRIBUTES:
            if attribute.context != context:
                continue
            values[attribute.name] = {"string": "", "string[]": [], "Map": {}, "boolean": False}.get(attribute.type, 0)
        values.update(MonitoredTables=list(self.captured_tables), CapturedTables=list(self.captured_tables),
                      QueueTotalCapacity=self.queue_capacity, QueueRemainingCapacity=self.queue_capacity,
                      MaxQueueSizeInBytes=self.max_queue_bytes, CurrentQueueSizeInBytes=0, MilliSecondsSinceLastEvent=-1)
        if context == STREAMING:
            values["MilliSecondsBehindSource"] = -1
        return values
