"""Reading from a hot standby (PostgreSQL 16+): what a run may do there, decided before it starts.

A standby decodes logical slots, exports snapshots and answers queries, but writes nothing: no
catalog change, no table row, no WAL record. Every configured feature that would write on the
server is refused up front, naming its property, instead of failing later with the server's
"cannot execute ... in a read-only transaction" / "recovery is in progress". sparkcdc does not send
those writes to the primary instead: it knows no address for it (``primary_conninfo`` is readable
only by superusers, and may name a host unreachable from here), and a write there reaches the
standby only after replay, which the features relying on it (watermarks, heartbeats) would have to
wait for. Making the publication (or the replica identities) on the primary once is an operator's
one-off step; the rest has a read-only form (``read.only=true``) or is not needed.

Checked once, at the start: a standby promoted under a run goes on with the same configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from ..debezium.config import ConnectorConfig
from ..errors import ConfigurationError
from .core.signals import signal_table_of
from .setup import publication_writes, replica_identity_changes

__all__ = ["STANDBY_DECODING_MAJOR", "StandbyRefusal", "check_standby", "in_recovery", "log_slot_creation_wait", "standby_refusals"]

log = logging.getLogger(__name__)

#: The first PostgreSQL major that decodes logical slots on a standby.
STANDBY_DECODING_MAJOR = 16


@dataclass(frozen=True)
class StandbyRefusal:
    """A configured feature a standby cannot serve: the property to change and why."""

    prop: str
    message: str


def in_recovery(conn: psycopg.Connection) -> bool:
    """``pg_is_in_recovery()``: the server is a standby (asked, not cached: a standby can be promoted)."""
    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    return bool(row and row[0])


def standby_refusals(conn: psycopg.Connection, config: ConnectorConfig, published: Sequence[tuple[str, str]]) -> list[StandbyRefusal]:
    """Everything the configuration would write on this standby (``published``: the tables the
    publication must hold, the signal table included); empty when nothing would."""
    server = conn.info.server_version
    refusals = []
    if server < STANDBY_DECODING_MAJOR * 10000:
        refusals.append(StandbyRefusal("database.hostname", f"the server is a standby, and logical decoding on a standby needs "
                                       f"PostgreSQL {STANDBY_DECODING_MAJOR} or later (this is {server // 10000}); connect to the primary"))
    if config.settings.slot_failover:
        refusals.append(StandbyRefusal("slot.failover", "the server is a standby: a slot created on a standby cannot be a failover "
                                       "slot, and a synchronised copy of the primary's cannot be read there; set slot.failover=false"))
    writes = publication_writes(conn, config, published)
    if writes:
        refusals.append(StandbyRefusal("publication.autocreate.mode", f"the server is a standby, where sparkcdc cannot "
                                       f"{' and '.join(writes)} (publication.autocreate.mode={config.settings.publication_autocreate_mode}): "
                                       "the publication must be made on the primary (it reaches the standby by replay)"))
    changes = replica_identity_changes(conn, config, published)
    if changes:
        shown = ", ".join(f"{c.schema}.{c.table} REPLICA IDENTITY {c.clause}" for c in changes[:5])
        refusals.append(StandbyRefusal("replica.identity.autoset.values", f"the server is a standby, where no table can be "
                                       f"altered ({shown}): run the ALTER TABLEs on the primary, or leave the tables out of the property"))
    if config.settings.heartbeat_interval_ms > 0:
        if config.settings.heartbeat_action_query:
            refusals.append(StandbyRefusal("heartbeat.action.query", "the server is a standby, where the heartbeat statement "
                                           "cannot write; unset heartbeat.action.query (run it against the primary yourself)"))
        else:
            refusals.append(StandbyRefusal("heartbeat.interval.ms", "the server is a standby: a heartbeat writes a logical decoding "
                                           "message (pg_logical_emit_message), which a standby cannot; set heartbeat.interval.ms=0"))
    signal_table = signal_table_of(config)
    if signal_table is not None and not config.settings.read_only:
        refusals.append(StandbyRefusal("read.only", f"the server is a standby: incremental snapshots would write their watermark "
                                       f"rows into the signal table {signal_table[0]}.{signal_table[1]} (signal.data.collection); "
                                       "set read.only=true (they then write nothing)"))
    return refusals


def check_standby(conn: psycopg.Connection, config: ConnectorConfig, published: Sequence[tuple[str, str]]) -> bool:
    """Whether the server is a standby; on one, the first refusal raised as a :class:`ConfigurationError` naming its property."""
    if not in_recovery(conn):
        return False
    refusals = standby_refusals(conn, config, published)
    if refusals:
        raise ConfigurationError(refusals[0].message, prop=refusals[0].prop)
    log.info("the server is a standby: reading from it; nothing is written there (docs/high-availability.md)")
    return True


def log_slot_creation_wait(name: str) -> None:
    """A logical slot created on a standby is ready only once the primary's next running-transactions
    record has been replayed; the primary logs one every 15 s while it is busy, none while idle."""
    log.warning("creating slot %s on a standby: PostgreSQL waits for a running-transactions record from the primary "
                "(the primary writes one every 15 s while busy; `SELECT pg_log_standby_snapshot()` on the primary "
                "writes one at once)", name)
