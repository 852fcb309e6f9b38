"""Malformed input: each error names the message type, the problem and the byte offset."""

from __future__ import annotations

import struct

import pytest

from sparkcdc.pgoutput import (
    Begin,
    Decoder,
    Insert,
    LogicalMessage,
    ProtocolError,
    Relation,
    RelationColumn,
    ReplicaIdentity,
    StreamPrepare,
    StreamStart,
    StreamStop,
    encode,
)


def _error(raw: bytes, version: int = 1, in_stream: bool = False) -> ProtocolError:
    decoder = Decoder(version)
    decoder.in_stream = in_stream
    with pytest.raises(ProtocolError) as info:
        decoder.decode(raw)
    return info.value


def test_empty_message() -> None:
    error = _error(b"")
    assert (error.message_type, error.offset) == (None, 0)
    assert "empty message" in str(error)


def test_unknown_type_byte() -> None:
    error = _error(b"Z\x00\x01")
    assert error.offset == 0 and "0x5a ('Z')" in str(error)


def test_message_of_a_later_protocol_version() -> None:
    error = _error(encode(StreamStart(7, True)), version=1)
    assert error.message_type == "Stream Start"
    assert "not part of protocol version 1 (needs 2)" in str(error)


def test_stream_prepare_needs_streaming_hence_version_2() -> None:
    """Unlike the other two-phase messages (a two_phase slot sends them to a v1 reader too)."""
    error = _error(encode(StreamPrepare(0, 1, 2, 946_684_800_000_000, 7, "g")), version=1)
    assert error.message_type == "Stream Prepare"
    assert "not part of protocol version 1 (needs 2)" in str(error)


def test_truncated_begin_names_the_field_and_offset() -> None:
    raw = encode(Begin(0x1234, 1_700_000_000_000_000, 42))[:12]
    error = _error(raw)
    assert error.message_type == "Begin"
    assert error.offset == 9
    assert str(error) == "pgoutput Begin message: truncated: commit timestamp needs 8 bytes, 3 left (at byte 9)"


def test_column_length_beyond_the_message() -> None:
    raw = b"I" + struct.pack(">I", 16384) + b"N" + struct.pack(">H", 1) + b"t" + struct.pack(">i", 9) + b"abc"
    error = _error(raw)
    assert error.message_type == "Insert" and error.offset == 9
    assert "new tuple column 0 declares 9 bytes but 3 remain" in str(error)


def test_negative_column_length() -> None:
    raw = b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 1) + b"b" + struct.pack(">i", -1)
    assert "declares -1 bytes" in str(_error(raw))


def test_invalid_utf8_in_text_value_points_at_the_bad_byte() -> None:
    raw = b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 1) + b"t" + struct.pack(">i", 3) + b"a\xffb"
    error = _error(raw)
    assert error.offset == 14 and "not valid UTF-8" in str(error)


def test_unknown_tuple_value_kind() -> None:
    raw = b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 1) + b"x"
    error = _error(raw)
    assert error.offset == 8 and "unknown value kind 0x78" in str(error)


def test_missing_new_tuple_marker() -> None:
    raw = b"I" + struct.pack(">I", 1) + b"X"
    error = _error(raw)
    assert error.offset == 5 and "new tuple marker is 0x58, expected 'N'" in str(error)


def test_trailing_bytes() -> None:
    raw = encode(Insert(None, 1, ("a",))) + b"\x00\x00"
    error = _error(raw)
    assert "2 unexpected bytes after the last field" in str(error)
    assert error.offset == len(raw) - 2


def test_unknown_replica_identity() -> None:
    good = encode(Relation(None, 1, "public", "t", ReplicaIdentity.FULL, (RelationColumn(1, "id", 23, -1),)))
    bad = good.replace(b"t\x00f", b"t\x00z", 1)
    error = _error(bad)
    assert error.message_type == "Relation" and "unknown replica identity 0x7a" in str(error)


def test_unterminated_string() -> None:
    raw = encode(LogicalMessage(None, 0, 5, "prefix", b""))
    error = _error(raw[: raw.index(b"\x00", 10)])
    assert "prefix has no terminating NUL" in str(error)


def test_stream_framing_is_checked() -> None:
    assert "without an open stream segment" in str(_error(encode(StreamStop()), version=2))
    assert "already open" in str(_error(encode(StreamStart(1, False)), version=2, in_stream=True))
    assert "not allowed between Stream Start and Stream Stop" in str(
        _error(encode(Begin(1, 0, 1)), version=2, in_stream=True)
    )


def test_stream_xid_prefix_follows_decoder_state() -> None:
    decoder = Decoder(2)
    assert decoder.decode(encode(StreamStart(77, True))) == StreamStart(77, True)
    assert decoder.decode(encode(Insert(77, 5, ("x",)))) == Insert(77, 5, ("x",))
    decoder.decode(encode(StreamStop()))
    assert decoder.decode(encode(Insert(None, 5, ("x",)))) == Insert(None, 5, ("x",))


def test_unsupported_protocol_version() -> None:
    with pytest.raises(ValueError, match="protocol version 5 is not supported"):
        Decoder(5)
