"""Sans-I/O framing of the replication sub-protocol and the START_REPLICATION command."""

from __future__ import annotations

import struct

import pytest

from sparkcdc.pgoutput import PG_EPOCH_OFFSET_US, Insert, ProtocolError
from sparkcdc.pgoutput.encoder import encode
from sparkcdc.postgres import ReplicationOptions, ReplicationProtocolError, ServerFeatureError
from sparkcdc.postgres.replication_protocol import (
    WalMessage,
    XLogDataDecoder,
    build_standby_status_update,
    parse_keepalive,
    parse_xlogdata_header,
)


def test_standby_status_update_bytes() -> None:
    frame = build_standby_status_update(0x30, 0x20, 0x10, reply_requested=True, now_us=PG_EPOCH_OFFSET_US + 5)
    assert frame == b"r" + struct.pack(">QQQqB", 0x30, 0x20, 0x10, 5, 1)


def test_xlogdata_header_and_keepalive() -> None:
    header = parse_xlogdata_header(b"w" + struct.pack(">QQq", 1, 2, 3) + b"Bpayload")
    assert (header.data_start, header.wal_end, header.send_time_us) == (1, 2, 3 + PG_EPOCH_OFFSET_US)
    keepalive = parse_keepalive(b"k" + struct.pack(">QqB", 99, 0, 1))
    assert keepalive.wal_end == 99 and keepalive.reply_requested
    with pytest.raises(ReplicationProtocolError, match="shorter than its 25-byte header"):
        parse_xlogdata_header(b"w\x00")
    with pytest.raises(ReplicationProtocolError, match="keepalive frame has 3 bytes"):
        parse_keepalive(b"k\x00\x00")


def _xlogdata(start: int, end: int, message: bytes) -> memoryview:
    return memoryview(b"w" + struct.pack(">QQq", start, end, 7) + message)


def test_xlogdata_decoder_takes_consecutive_data_frames() -> None:
    """What read_batch hands it: libpq's (size, frame) results, XLogData decoded until something else."""
    keepalive = b"k" + struct.pack(">QqB", 500, 0, 0)
    results = [
        (40, _xlogdata(10, 20, encode(Insert(None, 5, ("a",))))),
        (40, _xlogdata(20, 30, encode(Insert(None, 5, ("b", None))))),
        (len(keepalive), memoryview(keepalive)),
        (40, _xlogdata(30, 40, encode(Insert(None, 5, ("c",))))),
        (0, memoryview(b"")),
    ]
    pending = iter(results)
    calls: list[int] = []

    def get_copy_data(async_: int) -> tuple[int, memoryview]:
        calls.append(async_)
        return next(pending)

    frames = XLogDataDecoder(1)
    items: list[WalMessage] = []
    size, data = frames.take(get_copy_data, items, 100)
    assert (size, bytes(data)) == (len(keepalive), keepalive)  # handed back to the reader, undecoded
    assert items == [
        WalMessage(10, 20, 7 + PG_EPOCH_OFFSET_US, Insert(None, 5, ("a",))),
        WalMessage(20, 30, 7 + PG_EPOCH_OFFSET_US, Insert(None, 5, ("b", None))),
    ]
    assert frames.received_lsn == 30 and calls == [1, 1, 1]
    # a full list stops before asking libpq for another frame
    assert frames.take(get_copy_data, items, 2) == (0, None) and len(calls) == 3
    assert frames.take(get_copy_data, items, 100)[0] == 0  # nothing more buffered
    assert [item.message.new_tuple for item in items][-1] == ("c",) and frames.received_lsn == 40


def test_xlogdata_decoder_errors() -> None:
    frames = XLogDataDecoder(1)
    with pytest.raises(ReplicationProtocolError, match="shorter than its 25-byte header"):
        frames.decode(b"w\x00")
    with pytest.raises(ProtocolError, match="unknown message type byte"):
        frames.decode(_xlogdata(1, 2, b"\xff"))


def test_start_replication_command_quotes_names() -> None:
    options = ReplicationOptions('my"slot', ("pub one", "it's"), proto_version=3, streaming="on", binary=True, two_phase=True)
    assert options.start_replication_command(0x16B374D848, 150000) == (
        'START_REPLICATION SLOT "my""slot" LOGICAL 16/B374D848 ('
        '"proto_version" \'3\', "publication_names" \'"pub one","it\'\'s"\', "messages" \'true\', '
        '"binary" \'true\', "streaming" \'on\', "two_phase" \'true\')'
    )


def test_v1_command_has_no_streaming_option() -> None:
    command = ReplicationOptions("s", ("p",)).start_replication_command(0, 150000)
    assert "streaming" not in command and "two_phase" not in command


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"streaming": "on"}, "streaming=on needs proto_version >= 2"),
        ({"streaming": "parallel", "proto_version": 3}, "streaming=parallel needs proto_version >= 4"),
        ({"two_phase": True, "proto_version": 2}, "two_phase needs proto_version >= 3"),
        ({"streaming": "sometimes", "proto_version": 2}, "streaming must be off, on or parallel"),
        ({"origin": "mine"}, "origin must be 'any' or 'none'"),
        ({"status_interval": 0}, "status_interval must be positive"),
    ],
)
def test_invalid_options_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReplicationOptions("s", ("p",), **kwargs)


def test_options_the_server_is_too_old_for() -> None:
    with pytest.raises(ServerFeatureError, match="two_phase needs PostgreSQL 15"):
        ReplicationOptions("s", ("p",), proto_version=3, two_phase=True).start_replication_command(0, 140000)
    with pytest.raises(ServerFeatureError, match="PostgreSQL 16"):
        ReplicationOptions("s", ("p",), proto_version=4, streaming="parallel").start_replication_command(0, 150000)
