"""``sparkcdc status``: slot, publication and checkpoint position as one JSON-able report.

One plain dict feeds both the human view (Rich tables) and ``--json`` (monitoring scripts), so
the two can never disagree. LSNs appear in PostgreSQL's ``X/XXXXXXXX`` form, distances in bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from ..debezium.config import ConnectorConfig
from ..engine.core.incremental import IncrementalState
from ..engine.core.stream_slots import stream_slots
from ..lsn import format_lsn, parse_lsn
from ..postgres.server_facts import publication_facts, slot_lag
from .checkpoint import BatchOffset, CheckpointState

__all__ = ["checkpoint_report", "server_report"]


def _lsn(value: int | None) -> str | None:
    return None if value is None else format_lsn(value)


def server_report(conn: psycopg.Connection, config: ConnectorConfig) -> dict[str, Any]:
    """The slot and publication (stream 0's), and with ``sparkcdc.stream.slots`` > 1 the other streams' under ``streams``."""
    streams = stream_slots(config)
    out: dict[str, Any] = {"database": conn.info.dbname, "slot": _slot_report(conn, streams[0].slot),
                           "publication": _publication_report(conn, streams[0].publication)}
    if len(streams) > 1:
        out["streams"] = [{"index": s.index, "slot": _slot_report(conn, s.slot), "publication": _publication_report(conn, s.publication)}
                          for s in streams[1:]]
    return out


def _slot_report(conn: psycopg.Connection, slot_name: str) -> dict[str, Any]:
    lag = slot_lag(conn, slot_name)
    if lag is None:
        return {"name": slot_name, "exists": False}
    state = lag.state
    return {
        "name": slot_name,
        "exists": True,
        "plugin": state.plugin,
        "database": state.database,
        "active": state.active,
        "active_pid": state.active_pid,
        "confirmed_flush_lsn": _lsn(state.confirmed_flush_lsn),
        "restart_lsn": _lsn(state.restart_lsn),
        "wal_lsn": _lsn(lag.wal_lsn),
        "lag_bytes": lag.confirmed_lag_bytes,
        "retained_bytes": lag.retained_bytes,
        "wal_status": state.wal_status,
        # PostgreSQL 17+ (None / false before): why the server gave the slot up, since when nothing
        # reads it, and whether it is a failover slot (or, on a standby, a synchronised copy of one)
        "invalidation_reason": state.invalidation_reason,
        "inactive_since": state.inactive_since.isoformat() if state.inactive_since is not None else None,
        "failover": state.failover,
        "synced": state.synced,
    }


def _publication_report(conn: psycopg.Connection, name: str) -> dict[str, Any]:
    pub = publication_facts(conn, name)
    publication: dict[str, Any] = {"name": pub.name, "exists": pub.exists}
    if pub.exists:
        publication |= {"all_tables": pub.all_tables, "operations": list(pub.operations),
                        "tables": [f"{schema}.{table}" for schema, table in pub.tables]}
    return publication


def _batch(batch: BatchOffset | None) -> dict[str, Any] | None:
    if batch is None:
        return None
    return {"batch": batch.batch_id, "phase": batch.phase, "lsn": _lsn(batch.lsn), "slot": batch.slot,
            "database": batch.database, "offset": batch.offset, "file": str(batch.path)}


def _key(key: tuple[str, ...] | None) -> str | None:
    return None if key is None else ",".join(key)  # as Debezium's notifications write keys


def _incremental(state: CheckpointState, warnings: list[str]) -> dict[str, Any] | None:
    """The incremental snapshot the checkpoint's newest offset carries (engine/core/incremental.py), seen
    from the output: a committed offset's chunk has been read; a pending one's is being read."""
    batch = state.pending or state.last_committed
    raw = (batch.offset or {}).get("incremental") if batch is not None else None
    if batch is None or not raw:
        return None
    try:
        planned = IncrementalState.from_dict(raw)
    except (KeyError, TypeError, ValueError) as exc:
        warnings.append(f"{batch.path}: the incremental snapshot in the offset cannot be read ({exc!r})")
        return None
    committed = batch is state.last_committed
    now = planned.chunk_read()[0] if committed else planned
    reading = None if committed or planned.chunk is None else planned.chunk
    return {
        "id": planned.id,
        "batch": batch.batch_id,
        "committed": committed,
        "tables_left": [c.name for c in now.collections],
        "current_table": None if now.current is None else now.current.name,
        "chunks_read": planned.chunks - (1 if reading is not None else 0),
        "reading": None if reading is None else reading.describe(),
        "last_key": _key(now.last_key),
        "max_key": _key(now.max_key),
        "rows_scanned": now.rows,
        "paused": planned.paused,
    }


def _newest_source_commit(directory: Path, committed: BatchOffset | None, config: ConnectorConfig) -> dict[str, Any] | None:
    """When the newest transaction in the committed output was committed at the source, and how long
    ago: the streaming state the last committed batch left (``sparkcdc.state.location``, by default
    ``<checkpoint>/sparkcdc-state`` as ``sparkcdc run`` sets it). With changes waiting in the slot
    (``lag_bytes`` > 0), the age is how far the output is behind the source, in time."""
    if committed is None or committed.lsn is None:
        return None
    import time
    from datetime import datetime, timezone

    from ..engine.core.state_store import StreamStateStore

    location = config.settings.sparkcdc_state_location or directory / "sparkcdc-state"
    saved = StreamStateStore(location).read(committed.lsn)
    if saved is None or not saved.last_commit_ts_us:
        return None
    ts_us = saved.last_commit_ts_us
    return {"lsn": _lsn(saved.last_commit_lsn),
            "committed_at": datetime.fromtimestamp(ts_us / 1e6, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "age_seconds": round(max(0.0, time.time() - ts_us / 1e6), 3)}


def checkpoint_report(directory: Path, state: CheckpointState, config: ConnectorConfig,
                      slot: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The checkpoint's position, and warnings where it and the slot do not fit together."""
    report = {"directory": str(directory), "last_committed": _batch(state.last_committed), "pending": _batch(state.pending)}
    warnings: list[str] = []
    report["incremental_snapshot"] = _incremental(state, warnings)
    committed = state.last_committed
    report["newest_source_commit"] = _newest_source_commit(directory, committed, config)
    slot_name = config.settings.slot_name
    if committed is None:
        warnings.append(f"checkpoint {directory} has no committed batch yet")
        return report, warnings
    if committed.offset is not None and committed.slot is None:
        warnings.append(f"{committed.path}: the source offset names no slot; was this checkpoint written by sparkcdc?")
    if committed.slot is not None and committed.slot != slot_name:
        warnings.append(f"the checkpoint belongs to slot {committed.slot!r}, but slot.name is {slot_name!r}; a run would refuse it")
    confirmed = (slot or {}).get("confirmed_flush_lsn")
    if committed.phase == "stream" and committed.lsn is not None and confirmed is not None and committed.slot == slot_name:
        if parse_lsn(confirmed) > committed.lsn:
            warnings.append(
                f"slot {slot_name!r} has confirmed {confirmed}, past the checkpoint's committed {format_lsn(committed.lsn)}: "
                "any changes in between can no longer be read (did another consumer use the slot?)"
            )
    return report, warnings
