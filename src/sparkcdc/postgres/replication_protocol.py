"""Sans-I/O framing of the streaming replication sub-protocol (inside COPY BOTH).

Server -> client: XLogData (``w``) carrying one pgoutput message, and Primary keepalive (``k``).
Client -> server: Standby status update (``r``), whose flush position is what the slot confirms.
Kept apart from the socket handling so the exact bytes we send as feedback can be tested alone,
and so that the per-frame path (:class:`XLogDataDecoder`) can be compiled (see :mod:`sparkcdc.native`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..pgoutput.decoder import Decoder
from ..pgoutput.messages import PG_EPOCH_OFFSET_US
from ..pgoutput.wal import WalMessage
from .errors import ReplicationProtocolError

__all__ = [
    "XLOGDATA_HEADER_SIZE",
    "XLOGDATA_STRUCT",
    "PrimaryKeepalive",
    "WalMessage",
    "XLogDataDecoder",
    "XLogDataHeader",
    "build_standby_status_update",
    "parse_keepalive",
    "parse_xlogdata_header",
]

XLOGDATA_HEADER_SIZE: Final = 25
_XLOGDATA: Final = struct.Struct(">cQQq")
XLOGDATA_STRUCT: Final = _XLOGDATA
_WAL_END: Final = struct.Struct(">Q")
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


class XLogDataDecoder:
    """XLogData frames to :class:`WalMessage` items: the replication reader's per-change work.

    Owns the pgoutput :class:`Decoder` and ``received_lsn``, the highest WAL end seen in a frame
    (the reader also raises it for keepalives).
    """

    def __init__(self, proto_version: int) -> None:
        self.decoder = Decoder(proto_version)
        self.received_lsn = 0

    def decode(self, frame: bytes | memoryview) -> WalMessage:
        """One ``w`` frame (its type byte already checked)."""
        if len(frame) < XLOGDATA_HEADER_SIZE:
            raise ReplicationProtocolError(f"XLogData frame of {len(frame)} bytes is shorter than its 25-byte header")
        _, data_start, wal_end, sent = _XLOGDATA.unpack_from(frame)
        message = self.decoder.decode(frame[XLOGDATA_HEADER_SIZE:])
        if wal_end > self.received_lsn:
            self.received_lsn = wal_end
        return WalMessage(data_start, wal_end, sent + PG_EPOCH_OFFSET_US, message)

    def take(self, get_copy_data: Callable[[int], tuple[int, Any]], items: list[Any], max_items: int) -> tuple[int, Any]:
        """Appends a :class:`WalMessage` to ``items`` for each XLogData frame that
        ``get_copy_data(1)`` (libpq's non-blocking PQgetCopyData) returns, until ``items`` holds
        ``max_items``. Returns the first result that is not an XLogData frame, ``(size, data)``: a
        keepalive, nothing buffered (size 0), or the end of COPY (size -1); ``(0, None)`` when
        ``items`` is full."""
        while len(items) < max_items:
            size, data = get_copy_data(1)
            if size <= 0 or data[0] != 0x77:  # not 'w' XLogData
                return size, data
            items.append(self.decode(data))
        return 0, None

    def take_raw(self, get_copy_data: Callable[[int], tuple[int, Any]], frames: list[Any], max_items: int) -> tuple[int, Any]:
        """:meth:`take` without decoding: each XLogData frame is appended as it came (a buffer that
        stays valid), for a decoder elsewhere (engine/parallel_stream.py); only ``received_lsn``
        moves. The same return values."""
        while len(frames) < max_items:
            size, data = get_copy_data(1)
            if size <= 0 or data[0] != 0x77:  # not 'w' XLogData
                return size, data
            frames.append(self.received(data))
        return 0, None

    def received(self, frame: Any) -> Any:
        """One ``w`` frame, undecoded: its header checked and ``received_lsn`` moved; returned as is."""
        if len(frame) < XLOGDATA_HEADER_SIZE:
            raise ReplicationProtocolError(f"XLogData frame of {len(frame)} bytes is shorter than its 25-byte header")
        wal_end: int = _WAL_END.unpack_from(frame, 9)[0]
        if wal_end > self.received_lsn:
            self.received_lsn = wal_end
        return frame


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
