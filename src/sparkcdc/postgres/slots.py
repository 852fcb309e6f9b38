"""Replication slots: state, creation (with an exported snapshot), advance and drop.

The SQL helpers take an open psycopg connection (autocommit) so callers decide about pooling and
transactions. Slot creation with an exported snapshot needs its own replication connection that
must stay open, idle, for as long as the snapshot is in use; :class:`ExportedSnapshotSlot` owns it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..lsn import format_lsn, parse_lsn
from .connections import connect
from .errors import ReplicationError, SlotInUseError, SlotNotFoundError, from_psycopg
from .replication import quote_ident

__all__ = [
    "ExportedSnapshotSlot",
    "SlotState",
    "advance_slot",
    "create_logical_slot",
    "current_wal_insert_lsn",
    "current_wal_lsn",
    "emit_logical_message",
    "drop_slot",
    "ensure_slot",
    "get_slot",
    "invalidation_explained",
    "run_statement",
    "set_slot_failover",
    "slot_failover",
]

#: The first major whose logical slots can be failover slots (synchronised to standbys).
FAILOVER_SLOTS_MAJOR = 17


@dataclass(frozen=True, slots=True)
class SlotState:
    """A row of ``pg_replication_slots`` (LSNs as ints, ``None`` when the server reports NULL)."""

    slot_name: str
    plugin: str | None
    slot_type: str
    database: str | None
    temporary: bool
    active: bool
    active_pid: int | None
    restart_lsn: int | None
    confirmed_flush_lsn: int | None
    two_phase: bool
    wal_status: str | None
    #: Why the server invalidated the slot (PostgreSQL 17+: ``wal_removed``, ``rows_removed``,
    #: ``wal_level_insufficient``, 18+: ``idle_timeout``); ``None`` for a valid slot or an older server.
    invalidation_reason: str | None = None
    #: Since when no connection has read the slot (PostgreSQL 17+; ``None`` while one reads it).
    inactive_since: datetime | None = None
    #: A failover slot, copied to standbys with ``sync_replication_slots`` (PostgreSQL 17+).
    failover: bool = False
    #: On a standby: a copy of the primary's failover slot, kept in step by the slot sync worker (17+).
    synced: bool = False

    @property
    def invalidated(self) -> bool:
        """The server will not decode from this slot again (``wal_status`` ``lost``: every invalidation shows so)."""
        return self.wal_status == "lost" or self.invalidation_reason is not None


def _lsn_or_none(text: str | None) -> int | None:
    return None if text is None else parse_lsn(text)


def current_wal_lsn(conn: psycopg.Connection) -> int:
    """``pg_current_wal_lsn()``: the end of WAL written so far on the primary."""
    row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    return parse_lsn(row[0])


def current_wal_insert_lsn(conn: psycopg.Connection) -> int:
    """``pg_current_wal_insert_lsn()``: where the next WAL record goes (always a record boundary).

    On a standby (PostgreSQL 16+ decodes there) no WAL is inserted, and a logical slot decodes only
    what has been replayed: ``pg_last_wal_replay_lsn()``, the end of the last replayed record, is the
    same kind of boundary. Asked each time, so a standby promoted under a run answers as a primary."""
    row = conn.execute("SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                       "ELSE pg_current_wal_insert_lsn() END)::text").fetchone()
    assert row is not None
    return parse_lsn(row[0])


def emit_logical_message(conn: psycopg.Connection, prefix: str, content: str = "", *, transactional: bool = False) -> None:
    """``pg_logical_emit_message``: a message every logical slot decodes, even with no table changed."""
    conn.execute("SELECT pg_logical_emit_message(%s, %s, %s)", (transactional, prefix, content))


def run_statement(conn: psycopg.Connection, statement: str) -> None:
    """A statement the user configured (``heartbeat.action.query``), run as it is."""
    conn.execute(statement.encode())


def get_slot(conn: psycopg.Connection, slot_name: str) -> SlotState | None:
    newer = ("invalidation_reason, inactive_since, failover, synced" if conn.info.server_version >= INVALIDATION_REASON_MAJOR * 10000
             else "NULL::text, NULL::timestamptz, false, false")  # the columns PostgreSQL 17 added
    row = conn.execute(
        f"""SELECT slot_name::text, plugin::text, slot_type, database::text, temporary, active, active_pid,
                  restart_lsn::text, confirmed_flush_lsn::text, two_phase, wal_status, {newer}
             FROM pg_replication_slots WHERE slot_name = %s""".encode(),
        (slot_name,),
    ).fetchone()
    if row is None:
        return None
    return SlotState(
        slot_name=row[0],
        plugin=row[1],
        slot_type=row[2],
        database=row[3],
        temporary=row[4],
        active=row[5],
        active_pid=row[6],
        restart_lsn=_lsn_or_none(row[7]),
        confirmed_flush_lsn=_lsn_or_none(row[8]),
        two_phase=row[9],
        wal_status=row[10],
        invalidation_reason=row[11],
        inactive_since=row[12],
        failover=bool(row[13]),
        synced=bool(row[14]),
    )


#: The first major whose pg_replication_slots says why a slot was invalidated (``invalidation_reason``).
INVALIDATION_REASON_MAJOR = 17

#: Per invalidation reason: what happened, and the server setting behind it (Debezium's connector would
#: fail on the same slot with the server's "can no longer get changes" error).
_INVALIDATIONS = {
    "wal_removed": ("the WAL it still needed was removed, as it was further behind than max_slot_wal_keep_size allows",
                    "max_slot_wal_keep_size"),
    "idle_timeout": ("it was inactive (no connection reading it) for longer than idle_replication_slot_timeout",
                     "idle_replication_slot_timeout"),
    "rows_removed": ("catalog rows it needed were removed (a slot on a standby whose primary vacuumed them: "
                     "hot_standby_feedback)", "hot_standby_feedback"),
    "wal_level_insufficient": ("the primary's wal_level is below logical", "wal_level"),
}


def invalidation_explained(slot: SlotState, conn: psycopg.Connection | None = None) -> str:
    """Why the server invalidated ``slot``, naming the setting behind it and (with ``conn``) its value.
    Before PostgreSQL 17 the server does not say: a lost slot there has lost its WAL (max_slot_wal_keep_size)."""
    reason = slot.invalidation_reason
    if reason is None:
        what, setting = _INVALIDATIONS["wal_removed"]
        text = f"wal_status=lost: {what}"
    elif reason in _INVALIDATIONS:
        what, setting = _INVALIDATIONS[reason]
        text = f"invalidation_reason={reason}: {what}"
    else:
        return f"invalidation_reason={reason}"
    if conn is not None:
        row = conn.execute(f"SHOW {setting}".encode()).fetchone()
        if row is not None:
            text += f" (the server's {setting} is {row[0]})"
    return text


def create_logical_slot(
    conn: psycopg.Connection, slot_name: str, *, plugin: str = "pgoutput", temporary: bool = False, two_phase: bool = False,
    failover: bool = False,
) -> int:
    """Create a logical slot through SQL; returns its consistent point (no snapshot is exported).

    ``failover``: a failover slot (PostgreSQL 17+), which standbys with ``sync_replication_slots``
    copy, so that it is there, at most behind, on a promoted standby."""
    if failover:
        row = conn.execute("SELECT lsn::text FROM pg_create_logical_replication_slot(%s, %s, %s, %s, failover => true)",
                           (slot_name, plugin, temporary, two_phase)).fetchone()
    else:
        row = conn.execute(
            "SELECT lsn::text FROM pg_create_logical_replication_slot(%s, %s, %s, %s)", (slot_name, plugin, temporary, two_phase)
        ).fetchone()
    assert row is not None
    return parse_lsn(row[0])


def ensure_slot(conn: psycopg.Connection, slot_name: str, *, plugin: str = "pgoutput", two_phase: bool = False) -> tuple[SlotState, bool]:
    """Reuse the logical slot if it exists (it must use ``plugin`` in this database), else create it.

    Returns the slot's state and whether it was created now.
    """
    state = get_slot(conn, slot_name)
    if state is None:
        try:
            create_logical_slot(conn, slot_name, plugin=plugin, two_phase=two_phase)
        except psycopg.errors.DuplicateObject:
            pass  # created concurrently: reuse it, after the same checks
        else:
            created = get_slot(conn, slot_name)
            assert created is not None
            return created, True
        state = get_slot(conn, slot_name)
        assert state is not None
    database = conn.info.dbname
    if state.slot_type != "logical" or state.plugin != plugin or state.database != database:
        raise ReplicationError(
            f"slot {slot_name!r} exists but is a {state.slot_type} slot for plugin {state.plugin!r} in database "
            f"{state.database!r}; expected a logical {plugin!r} slot in {database!r}",
            slot=slot_name,
        )
    return state, False


def slot_failover(conn: psycopg.Connection, slot_name: str) -> bool | None:
    """Whether the slot is a failover slot (``None``: no such slot; always ``False`` before PostgreSQL 17)."""
    if conn.info.server_version < FAILOVER_SLOTS_MAJOR * 10000:
        return None if get_slot(conn, slot_name) is None else False
    row = conn.execute("SELECT failover FROM pg_replication_slots WHERE slot_name = %s", (slot_name,)).fetchone()
    return None if row is None else bool(row[0])


def set_slot_failover(conninfo: str, slot_name: str, failover: bool) -> None:
    """Make an existing slot a failover slot or not (``ALTER_REPLICATION_SLOT``, a replication command, 17+)."""
    params = conninfo_to_dict(conninfo)
    params.update(replication="database")
    params.setdefault("application_name", "sparkcdc-slot")
    try:
        with connect(make_conninfo(**params), autocommit=True) as conn:
            command = f"ALTER_REPLICATION_SLOT {quote_ident(slot_name)} (FAILOVER {'true' if failover else 'false'})"
            conn.execute(command.encode(), prepare=False)
    except psycopg.Error as exc:
        raise from_psycopg(exc, f"cannot change slot {slot_name!r} to failover={failover}", slot=slot_name, slot_request=True,
                           replication=True) from None


def advance_slot(conn: psycopg.Connection, slot_name: str, lsn: int) -> int:
    """``pg_replication_slot_advance``; returns the position the slot reached."""
    try:
        row = conn.execute("SELECT end_lsn::text FROM pg_replication_slot_advance(%s, %s::pg_lsn)", (slot_name, format_lsn(lsn))).fetchone()
    except psycopg.Error as exc:
        raise from_psycopg(exc, f"cannot advance slot {slot_name!r}", slot=slot_name, slot_request=True) from None
    assert row is not None
    return parse_lsn(row[0])


def drop_slot(conn: psycopg.Connection, slot_name: str, *, missing_ok: bool = True, wait: float = 0.0) -> bool:
    """Drop the slot; ``False`` when it did not exist and ``missing_ok``.

    A walsender releases its slot only after its client has gone, a moment after the client closed
    the connection; ``wait`` gives it that many seconds before "slot in use" is an error.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot_name,))
        except psycopg.Error as exc:
            error = from_psycopg(exc, f"cannot drop slot {slot_name!r}", slot=slot_name, slot_request=True)
            if isinstance(error, SlotNotFoundError) and missing_ok:
                return False
            if not isinstance(error, SlotInUseError) or time.monotonic() >= deadline:
                raise error from None
            time.sleep(0.02)  # poll interval while the old walsender exits
            continue
        return True


class ExportedSnapshotSlot:
    """A logical slot created with ``SNAPSHOT 'export'``, and the connection that keeps it exported.

    ``snapshot_name`` can be imported by any number of transactions (``SET TRANSACTION SNAPSHOT``)
    while this object is open; they then see the database exactly as of ``consistent_point``, the
    LSN from which streaming the slot yields every later change, which is what makes a snapshot
    plus streaming seamless.
    """

    def __init__(
        self, conninfo: str, slot_name: str, *, plugin: str = "pgoutput", temporary: bool = False, two_phase: bool = False,
        failover: bool = False,
    ) -> None:
        params = conninfo_to_dict(conninfo)
        params.update(replication="database")
        params.setdefault("application_name", "sparkcdc-snapshot")
        self._conn: psycopg.Connection | None = connect(make_conninfo(**params), autocommit=True)
        try:
            options = ["SNAPSHOT 'export'"]
            if two_phase:
                options.append("TWO_PHASE")
            if failover:  # a failover slot (17+), copied to standbys that synchronise slots
                options.append("FAILOVER")
            command = (
                f"CREATE_REPLICATION_SLOT {quote_ident(slot_name)} {'TEMPORARY ' if temporary else ''}"
                f"LOGICAL {quote_ident(plugin)} ({', '.join(options)})"
            )
            cursor = self._conn.cursor()
            cursor.execute(command.encode(), prepare=False)
            row = cursor.fetchone()
        except psycopg.errors.DuplicateObject as exc:
            self.close()
            raise ReplicationError(f"cannot create slot {slot_name!r}: it already exists", sqlstate=exc.sqlstate, slot=slot_name) from None
        except psycopg.Error as exc:
            self.close()
            raise from_psycopg(exc, f"cannot create slot {slot_name!r}", slot=slot_name, slot_request=True, replication=True) from None
        assert row is not None
        self.slot_name: str = row[0]
        self.consistent_point: int = parse_lsn(row[1])
        self.snapshot_name: str = row[2]
        self.output_plugin: str = row[3]

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        """End the export; transactions that already imported the snapshot are unaffected."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> ExportedSnapshotSlot:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
