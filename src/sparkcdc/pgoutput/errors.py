"""The one exception the pgoutput decoder raises."""

from __future__ import annotations

__all__ = ["ProtocolError"]


class ProtocolError(ValueError):
    """A pgoutput message is malformed, truncated, or not valid in the decoder's current state.

    Carries the message type (``None`` when even the type byte is missing or unknown) and the byte
    offset inside the message where decoding failed, so that a bad stream can be diagnosed from the
    error alone; the decoder never skips input silently.
    """

    def __init__(self, reason: str, *, message_type: str | None, offset: int) -> None:
        self.reason = reason
        self.message_type = message_type
        self.offset = offset
        where = f"pgoutput {message_type} message" if message_type else "pgoutput message"
        super().__init__(f"{where}: {reason} (at byte {offset})")
