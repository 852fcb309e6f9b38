"""Read-only facts about a server: settings, role, tables, publication, slot lag.

``validate --connect`` and ``status`` must never change the database they inspect (an operator runs
them against production to decide whether to start). So the connection is opened with
``default_transaction_read_only=on``, which makes the server refuse table and catalog writes
(``CREATE PUBLICATION``, ``ALTER TABLE`` ...) even if a query here were wrong. The replication slot
functions are not covered by that (PostgreSQL lets ``pg_create_logical_replication_slot`` run in a
read-only transaction), so this module reads slots only through the ``pg_replication_slots`` view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from ..lsn import parse_lsn
from .publications import publication_exists, publication_tables
from .slots import SlotState, get_slot

__all__ = [
    "PublicationFacts",
    "RoleFacts",
    "ServerFacts",
    "SlotLag",
    "TableFacts",
    "connect_read_only",
    "publication_facts",
    "role_facts",
    "server_facts",
    "slot_lag",
    "table_facts",
]


def connect_read_only(conninfo: str, *, connect_timeout: int = 10, application_name: str = "sparkcdc-cli") -> psycopg.Connection:
    """An autocommit connection in which every transaction is read-only.

    Set once connected, not in the startup packet: with several hosts libpq picks the one that
    accepts writes (``target_session_attrs=read-write``) by the server's ``default_transaction_read_only``,
    which a startup option would already have turned on."""
    conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=connect_timeout, application_name=application_name)
    try:
        conn.execute("SET default_transaction_read_only = on")
    except BaseException:
        conn.close()
        raise
    return conn


@dataclass(frozen=True)
class ServerFacts:
    version: str
    version_num: int
    in_recovery: bool
    wal_level: str
    max_replication_slots: int
    replication_slots_used: int
    max_wal_senders: int
    wal_senders_used: int


def server_facts(conn: psycopg.Connection) -> ServerFacts:
    row = conn.execute(
        """SELECT current_setting('server_version'), current_setting('server_version_num')::int, pg_is_in_recovery(),
                  current_setting('wal_level'), current_setting('max_replication_slots')::int,
                  (SELECT count(*) FROM pg_replication_slots)::int,
                  current_setting('max_wal_senders')::int, (SELECT count(*) FROM pg_stat_replication)::int"""
    ).fetchone()
    assert row is not None
    return ServerFacts(*row)


@dataclass(frozen=True)
class RoleFacts:
    user: str
    superuser: bool
    replication: bool  # the REPLICATION attribute, or membership in a cloud provider's replication role
    create_on_database: bool
    sql_name: str = ""  # the role's name as SQL (quoted only where needed), for the GRANTs validate prints


def role_facts(conn: psycopg.Connection) -> RoleFacts:
    row = conn.execute(
        """SELECT current_user::text, r.rolsuper, r.rolreplication
                  OR EXISTS (SELECT 1 FROM pg_roles g WHERE g.rolname = 'rds_replication'
                                AND pg_has_role(current_user, g.oid, 'MEMBER')),
                  has_database_privilege(current_database(), 'CREATE'), quote_ident(current_user)
             FROM pg_roles r WHERE r.rolname = current_user"""
    ).fetchone()
    assert row is not None
    return RoleFacts(*row)


@dataclass(frozen=True)
class TableFacts:
    schema: str
    table: str
    replica_identity: str  # default | nothing | full | index
    has_primary_key: bool
    can_select: bool
    owned: bool  # the role may ALTER it / add it to a publication
    schema_usage: bool = True  # USAGE on its schema: without it even SELECT is refused
    sql_name: str = ""  # schema.table as SQL (quoted only where needed)


_IDENTITY_NAMES = {"d": "default", "n": "nothing", "f": "full", "i": "index"}


def table_facts(conn: psycopg.Connection, tables: Sequence[tuple[str, str]]) -> list[TableFacts]:
    """What matters about each of ``tables`` ((schema, table), in that order); a table that no longer exists is left out."""
    if not tables:
        return []
    rows = conn.execute(
        """SELECT n.nspname::text, c.relname::text, c.relreplident::text,
                  EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
                  has_table_privilege(c.oid, 'SELECT'), pg_has_role(c.relowner, 'USAGE'), has_schema_privilege(n.oid, 'USAGE'),
                  quote_ident(n.nspname) || '.' || quote_ident(c.relname)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE (n.nspname, c.relname) IN (SELECT * FROM unnest(%s::text[], %s::text[]))""",
        ([schema for schema, _ in tables], [table for _, table in tables]),
    ).fetchall()
    by_name = {(row[0], row[1]): row for row in rows}
    facts = []
    for schema, table in tables:
        row = by_name.get((schema, table))
        if row is None:
            continue  # dropped between the two queries
        facts.append(TableFacts(schema, table, _IDENTITY_NAMES.get(row[2], row[2]), row[3], row[4], row[5], row[6], row[7]))
    return facts


@dataclass(frozen=True)
class PublicationFacts:
    name: str
    exists: bool
    all_tables: bool = False
    operations: tuple[str, ...] = ()
    tables: tuple[tuple[str, str], ...] = ()
    owned: bool = False


def publication_facts(conn: psycopg.Connection, name: str) -> PublicationFacts:
    if not publication_exists(conn, name):
        return PublicationFacts(name, exists=False)
    row = conn.execute(
        """SELECT puballtables, pubinsert, pubupdate, pubdelete, pubtruncate, pg_has_role(pubowner, 'USAGE')
             FROM pg_publication WHERE pubname = %s""",
        (name,),
    ).fetchone()
    assert row is not None
    operations = tuple(op for op, on in zip(("insert", "update", "delete", "truncate"), row[1:5], strict=True) if on)
    return PublicationFacts(name, True, row[0], operations, tuple(publication_tables(conn, name)), row[5])


@dataclass(frozen=True)
class SlotLag:
    """A slot and how far behind the server's WAL position it is."""

    state: SlotState
    wal_lsn: int | None  # pg_current_wal_lsn() (the last replayed LSN on a standby)
    confirmed_lag_bytes: int | None  # WAL not yet confirmed by the consumer
    retained_bytes: int | None  # WAL the server keeps for the slot (from restart_lsn)


def slot_lag(conn: psycopg.Connection, slot_name: str) -> SlotLag | None:
    state = get_slot(conn, slot_name)
    if state is None:
        return None
    row = conn.execute(
        """WITH here AS (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END AS lsn)
           SELECT here.lsn::text, pg_wal_lsn_diff(here.lsn, s.confirmed_flush_lsn)::bigint,
                  pg_wal_lsn_diff(here.lsn, s.restart_lsn)::bigint
             FROM pg_replication_slots s, here WHERE s.slot_name = %s""",
        (slot_name,),
    ).fetchone()
    if row is None:
        return None  # dropped in between
    return SlotLag(state, None if row[0] is None else parse_lsn(row[0]), row[1], row[2])
