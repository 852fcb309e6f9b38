"""Property-based tests: round trips for every message, and no exception but ProtocolError on bad input."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sparkcdc.pgoutput import MESSAGE_NAMES, Decoder, ProtocolError, StreamAbort, encode

from .strategies import ALL_MESSAGE_STRATEGIES, any_message, in_stream_context, minimum_version

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TYPE_BYTES = sorted(MESSAGE_NAMES)


def _decoder_for(message: object, version: int) -> Decoder:
    decoder = Decoder(version)
    decoder.in_stream = in_stream_context(message)
    return decoder


def test_strategies_cover_every_message_type() -> None:
    assert set(ALL_MESSAGE_STRATEGIES) == set(MESSAGE_NAMES.values())


@SETTINGS
@given(any_message, st.integers(1, 4))
def test_encode_decode_round_trip(message: object, version: int) -> None:
    version = max(version, minimum_version(message))
    decoder = _decoder_for(message, version)
    assert decoder.decode(encode(message)) == message  # type: ignore[arg-type]


@SETTINGS
@given(any_message, st.data())
def test_every_strict_prefix_is_rejected(message: object, data: st.DataObject) -> None:
    raw = encode(message)  # type: ignore[arg-type]
    cut = data.draw(st.integers(0, len(raw) - 1), label="cut")
    decoder = _decoder_for(message, 4)
    if isinstance(message, StreamAbort) and message.abort_lsn is not None and cut == 9:
        # The one prefix that is itself a complete message: Stream Abort without the v4 fields.
        assert decoder.decode(raw[:cut]) == StreamAbort(message.xid, message.subxid)
        return
    try:
        decoder.decode(raw[:cut])
    except ProtocolError as exc:
        assert 0 <= exc.offset <= cut
    else:
        raise AssertionError(f"prefix of {cut}/{len(raw)} bytes of {message!r} decoded without error")


@SETTINGS
@given(any_message, st.binary(min_size=1, max_size=8))
def test_trailing_bytes_are_rejected(message: object, junk: bytes) -> None:
    raw = encode(message) + junk  # type: ignore[arg-type]
    decoder = _decoder_for(message, 4)
    try:
        decoded = decoder.decode(raw)
    except ProtocolError:
        return
    # Only a v2-4 Stream Abort can legitimately grow: by exactly its 16 optional bytes.
    assert isinstance(decoded, StreamAbort) and len(junk) == 16


@SETTINGS
@given(st.binary(max_size=120), st.integers(1, 4), st.booleans())
@example(b"", 1, False)
def test_random_bytes_raise_only_protocol_error(raw: bytes, version: int, in_stream: bool) -> None:
    decoder = Decoder(version)
    decoder.in_stream = in_stream
    try:
        decoder.decode(raw)
    except ProtocolError:
        pass


@SETTINGS
@given(st.sampled_from(TYPE_BYTES), st.binary(max_size=120), st.integers(1, 4), st.booleans())
def test_random_bodies_after_a_valid_type_byte_raise_only_protocol_error(
    code: int, body: bytes, version: int, in_stream: bool
) -> None:
    decoder = Decoder(version)
    decoder.in_stream = in_stream
    try:
        decoder.decode(bytes([code]) + body)
    except ProtocolError as exc:
        assert exc.message_type in (MESSAGE_NAMES[code], None)
        assert 0 <= exc.offset <= len(body) + 1
