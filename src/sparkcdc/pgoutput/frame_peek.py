"""A few fields of a pgoutput message read straight from its raw XLogData frame, without decoding it.

The parallel stream reader (:mod:`sparkcdc.engine.parallel_stream`) hands frames to decoding
processes undecoded; to cut the WAL into whole transactions it needs only each message's type and,
for BEGIN, COMMIT and logical decoding messages, a position or a time. The byte layout of those
messages is the decoder's knowledge, so it is read here, next to the decoder
(:mod:`.decoder` reads the same fields in full), for protocol version 1, which that reader asks for
(no streamed transactions: no message carries an xid before its fields).

A frame is the replication protocol's XLogData message as it came: ``'w'``, start LSN, end LSN and
send time (25 bytes), then the pgoutput message, its type byte first.
"""

from __future__ import annotations

import struct
from typing import Final

from .messages import PG_EPOCH_OFFSET_US

__all__ = [
    "BEGIN", "COMMIT", "LOGICAL_MESSAGE", "MESSAGE_TYPE_AT", "RELATION", "TYPE", "begin_final_lsn", "commit_end_and_time",
    "message_has_prefix", "message_is_transactional", "message_lsn",
]

#: Where the pgoutput message's type byte is in a frame (after the 25-byte XLogData header):
#: ``frame[MESSAGE_TYPE_AT]`` is one of the type bytes below.
MESSAGE_TYPE_AT: Final = 25
BEGIN: Final = 0x42  # 'B'
COMMIT: Final = 0x43  # 'C'
LOGICAL_MESSAGE: Final = 0x4D  # 'M'
RELATION: Final = 0x52  # 'R'
TYPE: Final = 0x59  # 'Y'

_U64: Final = struct.Struct(">Q")
_U64_I64: Final = struct.Struct(">Qq")
_FIELDS_AT: Final = MESSAGE_TYPE_AT + 1  # the message's first field, after its type byte
# COMMIT: flags (1), commit LSN (8), end LSN (8), commit time (8)
_COMMIT_END_AT: Final = _FIELDS_AT + 1 + 8
# logical decoding message: flags (1), LSN (8), prefix (NUL-terminated), content length, content
_MESSAGE_LSN_AT: Final = _FIELDS_AT + 1
_MESSAGE_PREFIX_AT: Final = _MESSAGE_LSN_AT + 8


def begin_final_lsn(frame: bytes | memoryview) -> int:
    """A BEGIN's final LSN: where the transaction's COMMIT record is."""
    return int(_U64.unpack_from(frame, _FIELDS_AT)[0])


def commit_end_and_time(frame: bytes | memoryview) -> tuple[int, int]:
    """A COMMIT's end LSN and commit time (microseconds since the Unix epoch, as the decoder gives it)."""
    end, time = _U64_I64.unpack_from(frame, _COMMIT_END_AT)
    return end, time + PG_EPOCH_OFFSET_US


def message_is_transactional(frame: bytes | memoryview) -> bool:
    """A logical decoding message's transactional flag (a non-transactional one is a unit of its own)."""
    return bool(frame[_FIELDS_AT] & 1)


def message_lsn(frame: bytes | memoryview) -> int:
    """A logical decoding message's LSN."""
    return int(_U64.unpack_from(frame, _MESSAGE_LSN_AT)[0])


def message_has_prefix(frame: bytes | memoryview, prefix: str) -> bool:
    """Whether a logical decoding message's prefix is ``prefix``."""
    expected = prefix.encode() + b"\0"
    return bytes(frame[_MESSAGE_PREFIX_AT:_MESSAGE_PREFIX_AT + len(expected)]) == expected
