"""Sans-I/O framing of the streaming replication sub-protocol (inside COPY BOTH).

Server -> client: XLogData (``w``) carrying one pgoutput message, and Primary keepalive (``k``).
Client -> server: Standby status update (``r``), whose flush position is what the slot confirms.
Kept apart from the socket handling so the exact bytes we send as feedback can be tested alone.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from ..pgoutput.messages import PG_EPOCH_OFFSET_US
from .errors import ReplicationProtocolError

__all__ = [
    "XLOGDATA_HEADER_SIZE",
    "XLOGDATA_STRUCT",
    "PrimaryKeepalive",
    "XLogDataHeader",
    "build_standby_status_update",
    "parse_keepalive",
    "parse_xlogdata_header",
]

XLOGDATA_HEADER_SIZE = 25
XLOGDATA_STRUCT = _XLOGDATA = struct.Struct(">cQQq")
_KEEPALIVE = struct.Struct(">cQqB")
_STATUS = struct.Struct(">cQQQqB")


@dataclass(frozen=True, slots=True)
class XLogDataHeader:
    data_start: int
    wal_end: int
    send_time_us: int


@dataclass(frozen=True, slots=True)
class PrimaryKeepalive:
    wal_end: int
    send_time_us: int
    reply_requested: bool


def parse_xlogdata_header(frame: bytes | memoryview) -> XLogDataHeader:
    """Header of a ``w`` frame; the pgoutput message is ``frame[XLOGDATA_HEADER_SIZE:]``."""
    if len(frame) < XLOGDATA_HEADER_SIZE:
        raise ReplicationProtocolError(f"XLogData frame of {len(frame)} bytes is shorter than its 25-byte header")
    _, start, end, sent = _XLOGDATA.unpack_from(frame)
    return XLogDataHeader(start, end, sent + PG_EPOCH_OFFSET_US)


def parse_keepalive(frame: bytes | memoryview) -> PrimaryKeepalive:
    if len(frame) != _KEEPALIVE.size:
        raise ReplicationProtocolError(f"keepalive frame has {len(frame)} bytes, expected {_KEEPALIVE.size}")
    _, wal_end, sent, reply = _KEEPALIVE.unpack(frame)
    return PrimaryKeepalive(wal_end, sent + PG_EPOCH_OFFSET_US, reply == 1)


def build_standby_status_update(
    write_lsn: int, flush_lsn: int, apply_lsn: int, *, reply_requested: bool = False, now_us: int | None = None
) -> bytes:
    """The ``r`` frame. For a logical slot the server confirms ``flush_lsn`` (0 confirms nothing)."""
    if now_us is None:
        now_us = time.time_ns() // 1000
    return _STATUS.pack(b"r", write_lsn, flush_lsn, apply_lsn, now_us - PG_EPOCH_OFFSET_US, 1 if reply_requested else 0)
