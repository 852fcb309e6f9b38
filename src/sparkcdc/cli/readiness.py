"""Would ``sparkcdc run`` work against this server? ``validate --connect``'s judgement, read-only.

The checks mirror what the engine's set-up (``sparkcdc.engine.setup``, slot creation) will do and
what PostgreSQL will then refuse, so an operator learns about a missing privilege or a wrong
``wal_level`` before a pipeline half-starts: each problem is one sentence that says what to change.
Errors would make the run fail; warnings are things that work but are probably not intended.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from ..debezium.config import ConnectorConfig
from ..engine.core.signals import enabled_channels, signal_table_of
from ..engine.core.stream_slots import check_parallel_streaming, stream_slots
from ..engine.setup import (
    captured_tables,
    heartbeat_query_refusal,
    identity_change_refused,
    replica_identity_changes,
    unpublished_signal_table,
)
from ..engine.standby import STANDBY_DECODING_MAJOR, standby_refusals
from ..errors import ConfigurationError
from ..postgres.privileges import describe_missing, sql_identifiers, table_access
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
    #: The statements that fix the problems found (GRANT, ALTER ROLE, CREATE/ALTER PUBLICATION, ALTER TABLE),
    #: each run by a superuser or the object's owner; also quoted in the problem's own message.
    fixes: list[str] = field(default_factory=list)


def assess(conn: psycopg.Connection, config: ConnectorConfig) -> Readiness:
    """Gather the facts and judge them; raises :class:`ConfigurationError` where the set-up itself would."""
    check_parallel_streaming(config)  # what several slots cannot do is refused here as by a run
    slot_name = config.settings.slot_name
    slot = get_slot(conn, slot_name)
    mode = config.settings.snapshot_mode
    reads_data = mode in ("always", "initial_only") or (mode in ("initial", "when_needed") and slot is None) or (
        mode == "configuration_based" and config.settings.snapshot_mode_configuration_based_snapshot_data
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
    _judge_publication(result, conn, config)
    _judge_slot(result)
    _judge_replica_identities(result, conn, config)
    _judge_signal_table(result, conn, config)
    _judge_heartbeat(result, conn, config)
    _judge_standby(result, conn, config)
    _judge_failover(result, config)
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
        fix = f"ALTER ROLE {_role(r)} REPLICATION;"
        r.errors.append(f"role {r.role.user!r} may not use replication (open the replication connection, create the slot): "
                        f"{fix} (on Amazon RDS and Aurora: GRANT rds_replication TO {_role(r)};)")
        r.fixes.append(fix)


def _role(r: Readiness) -> str:
    return r.role.sql_name or quote_ident(r.role.user)


def _fix(r: Readiness, statement: str) -> str:
    """``statement`` remembered among the fixes; returned for the message."""
    if statement not in r.fixes:
        r.fixes.append(statement)
    return statement


def _judge_tables(r: Readiness) -> None:
    if not r.tables:
        r.warnings.append("no table matches the schema/table filters, so no table is captured")
        return
    no_usage = sorted({t.sql_name.rpartition(".")[0] or quote_ident(t.schema) for t in r.tables if not t.schema_usage})
    unreadable = [t for t in r.tables if not t.can_select or not t.schema_usage]
    if unreadable:
        statements = [f"GRANT USAGE ON SCHEMA {schema} TO {_role(r)};" for schema in no_usage]
        selects = [t.sql_name or f"{quote_ident(t.schema)}.{quote_ident(t.table)}" for t in unreadable if not t.can_select]
        if selects:
            statements.append(f"GRANT SELECT ON {', '.join(selects)} TO {_role(r)};")
        lacks = " and ".join(part for part in (f"USAGE on schema {', '.join(no_usage)}" if no_usage else "",
                                               "SELECT" if selects else "") if part)
        message = f"role {r.role.user!r} cannot read {_names(unreadable)} (it lacks {lacks})"
        fix = " ".join(_fix(r, statement) for statement in statements)
        if r.snapshot_reads_data:
            r.errors.append(f"{message}; snapshots read them: {fix}")
        else:
            r.warnings.append(f"{message}; a later snapshot (incremental, blocking, or snapshot.mode=always) would fail: {fix}")
    keyless = [t for t in r.tables if t.replica_identity == "nothing" or (t.replica_identity == "default" and not t.has_primary_key)]
    if keyless:
        r.warnings.append(
            f"{_names(keyless)} has no replica identity (no primary key, or REPLICA IDENTITY NOTHING): once it is "
            "published PostgreSQL rejects its UPDATEs and DELETEs; add a primary key or set REPLICA IDENTITY FULL"
        )


def _judge_publication(r: Readiness, conn: psycopg.Connection, config: ConnectorConfig) -> None:
    pub = r.publication
    mode = config.settings.publication_autocreate_mode
    captured = {(t.schema, t.table) for t in r.tables}
    if mode == "filtered" and not captured:
        raise ConfigurationError("no table matches the table/schema filters, so a filtered publication would be empty", prop="table.include.list")
    if not pub.exists:
        if mode == "disabled":
            listed = [t.sql_name or f"{quote_ident(t.schema)}.{quote_ident(t.table)}" for t in r.tables] + _signal_sql_name(r, conn, config)
            sql_pub = sql_identifiers(conn, pub.name)[0]
            create = _fix(r, f"CREATE PUBLICATION {sql_pub} FOR TABLE {', '.join(listed)};" if listed else f"CREATE PUBLICATION {sql_pub};")
            r.errors.append(f"publication {pub.name!r} does not exist and publication.autocreate.mode is disabled; "
                            f"have the tables' owner (or a superuser) create it: {create} (or change the mode)")
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
            listed = ", ".join(t.sql_name or f"{quote_ident(t.schema)}.{quote_ident(t.table)}" for t in missing)
            fix = _fix(r, f"ALTER PUBLICATION {sql_identifiers(conn, pub.name)[0]} ADD TABLE {listed};")
            r.warnings.append(f"{_names(missing)} is captured but not in publication {pub.name!r}, so its changes are never sent; "
                              f"have the publication's owner run: {fix}")


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


def _signal_sql_name(r: Readiness, conn: psycopg.Connection, config: ConnectorConfig) -> list[str]:
    """The signal table (``signal.data.collection``) as SQL, when it exists and is not captured: a
    publication made by hand must list it too (signals and watermarks come through the WAL)."""
    signal_table = signal_table_of(config)
    if signal_table is None or any((t.schema, t.table) == signal_table for t in r.tables):
        return []
    return [".".join(sql_identifiers(conn, *signal_table))]


def _judge_replica_identities(r: Readiness, conn: psycopg.Connection, config: ConnectorConfig) -> None:
    """``replica.identity.autoset.values``: the ALTER TABLEs a run would make, and those only an owner may."""
    captured = [(t.schema, t.table) for t in r.tables]
    for change in replica_identity_changes(conn, config, captured):
        r.plan.append(f"set REPLICA IDENTITY {change.clause} on {change.schema}.{change.table} (replica.identity.autoset.values)")
        refused = identity_change_refused(conn, change)
        if refused is not None:
            _fix(r, refused.fix)
            r.errors.append(str(refused))


def _judge_signal_table(r: Readiness, conn: psycopg.Connection, config: ConnectorConfig) -> None:
    """The signal table: it must exist, reach the stream, and take the watermark rows of incremental
    snapshots (INSERT; DELETE too with insert_delete), which a read-only snapshot does not write. The
    ``source`` channel itself only reads the table's rows from the WAL; whoever *sends* a signal
    through it (``sparkcdc signal``, an operator's INSERT) needs INSERT, with their own role."""
    signal_table = signal_table_of(config)
    if signal_table is None:
        return
    read_only = config.settings.read_only
    strategy = config.settings.incremental_snapshot_watermarking_strategy
    needed = () if read_only else ("INSERT", "DELETE") if strategy == "insert_delete" else ("INSERT",)
    access = table_access(conn, *signal_table, needed)
    name = f"{signal_table[0]}.{signal_table[1]}"
    if access is None:
        if "source" in enabled_channels(config) or not read_only:
            r.warnings.append(f"signal.data.collection: the signal table {name} does not exist, so no signal sent through it "
                              "and no incremental snapshot can work; create it (id varchar(42) PRIMARY KEY, type varchar(32) "
                              "NOT NULL, data varchar(2048))")
        return
    if access.missing:
        fix = " ".join(_fix(r, m.fix) for m in access.missing)
        r.warnings.append(f"signal.data.collection: incremental snapshots write their watermark rows into {access.sql_name} "
                          f"(incremental.snapshot.watermarking.strategy={strategy}), and {describe_missing(access.missing)}, "
                          f"so they would be refused: {fix} (or set read.only=true, which writes nothing)")
    if r.publication.exists:
        unpublished = unpublished_signal_table(conn, config, signal_table)
        if unpublished is not None:
            message, fix = unpublished
            _fix(r, fix)
            r.warnings.append(message)


def _judge_heartbeat(r: Readiness, conn: psycopg.Connection, config: ConnectorConfig) -> None:
    """``heartbeat.action.query`` runs with the role's rights: the run's own start-up check, reported."""
    refusal = heartbeat_query_refusal(conn, config)
    if refusal is None:
        return
    fixes = " ".join(_fix(r, fix) for fix in refusal.fixes)
    if refusal.privilege:
        fixes = fixes or "grant the role what the statement needs"
    r.errors.append(f"heartbeat.action.query: {refusal.message}" + (f": {fixes}" if fixes else ""))


def _judge_standby(r: Readiness, conn: psycopg.Connection, config: ConnectorConfig) -> None:
    """A standby (16+): said so, with every configured feature a run would refuse there (the run's own
    check, engine/standby.py) and the wait a new slot has there."""
    if not r.server.in_recovery or r.server.version_num < STANDBY_DECODING_MAJOR * 10000:
        return  # not a standby, or one _judge_server already refuses
    published = [(t.schema, t.table) for t in r.tables]
    signal_table = signal_table_of(config)
    if signal_table is not None and signal_table not in published:
        published.append(signal_table)
    refusals = standby_refusals(conn, config, published)
    r.warnings.append("the server is a standby (pg_is_in_recovery()): sparkcdc reads from it and writes nothing there; "
                      + (f"{len(refusals)} configured feature(s) would be refused: {', '.join(x.prop for x in refusals)}"
                         if refusals else "no configured feature needs a write"))
    r.errors += [f"{x.prop}: {x.message}" for x in refusals]
    if r.slot is None:
        r.warnings.append(f"slot {r.slot_name!r} does not exist: created on a standby, it is ready only after the primary's next "
                          "running-transactions record (every 15 s while the primary is busy; SELECT pg_log_standby_snapshot() "
                          "on the primary writes one at once)")


def _judge_failover(r: Readiness, config: ConnectorConfig) -> None:
    """``slot.failover=true`` on a primary: refused before PostgreSQL 17 (as a run refuses it); a slot that
    exists without the flag is not copied to any standby yet (a run makes it a failover slot, and a standby
    copies it some time after), so a failover before then loses it. Whether a standby holds a synchronised
    copy (``pg_replication_slots.synced`` there) is not visible from the primary."""
    if not config.settings.slot_failover or r.server.in_recovery:
        return  # a standby refuses slot.failover itself (_judge_standby)
    if r.server.version_num < 170000:
        r.errors.append(f"slot.failover: failover slots need PostgreSQL 17 or later; the server is {r.server.version} "
                        "(set slot.failover=false)")
    elif r.slot is not None and not r.slot.failover:
        r.warnings.append(f"slot.failover: slot {r.slot_name!r} is not a failover slot, so no standby has a copy of it yet: a run makes "
                          "it one, and a standby with sync_replication_slots copies it after that (check pg_replication_slots.synced "
                          "on the standby); a failover before then loses the slot")
