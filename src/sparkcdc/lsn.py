"""PostgreSQL log sequence numbers: 64-bit WAL positions, written ``XXX/XXXXXXXX`` by the server.

We keep LSNs as plain ``int`` everywhere (cheap to compare, to store in offsets and to put in Spark
columns) and convert only at the edges: SQL, replication commands and human-readable output.
"""

from __future__ import annotations

from .errors import ConfigurationError

__all__ = ["INVALID_LSN", "MAX_LSN", "InvalidLsnError", "format_lsn", "parse_lsn"]

INVALID_LSN = 0
MAX_LSN = 0xFFFF_FFFF_FFFF_FFFF


class InvalidLsnError(ConfigurationError):
    """A string or number is not a valid LSN (given in a property, an argument or a checkpoint)."""


def format_lsn(lsn: int) -> str:
    """``0x16B374D848`` -> ``"16/B374D848"``, the form PostgreSQL prints and accepts."""
    if not 0 <= lsn <= MAX_LSN:
        raise InvalidLsnError(f"LSN {lsn} is outside 0..2^64-1")
    return f"{lsn >> 32:X}/{lsn & 0xFFFF_FFFF:X}"


def parse_lsn(text: str) -> int:
    """``"16/B374D848"`` -> ``0x16B374D848``. Also accepts a decimal integer string."""
    text = text.strip()
    high, sep, low = text.partition("/")
    try:
        if not sep:
            value = int(text, 10)
        else:
            if not high or not low or len(high) > 8 or len(low) > 8:
                raise ValueError
            value = (int(high, 16) << 32) | int(low, 16)
    except ValueError:
        raise InvalidLsnError(f"{text!r} is not an LSN (expected the form 16/B374D848)") from None
    if not 0 <= value <= MAX_LSN:
        raise InvalidLsnError(f"{text!r} is outside the LSN range")
    return value
