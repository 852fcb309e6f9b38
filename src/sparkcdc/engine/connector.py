"""The connector run in-process: set-up, initial snapshot, then streaming, producing records.

This is the reference execution path: the Spark source runs the same pieces (setup, snapshot record
building, streaming processor) in its own way, parallel and checkpointed. Here everything runs in
one thread, which is what tests, the conformance suite and small deployments need.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from types import TracebackType

from ..debezium.config import ConnectorConfig
from ..debezium.events import EventFactory
from ..debezium.records import ChangeRecord
from ..debezium.table import TableSchemaFactory
from ..lsn import format_lsn
from ..postgres.catalog import Catalog
from ..postgres.errors import ReplicationConnectionLost
from ..postgres.replication import LogicalReplicationReader, ReplicationOptions, StreamRestarted, WalMessage
from ..postgres.slots import ExportedSnapshotSlot, drop_slot, get_slot
from ..postgres.snapshot import SnapshotTransaction, connect_with_text_settings
from .connection import conninfo_from_config
from .filters import TableFilter
from .heartbeat import HeartbeatTimer
from .setup import apply_replica_identities, captured_tables, ensure_publication_for
from .snapshot import SnapshotContext, snapshot_records
from .streaming import StreamingProcessor
from .tables import TableResolver

__all__ = ["LocalConnector"]

_SNAPSHOT_MODES_WITH_DATA = frozenset({"initial", "initial_only", "always", "when_needed"})


class LocalConnector:
    """Runs one connector configuration; iterate :meth:`records` (or call :meth:`poll`)."""

    def __init__(self, config: ConnectorConfig, *, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.config = config
        self.conninfo = conninfo_from_config(config)
        self.admin = connect_with_text_settings(self.conninfo, autocommit=True, application_name="sparkcdc-admin")
        self.database = self.admin.info.dbname
        self.factory = TableSchemaFactory(config)
        self.events = EventFactory(config, self.database, self.factory.topics, clock_ns=clock_ns)
        self.events.set_run_id(str(uuid.uuid4()))
        self.resolver = TableResolver(Catalog(self.admin), self.factory, TableFilter(config))
        self.processor = StreamingProcessor(config, self.resolver, self.events)
        self.slot_name = config.get("slot.name") or "debezium"
        self.heartbeat = HeartbeatTimer(config.get_int("heartbeat.interval.ms"))
        self.heartbeat_query = config.get("heartbeat.action.query")
        self.tables: list[tuple[str, str]] = []
        self.start_lsn = 0
        self._reader: LogicalReplicationReader | None = None
        self._snapshot: Iterator[ChangeRecord] | None = None
        self._snapshot_slot: ExportedSnapshotSlot | None = None
        self._snapshot_tx: SnapshotTransaction | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> LocalConnector:
        """Publication and slot set-up; opens the snapshot (if any) and the replication stream."""
        self.tables = captured_tables(self.admin, self.config)
        apply_replica_identities(self.admin, self.config, self.tables)
        ensure_publication_for(self.admin, self.config, self.tables)
        mode = self.config.get("snapshot.mode")
        slot = get_slot(self.admin, self.slot_name)
        wants_data = mode in ("always", "initial_only") or (mode in ("initial", "when_needed") and slot is None) or (
            mode == "configuration_based" and self.config.get_bool("snapshot.mode.configuration.based.snapshot.data")
        )
        if slot is None:
            self._snapshot_slot = ExportedSnapshotSlot(self.conninfo, self.slot_name)
            self.start_lsn = self._snapshot_slot.consistent_point
            snapshot_name: str | None = self._snapshot_slot.snapshot_name
        else:
            self.start_lsn = slot.confirmed_flush_lsn or 0
            snapshot_name = None
        if wants_data:
            self._snapshot = self._snapshot_iterator(snapshot_name)
        else:
            self._close_snapshot_slot()
        return self

    def _snapshot_iterator(self, snapshot_name: str | None) -> Iterator[ChangeRecord]:
        isolation = self.config.get("snapshot.isolation.mode") or "serializable"
        tx = self._snapshot_tx = SnapshotTransaction(self.conninfo, snapshot_name=snapshot_name, isolation=isolation)
        tx_id_row = tx.conn.execute("SELECT txid_current()").fetchone()
        context = SnapshotContext(lsn=self.start_lsn, tx_id=int(tx_id_row[0]) if tx_id_row else None, ts_us=time.time_ns() // 1000)
        include = self.config.get_patterns("snapshot.include.collection.list")
        tables = [t for t in self.tables if not include or any(p.fullmatch(f"{t[0]}.{t[1]}") for p in include)]
        if self.config.get("snapshot.locking.mode") == "shared":
            tx.lock_tables(tables, self.config.get_int("snapshot.lock.timeout.ms"))
        plans = []
        for schema, table in tables:
            table_schema = self.resolver.for_table(schema, table)
            columns = [c.name for c in table_schema.description.columns]
            plans.append((table_schema, _LazyRows(tx, self.config, schema, table, columns)))
        try:
            yield from snapshot_records(self.events, context, plans)
            # Debezium's offset carries the snapshot's time into streaming; a non-transactional
            # message before the first streamed commit reports it (see StreamingProcessor).
            if self.processor.last_commit_ts_us is None:
                self.processor.last_commit_ts_us = context.ts_us
        finally:
            tx.close()
            self._close_snapshot_slot()

    def _close_snapshot_slot(self) -> None:
        if self._snapshot_slot is not None:
            self._snapshot_slot.close()
            self._snapshot_slot = None

    @property
    def streams(self) -> bool:
        return self.config.get("snapshot.mode") != "initial_only"

    def records(self, *, idle_timeout: float | None = None) -> Iterator[ChangeRecord]:
        """Snapshot records, then streamed records; stops after ``idle_timeout`` seconds without data."""
        if self._snapshot is not None:
            yield from self._snapshot
            self._snapshot = None
        if not self.streams:
            return
        reader = self._open_reader()
        while True:
            item = reader.read(timeout=idle_timeout)
            if item is None:
                return
            yield from self.handle(item)

    def poll(self, timeout: float) -> list[ChangeRecord]:
        """Records as soon as there are some, waiting up to ``timeout`` seconds for them (snapshot
        first, whole). A streamed batch is what one read of the replication stream gives (at most a
        few thousand records), so that a backlog passes through in batches that stay in the caches."""
        if self._snapshot is not None:
            batch = list(self._snapshot)
            self._snapshot = None
            return batch
        if not self.streams:
            return []
        reader = self._open_reader()
        out: list[ChangeRecord] = []
        deadline = time.monotonic() + timeout
        while True:
            wait = max(deadline - time.monotonic(), 0.0)
            if self.heartbeat.enabled:
                wait = min(wait, self.heartbeat.interval)
            items = reader.read_batch(timeout=wait)
            if items and isinstance(items[0], StreamRestarted):
                out.extend(self.handle(items[0]))  # raises: the in-process connector does not resume mid-run
            out.extend(self.processor.process_batch(items))  # type: ignore[arg-type]
            if self.heartbeat.due():
                out.append(self._heartbeat())
            if out or time.monotonic() >= deadline:
                return out

    def _heartbeat(self) -> ChangeRecord:
        if self.heartbeat_query:
            self.admin.execute(self.heartbeat_query.encode())
        return self.events.heartbeat()

    def handle(self, item: WalMessage | StreamRestarted) -> list[ChangeRecord]:
        if isinstance(item, StreamRestarted):
            raise ReplicationConnectionLost(f"replication restarted from {format_lsn(item.start_lsn)}: {item.reason}", slot=self.slot_name)
        return self.processor.process(item)

    def confirm(self, lsn: int) -> None:
        if self._reader is not None:
            self._reader.confirm(lsn)

    def _open_reader(self) -> LogicalReplicationReader:
        if self._reader is None:
            options = ReplicationOptions(
                self.slot_name,
                (self.config.get("publication.name") or "dbz_publication",),
                proto_version=1,
                messages=True,
                status_interval=self.config.get_int("status.update.interval.ms") / 1000,
            )
            self._reader = LogicalReplicationReader(self.conninfo, options, start_lsn=self.start_lsn).start()
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._snapshot_tx is not None:
            self._snapshot_tx.close()
        self._close_snapshot_slot()
        if self.config.get_bool("slot.drop.on.stop"):
            drop_slot(self.admin, self.slot_name, wait=30)
        self.admin.close()

    def __enter__(self) -> LocalConnector:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _LazyRows:
    """A table's snapshot rows, read only when iterated (one COPY at a time on the snapshot connection)."""

    def __init__(self, tx: SnapshotTransaction, config: ConnectorConfig, schema: str, table: str, columns: list[str]) -> None:
        self.tx, self.config, self.schema, self.table, self.columns = tx, config, schema, table, columns

    def __iter__(self) -> Iterator[tuple[str | None, ...]]:
        override = self.config.get(f"snapshot.select.statement.overrides.{self.schema}.{self.table}")
        if override:
            return self.tx.rows(override, len(self.columns))
        return self.tx.table_rows(self.schema, self.table, self.columns)

