"""Would ``sparkcdc run`` work against this server? ``validate --connect``'s judgement, read-only.

The checks mirror what the engine's set-up (``sparkcdc.engine.setup``, slot creation) will do and
what PostgreSQL will then refuse, so an operator learns about a missing privilege or a wrong
``wal_level`` before a pipeline half-starts: each problem is one sentence that says what to change.
Errors would make the run fail; warnings are things that work but are probably not intended.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from ..debezium.config import ConfigError, ConnectorConfig
from ..engine.setup import captured_tables
from ..engine.stream_slots import check_parallel_streaming, stream_slots
from ..postgres.replication import quote_ident
from ..postgres.server_facts import (
    PublicationFacts,
    RoleFacts,
    ServerFacts,
    TableFacts,
    publication_facts,
    role_facts,
    server_facts,
    table_facts,
)
from ..postgres.slots import SlotState, get_slot

__all__ = ["Readiness", "assess"]

_LISTED = 5  # tables named in one message before "and N more"


@dataclass
class Readiness:
    database: str
    server: ServerFacts
    role: RoleFacts
    tables: list[TableFacts]
    publication: PublicationFacts
    slot_name: str
    slot: SlotState | None
    snapshot_reads_data: bool
    plan: list[str] = field(default_factory=list)  # what the first run would create or change
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def assess(conn: psycopg.Connection, config: ConnectorConfig) -> Readiness:
    """Gather the facts and judge them; raises :class:`ConfigError` where the set-up itself would."""
    check_parallel_streaming(config)  # what several slots cannot do is refused here as by a run
    slot_name = config.settings.slot_name
    slot = get_slot(conn, slot_name)
    mode = config.get("snapshot.mode")
    reads_data = mode in ("always", "initial_only") or (mode in ("initial", "when_needed") and slot is None) or (
        mode == "configuration_based" and config.get_bool("snapshot.mode.configuration.based.snapshot.data")
    )
    result = Readiness(
        database=conn.info.dbname,
        server=server_facts(conn),
        role=role_facts(conn),
        tables=table_facts(conn, captured_tables(conn, config)),
        publication=publication_facts(conn, config.settings.publication_name),
        slot_name=slot_name,
        slot=slot,
        snapshot_reads_data=reads_data,
    )
    _judge_server(result)
    _judge_tables(result)
    _judge_publication(result, config)
    _judge_slot(result)
    streams = stream_slots(config)
    if len(streams) > 1:
        # The judgements above are of stream 0's slot and publication (with every captured table).
        result.plan.append(f"stream through {len(streams)} slots and publications (sparkcdc.stream.slots): "
                           + ", ".join(f"{s.slot}/{s.publication}" for s in streams) + ", each with its share of the tables")
        result.plan += [f"create replication slot {s.slot!r} (pgoutput)" for s in streams[1:] if get_slot(conn, s.slot) is None]
    if reads_data:
        result.plan.append(f"snapshot {len(result.tables)} table(s) (snapshot.mode={mode})")
    return result


def _names(tables: list[TableFacts]) -> str:
    shown = ", ".join(f"{t.schema}.{t.table}" for t in tables[:_LISTED])
    return shown + (f" and {len(tables) - _LISTED} more" if len(tables) > _LISTED else "")


def _judge_server(r: Readiness) -> None:
    s = r.server
    if s.version_num < 100000:
        r.errors.append(f"PostgreSQL {s.version} has no pgoutput plugin; sparkcdc needs PostgreSQL 10 or later")
    if s.in_recovery and s.version_num < 160000:
        r.errors.append(f"the server is a standby, and logical decoding on a standby needs PostgreSQL 16 (this is {s.version})")
    if s.wal_level != "logical":
        r.errors.append(f"wal_level is {s.wal_level!r}; logical decoding needs wal_level=logical "
                        "(ALTER SYSTEM SET wal_level = logical, then restart the server)")
    if s.max_wal_senders == 0:
        r.errors.append("max_wal_senders is 0, so no replication connection is possible; raise it and restart the server")
    elif s.wal_senders_used >= s.max_wal_senders:
        r.warnings.append(f"all {s.max_wal_senders} WAL senders (max_wal_senders) are in use right now")
    if not (r.role.superuser or r.role.replication):
        r.errors.append(f"role {r.role.user!r} may not use replication; grant it: ALTER ROLE {quote_ident(r.role.user)} REPLICATION")


def _judge_tables(r: Readiness) -> None:
    if not r.tables:
        r.warnings.append("no table matches the schema/table filters, so no table is captured")
        return
    unreadable = [t for t in r.tables if not t.can_select]
    if unreadable:
        message = f"role {r.role.user!r} cannot SELECT from {_names(unreadable)}"
        if r.snapshot_reads_data:
            r.errors.append(message + "; the initial snapshot reads them (GRANT SELECT ON ... TO the role)")
        else:
            r.warnings.append(message + "; a later snapshot (or snapshot.mode=always) would fail")
    keyless = [t for t in r.tables if t.replica_identity == "nothing" or (t.replica_identity == "default" and not t.has_primary_key)]
    if keyless:
        r.warnings.append(
            f"{_names(keyless)} has no replica identity (no primary key, or REPLICA IDENTITY NOTHING): once it is "
            "published PostgreSQL rejects its UPDATEs and DELETEs; add a primary key or set REPLICA IDENTITY FULL"
        )


def _judge_publication(r: Readiness, config: ConnectorConfig) -> None:
    pub = r.publication
    mode = config.get("publication.autocreate.mode")
    name = quote_ident(pub.name)
    captured = {(t.schema, t.table) for t in r.tables}
    if mode == "filtered" and not captured:
        raise ConfigError("table.include.list", "no table matches the table/schema filters, so a filtered publication would be empty")
    if not pub.exists:
        if mode == "disabled":
            r.errors.append(f"publication {pub.name!r} does not exist and publication.autocreate.mode is disabled; "
                            f"create it (CREATE PUBLICATION {name} FOR TABLE ...) or change the mode")
            return
        if mode == "all_tables":
            r.plan.append(f"create publication {pub.name!r} FOR ALL TABLES")
            if not r.role.superuser:
                r.errors.append(f"creating publication {pub.name!r} FOR ALL TABLES needs a superuser; create it beforehand "
                                "or use publication.autocreate.mode=filtered")
            return
        if not r.role.create_on_database and not r.role.superuser:
            r.errors.append(f"role {r.role.user!r} cannot create publication {pub.name!r}: it lacks CREATE on database {r.database!r}")
        if mode == "no_tables":
            r.plan.append(f"create publication {pub.name!r} without tables")
            return
        r.plan.append(f"create publication {pub.name!r} FOR TABLE the {len(captured)} captured table(s)")
        _need_ownership(r, [t for t in r.tables if not t.owned], f"add them to publication {pub.name!r}")
        return
    if mode == "filtered" and pub.all_tables:
        r.errors.append(f"publication {pub.name!r} is FOR ALL TABLES, which publication.autocreate.mode=filtered cannot "
                        "narrow to the captured tables; drop it, use another publication.name or mode all_tables")
        return
    if mode == "filtered" and set(pub.tables) != captured:
        r.plan.append(f"change publication {pub.name!r} to the {len(captured)} captured table(s) (ALTER PUBLICATION ... SET TABLE)")
        if not pub.owned:
            r.errors.append(f"role {r.role.user!r} does not own publication {pub.name!r}, so it cannot change its tables")
        _need_ownership(r, [t for t in r.tables if not t.owned], f"put them in publication {pub.name!r}")
        return
    if mode != "no_tables" and not pub.all_tables:
        missing = [t for t in r.tables if (t.schema, t.table) not in set(pub.tables)]
        if missing:
            r.warnings.append(f"{_names(missing)} is captured but not in publication {pub.name!r}, so its changes are never sent")


def _need_ownership(r: Readiness, not_owned: list[TableFacts], purpose: str) -> None:
    if not_owned and not r.role.superuser:
        r.errors.append(f"role {r.role.user!r} does not own {_names(not_owned)}, so it cannot {purpose}")


def _judge_slot(r: Readiness) -> None:
    slot, slot_name = r.slot, r.slot_name
    if slot is None:
        s = r.server
        r.plan.append(f"create replication slot {slot_name!r} (pgoutput)")
        if s.max_replication_slots == 0:
            r.errors.append("max_replication_slots is 0, so no slot can be created; raise it and restart the server")
        elif s.replication_slots_used >= s.max_replication_slots:
            r.errors.append(f"all {s.max_replication_slots} replication slots (max_replication_slots) are taken; "
                            f"drop an unused one or raise the setting, so slot {slot_name!r} can be created")
    else:
        if slot.slot_type != "logical" or slot.plugin != "pgoutput" or slot.database != r.database:
            r.errors.append(f"slot {slot_name!r} exists but is a {slot.slot_type} slot for plugin {slot.plugin!r} in database "
                            f"{slot.database!r}; sparkcdc needs a logical 'pgoutput' slot in {r.database!r} (or another slot.name)")
        if slot.wal_status == "lost":
            r.errors.append(f"slot {slot_name!r} has lost WAL it needed (wal_status=lost); drop it and start again with a new snapshot")
        if slot.active:
            r.warnings.append(f"slot {slot_name!r} is in use by process {slot.active_pid}; a run waits until that consumer stops")
