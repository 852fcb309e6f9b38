"""Typed pgoutput messages, one dataclass per message of the logical replication protocol (v1-v4).

Conventions, chosen for the engine that consumes these:

* LSNs, xids and OIDs are ``int``.
* Timestamps are ``int`` microseconds since the Unix epoch (converted from PostgreSQL's 2000-01-01
  epoch); exact, cheap, and never out of range the way ``datetime`` is. ``to_datetime`` converts.
* ``xid`` on data messages is set only inside a streamed transaction (protocol v2+), else ``None``.
* A tuple is a plain ``tuple`` of column values: ``None`` (SQL NULL), :data:`UNCHANGED_TOAST` (an
  unchanged TOASTed value the server did not send), ``str`` (text format) or ``bytes`` (binary
  format). A plain tuple keeps the per-row hot path free of wrapper objects.
"""

from __future__ import annotations

import datetime as _dt
import enum
from dataclasses import dataclass
from typing import ClassVar, Final, TypeAlias

__all__ = [
    "PG_EPOCH_OFFSET_US",
    "UNCHANGED_TOAST",
    "Begin",
    "BeginPrepare",
    "Commit",
    "CommitPrepared",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Origin",
    "PgOutputMessage",
    "Prepare",
    "Relation",
    "RelationColumn",
    "ReplicaIdentity",
    "RollbackPrepared",
    "StreamAbort",
    "StreamCommit",
    "StreamPrepare",
    "StreamStart",
    "StreamStop",
    "TupleData",
    "TupleValue",
    "Truncate",
    "TypeMessage",
    "UnchangedToast",
    "Update",
    "to_datetime",
]

#: Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01 (both UTC).
PG_EPOCH_OFFSET_US: Final = 946_684_800_000_000

_UNIX_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def to_datetime(unix_us: int) -> _dt.datetime:
    """Microseconds since the Unix epoch -> aware UTC ``datetime``."""
    return _UNIX_EPOCH + _dt.timedelta(microseconds=unix_us)


class UnchangedToast:
    """Marker for a TOASTed column whose value did not change and was therefore not sent ('u')."""

    _instance: ClassVar[UnchangedToast | None] = None
    __slots__ = ()

    def __new__(cls) -> UnchangedToast:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"

    def __reduce__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST: Final = UnchangedToast()

TupleValue: TypeAlias = "None | UnchangedToast | str | bytes"
TupleData: TypeAlias = "tuple[None | UnchangedToast | str | bytes, ...]"


class ReplicaIdentity(enum.Enum):
    """``pg_class.relreplident``."""

    DEFAULT = "d"
    NOTHING = "n"
    FULL = "f"
    INDEX = "i"


@dataclass(slots=True)
class Begin:
    final_lsn: int
    commit_ts_us: int
    xid: int


@dataclass(slots=True)
class LogicalMessage:
    """``pg_logical_emit_message``: transactional ones (flag bit 1) arrive inside their transaction."""

    xid: int | None
    flags: int
    lsn: int
    prefix: str
    content: bytes

    @property
    def transactional(self) -> bool:
        return bool(self.flags & 1)


@dataclass(slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(slots=True)
class Origin:
    origin_lsn: int
    name: str


@dataclass(slots=True)
class RelationColumn:
    flags: int
    name: str
    type_oid: int
    type_modifier: int

    @property
    def is_key(self) -> bool:
        return bool(self.flags & 1)


@dataclass(slots=True)
class Relation:
    xid: int | None
    relation_id: int
    namespace: str
    name: str
    replica_identity: ReplicaIdentity
    columns: tuple[RelationColumn, ...]


@dataclass(slots=True)
class TypeMessage:
    xid: int | None
    type_oid: int
    namespace: str
    name: str


# The row messages (one per change) write their __init__ out rather than have @dataclass generate
# it, so that mypyc compiles it too (see sparkcdc.native); @dataclass still gives eq and repr.


@dataclass(slots=True, init=False)
class Insert:
    xid: int | None
    relation_id: int
    new_tuple: TupleData

    def __init__(self, xid: int | None, relation_id: int, new_tuple: TupleData) -> None:
        self.xid = xid
        self.relation_id = relation_id
        self.new_tuple = new_tuple


@dataclass(slots=True, init=False)
class Update:
    """``old_kind`` is ``"K"`` (replica identity key columns), ``"O"`` (whole old row) or ``None``."""

    xid: int | None
    relation_id: int
    old_kind: str | None
    old_tuple: TupleData | None
    new_tuple: TupleData

    def __init__(
        self, xid: int | None, relation_id: int, old_kind: str | None, old_tuple: TupleData | None, new_tuple: TupleData
    ) -> None:
        self.xid = xid
        self.relation_id = relation_id
        self.old_kind = old_kind
        self.old_tuple = old_tuple
        self.new_tuple = new_tuple


@dataclass(slots=True, init=False)
class Delete:
    """``old_kind`` is ``"K"`` (replica identity key columns) or ``"O"`` (whole old row)."""

    xid: int | None
    relation_id: int
    old_kind: str
    old_tuple: TupleData

    def __init__(self, xid: int | None, relation_id: int, old_kind: str, old_tuple: TupleData) -> None:
        self.xid = xid
        self.relation_id = relation_id
        self.old_kind = old_kind
        self.old_tuple = old_tuple


@dataclass(slots=True)
class Truncate:
    xid: int | None
    options: int
    relation_ids: tuple[int, ...]

    @property
    def cascade(self) -> bool:
        return bool(self.options & 1)

    @property
    def restart_identity(self) -> bool:
        return bool(self.options & 2)


@dataclass(slots=True)
class StreamStart:
    xid: int
    first_segment: bool


@dataclass(slots=True)
class StreamStop:
    pass


@dataclass(slots=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(slots=True)
class StreamAbort:
    """``abort_lsn`` / ``abort_ts_us`` are sent only by protocol v4 with ``streaming = parallel``."""

    xid: int
    subxid: int
    abort_lsn: int | None = None
    abort_ts_us: int | None = None


@dataclass(slots=True)
class BeginPrepare:
    prepare_lsn: int
    end_lsn: int
    prepare_ts_us: int
    xid: int
    gid: str


@dataclass(slots=True)
class Prepare:
    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_ts_us: int
    xid: int
    gid: str


@dataclass(slots=True)
class CommitPrepared:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int
    xid: int
    gid: str


@dataclass(slots=True)
class RollbackPrepared:
    flags: int
    prepare_end_lsn: int
    rollback_end_lsn: int
    prepare_ts_us: int
    rollback_ts_us: int
    xid: int
    gid: str


@dataclass(slots=True)
class StreamPrepare:
    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_ts_us: int
    xid: int
    gid: str


PgOutputMessage: TypeAlias = (
    "Begin | LogicalMessage | Commit | Origin | Relation | TypeMessage | Insert | Update | Delete | Truncate"
    " | StreamStart | StreamStop | StreamCommit | StreamAbort | BeginPrepare | Prepare | CommitPrepared"
    " | RollbackPrepared | StreamPrepare"
)
