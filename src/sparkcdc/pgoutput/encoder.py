"""Encoder for pgoutput messages, the inverse of :class:`~sparkcdc.pgoutput.decoder.Decoder`.

The server is the only producer of pgoutput in production; this exists so that every message type,
including protocol-v4 fields PostgreSQL 15 never sends, can be checked by encode -> decode round
trips, and so that tests can build precise malformed inputs.
"""

from __future__ import annotations

import struct
from functools import singledispatch

from . import messages as msg

__all__ = ["encode", "encode_tuple"]


def _u8(value: int) -> bytes:
    return struct.pack(">B", value)


def _u16(value: int) -> bytes:
    return struct.pack(">H", value)


def _u32(value: int) -> bytes:
    return struct.pack(">I", value)


def _i32(value: int) -> bytes:
    return struct.pack(">i", value)


def _u64(value: int) -> bytes:
    return struct.pack(">Q", value)


def _ts(unix_us: int) -> bytes:
    return struct.pack(">q", unix_us - msg.PG_EPOCH_OFFSET_US)


def _cstring(value: str) -> bytes:
    return value.encode("utf-8") + b"\0"


def _xid(xid: int | None) -> bytes:
    return b"" if xid is None else _u32(xid)


def encode_tuple(values: msg.TupleData) -> bytes:
    parts = [_u16(len(values))]
    for value in values:
        if value is None:
            parts.append(b"n")
        elif isinstance(value, msg.UnchangedToast):
            parts.append(b"u")
        elif isinstance(value, str):
            data = value.encode("utf-8")
            parts.append(b"t" + _i32(len(data)) + data)
        else:
            parts.append(b"b" + _i32(len(value)) + bytes(value))
    return b"".join(parts)


@singledispatch
def encode(message: msg.PgOutputMessage) -> bytes:
    """Encode a message. Data messages carry an xid (for use inside a stream) iff ``xid`` is set."""
    raise TypeError(f"not a pgoutput message: {message!r}")


@encode.register
def _(m: msg.Begin) -> bytes:
    return b"B" + _u64(m.final_lsn) + _ts(m.commit_ts_us) + _u32(m.xid)


@encode.register
def _(m: msg.LogicalMessage) -> bytes:
    return b"M" + _xid(m.xid) + _u8(m.flags) + _u64(m.lsn) + _cstring(m.prefix) + _i32(len(m.content)) + m.content


@encode.register
def _(m: msg.Commit) -> bytes:
    return b"C" + _u8(m.flags) + _u64(m.commit_lsn) + _u64(m.end_lsn) + _ts(m.commit_ts_us)


@encode.register
def _(m: msg.Origin) -> bytes:
    return b"O" + _u64(m.origin_lsn) + _cstring(m.name)


@encode.register
def _(m: msg.Relation) -> bytes:
    columns = b"".join(
        _u8(c.flags) + _cstring(c.name) + _u32(c.type_oid) + _i32(c.type_modifier) for c in m.columns
    )
    return (
        b"R" + _xid(m.xid) + _u32(m.relation_id) + _cstring(m.namespace) + _cstring(m.name)
        + m.replica_identity.value.encode("ascii") + _u16(len(m.columns)) + columns
    )


@encode.register
def _(m: msg.TypeMessage) -> bytes:
    return b"Y" + _xid(m.xid) + _u32(m.type_oid) + _cstring(m.namespace) + _cstring(m.name)


@encode.register
def _(m: msg.Insert) -> bytes:
    return b"I" + _xid(m.xid) + _u32(m.relation_id) + b"N" + encode_tuple(m.new_tuple)


@encode.register
def _(m: msg.Update) -> bytes:
    old = b"" if m.old_kind is None or m.old_tuple is None else m.old_kind.encode("ascii") + encode_tuple(m.old_tuple)
    return b"U" + _xid(m.xid) + _u32(m.relation_id) + old + b"N" + encode_tuple(m.new_tuple)


@encode.register
def _(m: msg.Delete) -> bytes:
    return b"D" + _xid(m.xid) + _u32(m.relation_id) + m.old_kind.encode("ascii") + encode_tuple(m.old_tuple)


@encode.register
def _(m: msg.Truncate) -> bytes:
    return b"T" + _xid(m.xid) + _u32(len(m.relation_ids)) + _u8(m.options) + b"".join(_u32(r) for r in m.relation_ids)


@encode.register
def _(m: msg.StreamStart) -> bytes:
    return b"S" + _u32(m.xid) + _u8(1 if m.first_segment else 0)


@encode.register
def _(m: msg.StreamStop) -> bytes:
    return b"E"


@encode.register
def _(m: msg.StreamCommit) -> bytes:
    return b"c" + _u32(m.xid) + _u8(m.flags) + _u64(m.commit_lsn) + _u64(m.end_lsn) + _ts(m.commit_ts_us)


@encode.register
def _(m: msg.StreamAbort) -> bytes:
    tail = b""
    if m.abort_lsn is not None and m.abort_ts_us is not None:
        tail = _u64(m.abort_lsn) + _ts(m.abort_ts_us)
    return b"A" + _u32(m.xid) + _u32(m.subxid) + tail


@encode.register
def _(m: msg.BeginPrepare) -> bytes:
    return b"b" + _u64(m.prepare_lsn) + _u64(m.end_lsn) + _ts(m.prepare_ts_us) + _u32(m.xid) + _cstring(m.gid)


@encode.register
def _(m: msg.Prepare) -> bytes:
    return b"P" + _u8(m.flags) + _u64(m.prepare_lsn) + _u64(m.end_lsn) + _ts(m.prepare_ts_us) + _u32(m.xid) + _cstring(m.gid)


@encode.register
def _(m: msg.CommitPrepared) -> bytes:
    return b"K" + _u8(m.flags) + _u64(m.commit_lsn) + _u64(m.end_lsn) + _ts(m.commit_ts_us) + _u32(m.xid) + _cstring(m.gid)


@encode.register
def _(m: msg.RollbackPrepared) -> bytes:
    return (
        b"r" + _u8(m.flags) + _u64(m.prepare_end_lsn) + _u64(m.rollback_end_lsn) + _ts(m.prepare_ts_us)
        + _ts(m.rollback_ts_us) + _u32(m.xid) + _cstring(m.gid)
    )


@encode.register
def _(m: msg.StreamPrepare) -> bytes:
    return b"p" + _u8(m.flags) + _u64(m.prepare_lsn) + _u64(m.end_lsn) + _ts(m.prepare_ts_us) + _u32(m.xid) + _cstring(m.gid)
