"""Hypothesis strategies for every pgoutput message, for round trips and truncation tests."""

from __future__ import annotations

from hypothesis import strategies as st

from sparkcdc.pgoutput import (
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
    TypeMessage,
    Update,
)

u8 = st.integers(0, 0xFF)
u32 = st.integers(0, 0xFFFF_FFFF)
i32 = st.integers(-(2**31), 2**31 - 1)
lsn = st.integers(0, 2**64 - 1)
# Any int64 on the wire, shifted to the Unix epoch as the decoder reports it.
timestamp = st.integers(-(2**63), 2**63 - 1).map(lambda pg: pg + PG_EPOCH_OFFSET_US)
cstring = st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=20)
stream_xid = st.none() | u32

value = st.none() | st.just(UNCHANGED_TOAST) | st.text(max_size=30) | st.binary(max_size=30)
tuple_data = st.lists(value, max_size=8).map(tuple)

relation_column = st.builds(RelationColumn, u8, cstring, u32, i32)

begin = st.builds(Begin, lsn, timestamp, u32)
logical_message = st.builds(LogicalMessage, stream_xid, u8, lsn, cstring, st.binary(max_size=40))
commit = st.builds(Commit, u8, lsn, lsn, timestamp)
origin = st.builds(Origin, lsn, cstring)
relation = st.builds(
    Relation, stream_xid, u32, cstring, cstring, st.sampled_from(list(ReplicaIdentity)),
    st.lists(relation_column, max_size=6).map(tuple),
)
type_message = st.builds(TypeMessage, stream_xid, u32, cstring, cstring)
insert = st.builds(Insert, stream_xid, u32, tuple_data)
update = st.one_of(
    st.builds(Update, stream_xid, u32, st.none(), st.none(), tuple_data),
    st.builds(Update, stream_xid, u32, st.sampled_from(["K", "O"]), tuple_data, tuple_data),
)
delete = st.builds(Delete, stream_xid, u32, st.sampled_from(["K", "O"]), tuple_data)
truncate = st.builds(Truncate, stream_xid, u8, st.lists(u32, max_size=6).map(tuple))
stream_start = st.builds(StreamStart, u32, st.booleans())
stream_stop = st.just(StreamStop())
stream_commit = st.builds(StreamCommit, u32, u8, lsn, lsn, timestamp)
stream_abort = st.builds(StreamAbort, u32, u32) | st.builds(StreamAbort, u32, u32, lsn, timestamp)
begin_prepare = st.builds(BeginPrepare, lsn, lsn, timestamp, u32, cstring)
prepare = st.builds(Prepare, u8, lsn, lsn, timestamp, u32, cstring)
commit_prepared = st.builds(CommitPrepared, u8, lsn, lsn, timestamp, u32, cstring)
rollback_prepared = st.builds(RollbackPrepared, u8, lsn, lsn, timestamp, timestamp, u32, cstring)
stream_prepare = st.builds(StreamPrepare, u8, lsn, lsn, timestamp, u32, cstring)

ALL_MESSAGE_STRATEGIES = {
    "Begin": begin,
    "Message": logical_message,
    "Commit": commit,
    "Origin": origin,
    "Relation": relation,
    "Type": type_message,
    "Insert": insert,
    "Update": update,
    "Delete": delete,
    "Truncate": truncate,
    "Stream Start": stream_start,
    "Stream Stop": stream_stop,
    "Stream Commit": stream_commit,
    "Stream Abort": stream_abort,
    "Begin Prepare": begin_prepare,
    "Prepare": prepare,
    "Commit Prepared": commit_prepared,
    "Rollback Prepared": rollback_prepared,
    "Stream Prepare": stream_prepare,
}

any_message = st.one_of(*ALL_MESSAGE_STRATEGIES.values())


def minimum_version(message: object) -> int:
    """The lowest protocol version in which the server can send ``message`` as generated."""
    if isinstance(message, StreamAbort) and message.abort_lsn is not None:
        return 4
    # A two_phase slot sends the prepared-transaction messages whatever version the reader asked for;
    # Stream Prepare needs streaming, hence v2.
    if isinstance(message, (StreamStart, StreamStop, StreamCommit, StreamAbort, StreamPrepare)):
        return 2
    if getattr(message, "xid", None) is not None and isinstance(
        message, (LogicalMessage, Relation, TypeMessage, Insert, Update, Delete, Truncate)
    ):
        return 2
    return 1


def in_stream_context(message: object) -> bool:
    """Whether the decoder must be inside a Stream Start/Stop block to decode ``message``."""
    if isinstance(message, StreamStop):
        return True
    return isinstance(message, (LogicalMessage, Relation, TypeMessage, Insert, Update, Delete, Truncate)) and (
        getattr(message, "xid", None) is not None
    )
