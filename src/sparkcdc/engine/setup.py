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

import re
from collections.abc import Sequence

import psycopg

from ..debezium.config import ConfigError, ConnectorConfig
from ..errors import ServerError
from ..postgres.catalog import user_tables
from ..postgres.publications import (
    create_publication,
    publication_exists,
    publication_members,
    set_publication_tables,
    set_replica_identity,
)
from ..postgres.replication import quote_ident
from .filters import TableFilter

__all__ = ["SetupError", "apply_replica_identities", "captured_tables", "ensure_publication_for", "publish_operations"]


class SetupError(ServerError):
    """The database is not set up the way the configuration requires."""


def captured_tables(conn: psycopg.Connection, config: ConnectorConfig) -> list[tuple[str, str]]:
    table_filter = TableFilter(config)
    tables = [(schema, table) for schema, table in user_tables(conn) if table_filter(schema, table)]
    includes = config.get_patterns("table.include.list")
    if includes:
        def order(table: tuple[str, str]) -> int:
            name = f"{table[0]}.{table[1]}"
            return next(i for i, pattern in enumerate(includes) if pattern.fullmatch(name))

        tables.sort(key=order)  # stable: name order within one pattern
    return tables


def publish_operations(config: ConnectorConfig) -> list[str] | None:
    skipped = config.skipped_operations
    if not skipped & {"c", "u", "d"}:
        return None
    names = {"c": "insert", "u": "update", "d": "delete"}
    return [name for op, name in names.items() if op not in skipped] + ["truncate"]


def ensure_publication_for(conn: psycopg.Connection, config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> None:
    name = config.settings.publication_name
    mode = config.get("publication.autocreate.mode")
    exists = publication_exists(conn, name)
    publish = publish_operations(config)
    via_root = config.get_bool("publish.via.partition.root")
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
            raise ConfigError("table.include.list", "no table matches the table/schema filters, so a filtered publication would be empty")
        if not exists:
            create_publication(conn, name, tables=tables, publish=publish, via_partition_root=via_root)
        elif publication_members(conn, name) != sorted(tables):
            set_publication_tables(conn, name, tables)
        return
    raise ConfigError("publication.autocreate.mode", f"unknown mode {mode!r}")


_IDENTITIES = {"FULL": "FULL", "DEFAULT": "DEFAULT", "NOTHING": "NOTHING"}


def apply_replica_identities(conn: psycopg.Connection, config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> None:
    """``replica.identity.autoset.values``: ``<table regex>:<FULL|DEFAULT|NOTHING|INDEX name>,...``."""
    raw = config.get("replica.identity.autoset.values")
    if not raw:
        return
    rules = []
    for entry in raw.split(","):
        if not entry.strip():
            continue
        pattern, sep, identity = entry.rpartition(":")
        identity = identity.strip()
        upper = identity.upper()
        if not sep or not (upper in _IDENTITIES or upper.startswith("INDEX ")):
            raise ConfigError("replica.identity.autoset.values", f"{entry.strip()!r} must be <table regex>:<FULL|DEFAULT|NOTHING|INDEX name>")
        rules.append((re.compile(pattern.strip()), identity))
    for schema, table in tables:
        for pattern, identity in rules:
            if pattern.fullmatch(f"{schema}.{table}"):
                upper = identity.upper()
                if upper in _IDENTITIES:
                    set_replica_identity(conn, schema, table, upper)
                else:
                    set_replica_identity(conn, schema, table, "INDEX", identity[6:].strip())
                break
