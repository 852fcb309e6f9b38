"""The fields the parallel stream reader peeks at in raw XLogData frames are the ones the decoder reads."""

from __future__ import annotations

import struct

from sparkcdc.pgoutput import Begin, Commit, Decoder, LogicalMessage, encode
from sparkcdc.pgoutput import frame_peek as peek


def _frame(payload: bytes) -> bytes:
    """An XLogData frame as the replication connection gives it: 'w', start LSN, end LSN, send time, payload."""
    return b"w" + struct.pack(">QQq", 0x1000, 0x2000, 0) + payload


def test_begin_and_commit_fields() -> None:
    begin = Begin(final_lsn=0x16B3748, commit_ts_us=1_700_000_000_123_456, xid=731)
    commit = Commit(flags=0, commit_lsn=0x16B3748, end_lsn=0x16B3778, commit_ts_us=1_700_000_000_123_456)
    for message in (begin, commit):
        assert Decoder(1).decode(encode(message)) == message
    frame = _frame(encode(begin))
    assert frame[peek.MESSAGE_TYPE_AT] == peek.BEGIN
    assert peek.begin_final_lsn(frame) == begin.final_lsn
    frame = _frame(encode(commit))
    assert frame[peek.MESSAGE_TYPE_AT] == peek.COMMIT
    assert peek.commit_end_and_time(memoryview(frame)) == (commit.end_lsn, commit.commit_ts_us)


def test_logical_message_fields() -> None:
    for flags in (0, 1):
        message = LogicalMessage(xid=None, flags=flags, lsn=0x5000028, prefix="__debezium-heartbeat", content=b"x")
        frame = _frame(encode(message))
        assert frame[peek.MESSAGE_TYPE_AT] == peek.LOGICAL_MESSAGE
        assert peek.message_is_transactional(frame) is bool(flags)
        assert peek.message_lsn(frame) == message.lsn
        assert peek.message_has_prefix(frame, "__debezium-heartbeat")
        assert not peek.message_has_prefix(frame, "__debezium")

