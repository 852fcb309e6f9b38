"""Exceptions raised by everything that talks to the PostgreSQL server."""

from __future__ import annotations

__all__ = [
    "ReplicationConnectionLost",
    "ReplicationError",
    "ReplicationProtocolError",
    "ServerFeatureError",
    "SlotInUseError",
    "SlotNotFoundError",
]


class ReplicationError(RuntimeError):
    """The replication connection or command failed. ``sqlstate`` is set when the server sent one."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class SlotNotFoundError(ReplicationError):
    """The named replication slot does not exist."""


class SlotInUseError(ReplicationError):
    """The replication slot is active for another process (SQLSTATE 55006)."""


class ReplicationConnectionLost(ReplicationError):
    """The replication connection broke (server restart, network, terminated walsender)."""


class ReplicationProtocolError(ReplicationError):
    """A frame of the streaming replication (COPY BOTH) sub-protocol is malformed."""


class ServerFeatureError(ReplicationError):
    """The server's version does not support a requested option (e.g. ``two_phase`` before 15)."""
