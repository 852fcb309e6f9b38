"""Server-side set-up as Debezium does it: the captured tables, the publication, replica identities.

Behaviour confirmed against Debezium 3.6.3 (see docs/debezium-oracle-notes.md):

* ``publication.autocreate.mode``: ``all_tables`` creates ``FOR ALL TABLES``; ``filtered`` creates
  ``FOR TABLE <captured tables>``, and re-sets an existing publication's tables to the captured ones;
  ``no_tables`` creates a publication without tables (logical decoding messages only); ``disabled``
  requires the publication to exist.
* A ``publish`` list is added only when inserts, updates or deletes are skipped; truncates stay
  published (they are filtered in the connector per ``skipped.operations``).
* Tables are captured (and snapshotted) in the order of ``table.include.list``; tables matched by
  the same pattern, or all tables without an include list, in name order.
* Partitioned tables and their partitions are tables like any other: each one the filters match is
  captured and snapshotted under its own name. A listed partition streams under its name; a listed
  root streams under its name only with ``publish.via.partition.root`` (else the server sends its
  rows under the partitions' names, which the filters drop); a pattern matching a root and its
  partitions snapshots the rows twice, once under each name, as Debezium does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from ..debezium.config import ConnectorConfig
from ..errors import ConfigurationError, ServerError
from ..postgres.catalog import user_tables
from ..postgres.privileges import InsufficientPrivilegeError, current_role, sql_identifiers, statement_denied, table_access
from ..postgres.publications import (
    create_publication,
    publication_exists,
    publication_members,
    publication_tables,
    replica_identity,
    set_publication_tables,
    set_replica_identity,
)
from ..postgres.replication import quote_ident
from .core.filters import TableFilter
from .core.stream_slots import assign_tables, stream_slots

__all__ = ["IdentityChange", "SetupError", "apply_replica_identities", "captured_tables", "check_guardrail", "check_heartbeat_action_query",
           "ensure_publication_for", "ensure_stream_publications", "identity_change_refused", "publication_writes", "publish_operations",
           "replica_identity_changes", "unpublished_signal_table"]

log = logging.getLogger(__name__)


class SetupError(ServerError):
    """The database is not set up the way the configuration requires."""


def captured_tables(conn: psycopg.Connection, config: ConnectorConfig) -> list[tuple[str, str]]:
    table_filter = TableFilter(config)
    tables = [(schema, table) for schema, table in user_tables(conn) if table_filter(schema, table)]
    includes = config.settings.table_include_list
    if includes:
        def order(table: tuple[str, str]) -> int:
            name = f"{table[0]}.{table[1]}"
            return next(i for i, pattern in enumerate(includes) if pattern.fullmatch(name))

        tables.sort(key=order)  # stable: name order within one pattern
    return tables


def check_guardrail(config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> None:
    """``guardrail.collections.max`` (0: no limit) against the captured ``tables``: over it, a warning
    or (``guardrail.collections.limit.action=fail``) an error naming the property, before anything is read."""
    limit = config.settings.guardrail_collections_max
    if limit <= 0 or len(tables) <= limit:
        return
    message = (f"the connector captures {len(tables)} tables, more than guardrail.collections.max={limit} "
               f"(first: {', '.join(f'{s}.{t}' for s, t in tables[:3])}...); narrow the table filters or raise the limit")
    if config.settings.guardrail_collections_limit_action == "fail":
        raise ConfigurationError(message, prop="guardrail.collections.max")
    log.warning("%s", message)


def publish_operations(config: ConnectorConfig) -> list[str] | None:
    skipped = config.skipped_operations
    if not skipped & {"c", "u", "d"}:
        return None
    names = {"c": "insert", "u": "update", "d": "delete"}
    return [name for op, name in names.items() if op not in skipped] + ["truncate"]


def ensure_publication_for(conn: psycopg.Connection, config: ConnectorConfig, tables: Sequence[tuple[str, str]],
                           *, name: str | None = None) -> None:
    """The publication ``name`` (default ``publication.name``) as ``publication.autocreate.mode`` wants it for ``tables``."""
    name = name or config.settings.publication_name
    mode = config.settings.publication_autocreate_mode
    exists = publication_exists(conn, name)
    publish = publish_operations(config)
    via_root = config.settings.publish_via_partition_root
    if mode == "disabled":
        if not exists:
            raise SetupError(
                f"publication {name!r} does not exist and publication.autocreate.mode is disabled; "
                f"create it (CREATE PUBLICATION {quote_ident(name)} FOR TABLE ...) or change the mode"
            )
        return
    if mode == "all_tables":
        if not exists:
            try:
                create_publication(conn, name, tables=None, publish=publish, via_partition_root=via_root)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise SetupError(
                    f"cannot create publication {name!r} FOR ALL TABLES: {exc}; use publication.autocreate.mode=filtered"
                ) from None
        return
    if mode == "no_tables":
        if not exists:
            create_publication(conn, name, tables=[], publish=publish, via_partition_root=via_root)
        return
    if mode == "filtered":
        if not tables:
            raise ConfigurationError("no table matches the table/schema filters, so a filtered publication would be empty", prop="table.include.list")
        if not exists:
            create_publication(conn, name, tables=tables, publish=publish, via_partition_root=via_root)
        elif publication_members(conn, name) != sorted(tables):
            set_publication_tables(conn, name, tables)
        return
    raise ConfigurationError(f"unknown mode {mode!r}", prop="publication.autocreate.mode")


def ensure_stream_publications(conn: psycopg.Connection, config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> None:
    """The publication of every stream (``sparkcdc.stream.slots``; see engine/core/stream_slots.py): with one
    slot, ``publication.name`` for ``tables``; with several, each stream's for its share of them."""
    streams = stream_slots(config)
    if len(streams) == 1:
        ensure_publication_for(conn, config, tables)
        return
    shares = assign_tables(config, tables)
    if config.settings.publication_autocreate_mode == "disabled":
        _check_disjoint(conn, [stream.publication for stream in streams])
        for stream in streams:
            ensure_publication_for(conn, config, shares[stream.index], name=stream.publication)
        return
    for stream, share in zip(streams, shares, strict=True):
        if not share:
            raise ConfigurationError(f"slot {stream.index} ({stream.slot}) would stream no table: the "
                                                       f"{len(tables)} captured tables hash to the other slots; place them with "
                                                       "sparkcdc.stream.slots.assignment or use fewer slots", prop="sparkcdc.stream.slots")
    for stream, share in zip(streams, shares, strict=True):
        ensure_publication_for(conn, config, share, name=stream.publication)


def publication_writes(conn: psycopg.Connection, config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> list[str]:
    """What :func:`ensure_stream_publications` would write for ``tables`` (``CREATE``/``ALTER PUBLICATION``,
    as phrases naming the publication), without writing it: a standby can take none of it."""
    mode = config.settings.publication_autocreate_mode
    if mode == "disabled":
        return []  # nothing is written; a missing publication is ensure_publication_for's error
    streams = stream_slots(config)
    shares = [list(tables)] if len(streams) == 1 else assign_tables(config, tables)
    writes = []
    for stream, share in zip(streams, shares, strict=True):
        if not publication_exists(conn, stream.publication):
            writes.append(f"create publication {stream.publication!r}")
        elif mode == "filtered" and publication_members(conn, stream.publication) != sorted(share):
            writes.append(f"set the tables of publication {stream.publication!r} to the captured ones")
    return writes


def _check_disjoint(conn: psycopg.Connection, names: Sequence[str]) -> None:
    """Publications made by hand for parallel streaming: a table in two of them would be streamed twice."""
    seen: dict[tuple[str, str], str] = {}
    for name in names:
        if not publication_exists(conn, name):
            continue  # ensure_publication_for names it
        for table in publication_tables(conn, name):
            if table in seen:
                raise SetupError(f"table {table[0]}.{table[1]} is in publications {seen[table]!r} and {name!r}: with "
                                 "sparkcdc.stream.slots each table must be in one stream's publication, or its changes are "
                                 "emitted twice")
            seen[table] = name


_IDENTITIES = {"FULL": "FULL", "DEFAULT": "DEFAULT", "NOTHING": "NOTHING"}


@dataclass(frozen=True)
class IdentityChange:
    """A table whose replica identity ``replica.identity.autoset.values`` wants changed."""

    schema: str
    table: str
    identity: str  # FULL | DEFAULT | NOTHING | INDEX
    index: str | None = None

    @property
    def clause(self) -> str:
        return f"USING INDEX {quote_ident(self.index)}" if self.identity == "INDEX" and self.index else self.identity


def replica_identity_changes(conn: psycopg.Connection, config: ConnectorConfig,
                             tables: Sequence[tuple[str, str]]) -> list[IdentityChange]:
    """``replica.identity.autoset.values`` (``<table regex>:<FULL|DEFAULT|NOTHING|INDEX name>,...``):
    the captured tables whose replica identity differs from what the property wants. A table that has
    it already needs no ALTER, so a role that does not own it (as on managed services) is not refused."""
    raw = config.settings.replica_identity_autoset_values
    if not raw:
        return []
    rules = []
    for entry in raw.split(","):
        if not entry.strip():
            continue
        pattern, sep, identity = entry.rpartition(":")
        identity = identity.strip()
        upper = identity.upper()
        if not sep or not (upper in _IDENTITIES or upper.startswith("INDEX ")):
            raise ConfigurationError(f"{entry.strip()!r} must be <table regex>:<FULL|DEFAULT|NOTHING|INDEX name>", prop="replica.identity.autoset.values")
        rules.append((re.compile(pattern.strip()), identity))
    changes = []
    for schema, table in tables:
        for pattern, identity in rules:
            if pattern.fullmatch(f"{schema}.{table}"):
                upper = identity.upper()
                change = IdentityChange(schema, table, upper) if upper in _IDENTITIES else IdentityChange(schema, table, "INDEX", identity[6:].strip())
                if replica_identity(conn, schema, table) != (change.identity, change.index):
                    changes.append(change)
                break
    return changes


def identity_change_refused(conn: psycopg.Connection, change: IdentityChange) -> InsufficientPrivilegeError | None:
    """Why the connecting role may not make ``change`` (only a table's owner may), with the ``ALTER
    TABLE`` the owner runs instead; None when it may."""
    access = table_access(conn, change.schema, change.table, ())
    if access is None or access.owned:
        return None
    statement = f"ALTER TABLE {access.sql_name} REPLICA IDENTITY {change.clause};"
    return InsufficientPrivilegeError(
        f"table {access.sql_name} must get REPLICA IDENTITY {change.clause}, and only its owner ({access.owner}) may set it: "
        f"have the owner run `{statement}` (or leave the table out of the property)",
        fix=statement, prop="replica.identity.autoset.values", table=f"{change.schema}.{change.table}")


def apply_replica_identities(conn: psycopg.Connection, config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> None:
    """``replica.identity.autoset.values`` made true of the captured ``tables``; a change the role may
    not make is refused before any is made, naming the statement for the owner."""
    changes = replica_identity_changes(conn, config, tables)
    for change in changes:
        refused = identity_change_refused(conn, change)
        if refused is not None:
            raise refused
    for change in changes:
        set_replica_identity(conn, change.schema, change.table, change.identity, change.index)


@dataclass(frozen=True)
class HeartbeatRefusal:
    """Why ``heartbeat.action.query`` cannot run: ``fixes`` are the GRANTs a role without the
    rights needs (``privilege``), none when the server refuses the statement itself."""

    message: str
    fixes: tuple[str, ...] = ()
    privilege: bool = False


def heartbeat_query_refusal(conn: psycopg.Connection, config: ConnectorConfig) -> HeartbeatRefusal | None:
    """``heartbeat.action.query`` runs with the role's own rights at every heartbeat; ``EXPLAIN``
    tells whether it may without running it (see :func:`sparkcdc.postgres.privileges.statement_denied`).
    None when it may, or when there is no heartbeat statement."""
    query = config.settings.heartbeat_action_query
    if not query or config.settings.heartbeat_interval_ms <= 0:
        return None
    try:
        denied = statement_denied(conn, query)
    except psycopg.Error as exc:
        if not (exc.sqlstate or "").startswith("42"):  # syntax or access rule: the statement's fault; else the server's
            raise
        return HeartbeatRefusal(f"the server refuses it: {(exc.diag.message_primary or str(exc)).strip()}")
    if denied is None:
        return None
    message, fixes = denied
    return HeartbeatRefusal(f"role {current_role(conn)} may not run it ({message})", tuple(fixes), privilege=True)


def check_heartbeat_action_query(conn: psycopg.Connection, config: ConnectorConfig) -> None:
    """A heartbeat statement the role may not run is refused at the start, naming the GRANT, rather
    than failing the first heartbeat minutes later."""
    refusal = heartbeat_query_refusal(conn, config)
    if refusal is None:
        return
    if not refusal.privilege:
        raise ConfigurationError(refusal.message, prop="heartbeat.action.query")
    raise InsufficientPrivilegeError(
        f"{refusal.message}: {' '.join(refusal.fixes) or 'grant the role what the statement needs'}",
        fix=" ".join(refusal.fixes), prop="heartbeat.action.query")


def unpublished_signal_table(conn: psycopg.Connection, config: ConnectorConfig,
                             signal_table: tuple[str, str] | None) -> tuple[str, str] | None:
    """With ``publication.autocreate.mode=disabled`` the publication is the owner's, and sparkcdc does
    not add the signal table to it: a signal table left out means source-channel signals and watermark
    rows never reach the stream. (The warning, the owner's ``ALTER PUBLICATION``), or None."""
    if signal_table is None or config.settings.publication_autocreate_mode != "disabled":
        return None
    for stream in stream_slots(config):
        row = conn.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (stream.publication,)).fetchone()
        if row is None or row[0] or signal_table in publication_tables(conn, stream.publication):
            return None
    publication = config.settings.publication_name
    sql_publication, sql_schema, sql_table = sql_identifiers(conn, publication, *signal_table)
    fix = f"ALTER PUBLICATION {sql_publication} ADD TABLE {sql_schema}.{sql_table};"
    return (f"signal.data.collection: the signal table {signal_table[0]}.{signal_table[1]} is not in publication {publication!r} "
            f"(publication.autocreate.mode=disabled), so its rows (source-channel signals, incremental snapshot watermarks) never "
            f"reach the stream; have the publication's owner run: {fix}"), fix
