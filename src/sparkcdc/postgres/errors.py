"""Exceptions raised by everything that talks to the PostgreSQL server, and the one mapping from
the server's errors to them.

The server's error becomes one of these classes by its SQLSTATE (and the diagnostic fields that
name the table), in :func:`server_error` and :func:`from_psycopg` only: never by the message's
text, which changes with the server's version and ``lc_messages``.
"""

from __future__ import annotations

import psycopg

from ..errors import ProtocolError, ServerError

__all__ = [
    "ObjectNotFoundError",
    "ReplicationConnectionLost",
    "ReplicationError",
    "ReplicationProtocolError",
    "ServerFeatureError",
    "ServerUnavailableError",
    "SlotInUseError",
    "SlotNotFoundError",
    "from_psycopg",
    "server_error",
]

#: SQLSTATE classes after which the connection is gone but a new one may work: connection
#: exception (08) and operator intervention (57: shutdown, terminated backend, crash recovery).
TRANSIENT_SQLSTATE_CLASSES = ("08", "57")
UNDEFINED_OBJECT = "42704"  # a slot named in a request that does not exist (among other objects)
OBJECT_IN_USE = "55006"  # a slot active for another process
DUPLICATE_OBJECT = "42710"  # CREATE_REPLICATION_SLOT of a slot that exists


class ServerUnavailableError(ServerError):
    """The server cannot be reached, or the connection broke (no SQLSTATE, or class 08 or 57)."""


class ObjectNotFoundError(ServerError, LookupError):
    """A table or type a catalog lookup named does not exist in the database."""


class ExportedSnapshotGoneError(ServerError):
    """``SET TRANSACTION SNAPSHOT`` could not import an exported snapshot: the transaction that
    exported it has ended. PostgreSQL 15 says so with SQLSTATE 22023 (invalid snapshot identifier),
    18 with 42704 (snapshot does not exist); callers tell it by this type, not by the code."""


class ReplicationError(ServerError):
    """The replication connection or command failed. ``sqlstate`` is set when the server sent one."""


class SlotNotFoundError(ReplicationError):
    """The named replication slot (``slot``) does not exist (SQLSTATE 42704)."""


class SlotLostError(SlotNotFoundError):
    """The slot a running stream reads was there and is gone: dropped, or the server now accepting writes
    is a promoted standby the slot had not been synchronised to (``slot.failover``). ``sparkcdc run``
    restarts after it, so that the planner decides from the checkpoint what follows (a new snapshot
    with ``snapshot.mode=when_needed``, otherwise an error naming the slot)."""


class SlotInUseError(ReplicationError):
    """The replication slot (``slot``) is active for another process (SQLSTATE 55006)."""


class ReplicationConnectionLost(ReplicationError, ServerUnavailableError):
    """The replication connection broke (server restart, network, terminated walsender)."""


class ReplicationProtocolError(ProtocolError, RuntimeError):
    """A frame of the streaming replication (COPY BOTH) sub-protocol is malformed.

    (A protocol error, not a server one; still a ``RuntimeError`` as it always was.)
    """


class ServerFeatureError(ReplicationError):
    """The server's version does not support a requested option (e.g. ``two_phase`` before 15)."""


def server_error(
    message: str,
    sqlstate: str | None,
    *,
    slot: str | None = None,
    slot_request: bool = False,
    replication: bool = False,
    table: str | None = None,
    connected: bool = True,
) -> ServerError:
    """The exception for an error the server reported with ``sqlstate`` (``None``: it sent none).

    ``slot`` names the slot concerned. ``slot_request`` says the failed request was about that
    slot (a slot function, ``START_REPLICATION``, ``CREATE_REPLICATION_SLOT``): an undefined object
    is then the slot, an object in use the slot held by another process, a duplicate object the
    slot already there. Once the stream runs, the slot is ours and an undefined object is something
    else (a publication). ``replication``: the connection was a replication connection.
    ``connected``: the connection is still usable (libpq's status), so the error is not a lost one.
    """
    if slot_request and slot is not None:
        if sqlstate == UNDEFINED_OBJECT:
            return SlotNotFoundError(message, sqlstate=sqlstate, slot=slot, table=table)
        if sqlstate == OBJECT_IN_USE:
            return SlotInUseError(message, sqlstate=sqlstate, slot=slot, table=table)
    if sqlstate is None or sqlstate.startswith(TRANSIENT_SQLSTATE_CLASSES) or not connected:
        lost = ReplicationConnectionLost if replication else ServerUnavailableError
        return lost(message, sqlstate=sqlstate, slot=slot, table=table)
    kind = ReplicationError if replication or slot_request else ServerError
    return kind(message, sqlstate=sqlstate, slot=slot, table=table)


def from_psycopg(
    exc: psycopg.Error, what: str, *, slot: str | None = None, slot_request: bool = False, replication: bool = False
) -> ServerError:
    """:func:`server_error` for an error psycopg raised while doing ``what`` (e.g. "cannot drop slot
    'x'"); the table comes from the error's diagnostic fields when the server named one."""
    diag = exc.diag
    table = f"{diag.schema_name}.{diag.table_name}" if diag.schema_name and diag.table_name else diag.table_name
    detail = str(exc).strip()
    return server_error(f"{what}: {detail}" if detail else what, exc.sqlstate, slot=slot, slot_request=slot_request,
                        replication=replication, table=table)
