"""Everything that talks to the PostgreSQL server: replication, slots, publications."""

from .errors import (
    ReplicationConnectionLost,
    ReplicationError,
    ReplicationProtocolError,
    ServerFeatureError,
    SlotInUseError,
    SlotNotFoundError,
)
from .publications import create_publication, drop_publication, ensure_publication, publication_exists, publication_tables
from .replication import (
    LogicalReplicationReader,
    ReconnectPolicy,
    ReplicationOptions,
    StreamRestarted,
    WalMessage,
    quote_ident,
    quote_literal,
)
from .slots import (
    ExportedSnapshotSlot,
    SlotState,
    advance_slot,
    create_logical_slot,
    current_wal_lsn,
    drop_slot,
    ensure_slot,
    get_slot,
)

__all__ = [
    "ExportedSnapshotSlot",
    "LogicalReplicationReader",
    "ReconnectPolicy",
    "ReplicationConnectionLost",
    "ReplicationError",
    "ReplicationOptions",
    "ReplicationProtocolError",
    "ServerFeatureError",
    "SlotInUseError",
    "SlotNotFoundError",
    "SlotState",
    "StreamRestarted",
    "WalMessage",
    "advance_slot",
    "create_logical_slot",
    "create_publication",
    "current_wal_lsn",
    "drop_publication",
    "drop_slot",
    "ensure_publication",
    "ensure_slot",
    "get_slot",
    "publication_exists",
    "publication_tables",
    "quote_ident",
    "quote_literal",
]
