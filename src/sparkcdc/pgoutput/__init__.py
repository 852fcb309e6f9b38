"""pgoutput: the logical replication message format, decoded without any I/O.

``Decoder(protocol_version).decode(buf)`` turns the payload of one XLogData frame into a typed
message; ``encode(message)`` is its inverse. Nothing here imports a database driver or Spark.
"""

from .decoder import MAX_PROTOCOL_VERSION, MESSAGE_NAMES, MIN_PROTOCOL_VERSION, Decoder
from .encoder import encode, encode_tuple
from .errors import ProtocolError
from .messages import (
    PG_EPOCH_OFFSET_US,
    UNCHANGED_TOAST,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    PgOutputMessage,
    Prepare,
    Relation,
    RelationColumn,
    ReplicaIdentity,
    RollbackPrepared,
    StreamAbort,
    StreamCommit,
    StreamPrepare,
    StreamStart,
    StreamStop,
    Truncate,
    TupleData,
    TupleValue,
    TypeMessage,
    UnchangedToast,
    Update,
    to_datetime,
)
from .wal import WalMessage

__all__ = [
    "WalMessage",
    "MAX_PROTOCOL_VERSION",
    "MESSAGE_NAMES",
    "MIN_PROTOCOL_VERSION",
    "PG_EPOCH_OFFSET_US",
    "UNCHANGED_TOAST",
    "Begin",
    "BeginPrepare",
    "Commit",
    "CommitPrepared",
    "Decoder",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Origin",
    "PgOutputMessage",
    "Prepare",
    "ProtocolError",
    "Relation",
    "RelationColumn",
    "ReplicaIdentity",
    "RollbackPrepared",
    "StreamAbort",
    "StreamCommit",
    "StreamPrepare",
    "StreamStart",
    "StreamStop",
    "Truncate",
    "TupleData",
    "TupleValue",
    "TypeMessage",
    "UnchangedToast",
    "Update",
    "encode",
    "encode_tuple",
    "to_datetime",
]
