"""The snapshot the driver holds open while its batch runs: the slot exporting it, the transaction
importing it, its spec and the plan of its chunks.

An initial or blocking snapshot is taken when its batch is planned and must stay open until Spark
commits that batch (the tasks reading its chunks import the exported snapshot by name); this keeps
the pieces of one snapshot together, and writes its report for the metrics
(:mod:`.core.metric_reports`). Which slots are re-created around an initial snapshot, and when, is
the planner's decision (:class:`~.planner.ConnectorPlanner`).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from ..debezium.config import ConnectorConfig
from ..postgres.catalog import Catalog
from ..postgres.slots import ExportedSnapshotSlot
from ..postgres.snapshot import SnapshotTransaction
from .core.metric_reports import prune_snapshot_reports, read_json, write_json
from .core.offsets import SnapshotSpec
from .core.schema_changes import table_digest
from .snapshot_plan import SnapshotChunk, plan_snapshot_chunks

__all__ = ["HeldSnapshot"]

Tables = tuple[tuple[str, str], ...]


class HeldSnapshot:
    """The snapshot taken last, while it is open (``export`` is ``None`` otherwise)."""

    def __init__(self, config: ConnectorConfig, conninfo: str, metrics_location: Path) -> None:
        self.config, self.conninfo, self.metrics_location = config, conninfo, metrics_location
        self.export: ExportedSnapshotSlot | None = None
        self.spec: SnapshotSpec | None = None
        self.tx: SnapshotTransaction | None = None
        self.plan: list[SnapshotChunk] = []
        # include.schema.changes: the shapes of the initial snapshot's tables, in its snapshot (see engine/core/schema_changes.py)
        self.relations: tuple[tuple[str, str, int, str], ...] = ()
        #: The snapshot batch was planned (its chunks handed out): only the commit after it may close
        #: the exported snapshot. Spark commits batch N-1 after planning batch N, so the commit that
        #: follows the planning of a blocking snapshot is the batch before it, which must not.
        self.planned = False

    def take_initial(self, slot_name: str, tables: Tables, *, temporary: bool, failover: bool) -> SnapshotSpec:
        """An initial snapshot of ``tables``, exported by a new slot ``slot_name`` (``temporary``: nothing
        streams after it), locked as ``snapshot.locking.mode`` says; its chunks planned."""
        self.close()
        self.export = ExportedSnapshotSlot(self.conninfo, slot_name, temporary=temporary, failover=failover)
        self.tx = SnapshotTransaction(self.conninfo, snapshot_name=self.export.snapshot_name)
        if self.config.settings.snapshot_locking_mode == "shared":
            self.tx.lock_tables(tables, self.config.settings.snapshot_lock_timeout_ms)
        spec = SnapshotSpec(
            id=str(uuid.uuid4()),
            lsn=self.export.consistent_point,
            xid=self.tx.transaction_id(),
            ts_us=time.time_ns() // 1000,
            tables=tables,
        )
        self.spec = spec
        # Planned at once, in the exported snapshot, so the plan sees the tables as close to the
        # slot's consistent point as possible (see "Chunk boundaries" in engine/snapshot_plan.py).
        self.plan = plan_snapshot_chunks(self.tx.conn, self.config, spec, self.export.snapshot_name)
        self._report(spec)
        self.relations = self._relations(tables)
        return spec

    def take_blocking(self, slot_name: str, tables: Tables, filters: Tables) -> SnapshotSpec:
        """A blocking snapshot: a temporary slot exports it (the main slot stays where it is); its chunks
        are planned, each table's rows selected by its statement in ``filters`` where it has one."""
        self.close()
        self.export = ExportedSnapshotSlot(self.conninfo, f"{slot_name}_blocking"[:63], temporary=True)
        self.tx = SnapshotTransaction(self.conninfo, snapshot_name=self.export.snapshot_name)
        spec = SnapshotSpec(
            id=str(uuid.uuid4()), lsn=self.export.consistent_point, xid=self.tx.transaction_id(),
            ts_us=time.time_ns() // 1000, tables=tables, kind="blocking", filters=filters,
        )
        self.spec = spec
        config = self.config
        if filters:
            overrides = {f"snapshot.select.statement.overrides.{name}": statement for name, statement in filters}
            config = ConnectorConfig({**config.raw, "snapshot.select.statement.overrides": ",".join(n for n, _ in filters), **overrides})
        self.plan = plan_snapshot_chunks(self.tx.conn, config, spec, self.export.snapshot_name)
        self._report(spec)
        return spec

    def _relations(self, tables: Tables) -> tuple[tuple[str, str, int, str], ...]:
        """include.schema.changes: the snapshotted tables' shapes as the catalog in the exported snapshot
        describes them, the digest of the Relation message the stream sends for them unchanged: the
        snapshot emits their CREATE records, so the stream reports them again only when they change."""
        if not self.config.settings.include_schema_changes or self.tx is None:
            return ()
        catalog = Catalog(self.tx.conn)
        shapes = []
        for schema, table in tables:
            info = catalog.table_by_name(schema, table)
            shapes.append((schema, table, info.oid, table_digest(info)))
        return tuple(sorted(shapes))

    def _report(self, spec: SnapshotSpec) -> None:
        """The snapshot's report for the metrics (sparkcdc.engine.core.metric_reports): its tables and start."""
        prune_snapshot_reports(self.metrics_location, spec.id)
        write_json(self.metrics_location / f"snapshot-{spec.id}.json", {
            "snapshot": spec.id, "kind": spec.kind, "started_ms": spec.ts_us // 1000, "completed_ms": None,
            "tables": [f"{s}.{t}" for s, t in spec.tables], "chunks": len(self.plan)})

    def report_completed(self) -> None:
        """The snapshot's report says when it completed (its batch committed)."""
        if self.spec is None:
            return
        path = self.metrics_location / f"snapshot-{self.spec.id}.json"
        report = read_json(path)
        if report is not None:
            write_json(path, {**report, "completed_ms": time.time_ns() // 1_000_000})

    def close(self) -> None:
        """The snapshot's transaction and exporting slot closed, its plan dropped."""
        self.plan = []
        self.planned = False
        if self.tx is not None:
            self.tx.close()
            self.tx = None
        if self.export is not None:
            self.export.close()
            self.export = None
