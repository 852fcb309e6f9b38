"""Per-column options: selection, truncation, masking, hashing, source-type propagation, key columns.

All patterns are case-insensitive and matched in full against ``schema.table.column`` (or
``schema.table`` for ``message.key.columns``, ``schema.table.TYPE`` for
``datatype.propagate.source.type``), as Debezium matches them. Value transformations and the schema
parameters that announce them (``truncateLength``, ``masked``) apply to the ``before``/``after``
fields only: Debezium leaves key fields alone (checked against Debezium 3.6.3).

Hashing reproduces Debezium exactly: ``column.mask.hash.<algorithm>.with.salt.<salt>`` digests the
salt followed by the Java serialization of the value (``ObjectOutputStream.writeObject(String)``,
Debezium's "V1" strategy), ``column.mask.hash.v2...`` the value's bytes (``String.getBytes()``: UTF-8,
Java's default charset since Java 18); the lower-case hex digest is cut to the column's length when
the column has one. The algorithm is a Java ``MessageDigest`` name (``SHA-256``, ``SHA3-512``,
``SHA-512/256``, any case). Debezium applies truncation and hashing after a value's conversion, so a
NOT NULL column's fallback (the empty string a delete's old row has for a column it does not carry)
is truncated and hashed too: :meth:`ColumnRules.fallback_transform`.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Callable
from typing import Any

from ..errors import ConfigurationError
from .config import ConnectorConfig, compile_patterns

__all__ = ["ColumnRules", "java_serialized_string"]

_TRUNCATE = re.compile(r"column\.truncate\.to\.(\d+)\.chars")
_MASK = re.compile(r"column\.mask\.with\.(\d+)\.chars")
_HASH = re.compile(r"column\.mask\.hash\.(v2\.)?(.+?)\.with\.salt\.(.+)")
_UNKNOWN_LENGTH = 2147483647

Converter = Callable[[str], Any]


def java_serialized_string(value: str) -> bytes:
    """``ObjectOutputStream.writeObject(value)``: stream header, then TC_STRING / TC_LONGSTRING."""
    encoded = _modified_utf8(value)
    header = b"\xac\xed\x00\x05"
    if len(encoded) <= 0xFFFF:
        return header + b"t" + struct.pack(">H", len(encoded)) + encoded
    return header + b"|" + struct.pack(">Q", len(encoded)) + encoded


def _modified_utf8(value: str) -> bytes:
    """Java's modified UTF-8: NUL as two bytes, characters beyond the BMP as two 3-byte surrogates."""
    if value.isascii() and "\0" not in value:
        return value.encode("ascii")
    out = bytearray()
    for unit in struct.unpack(f">{len(value.encode('utf-16-be')) // 2}H", value.encode("utf-16-be")):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            out += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    return bytes(out)


#: Java MessageDigest names (upper case) hashlib spells otherwise.
_JAVA_DIGESTS = {"SHA": "sha1", "SHA-512/224": "sha512_224", "SHA-512/256": "sha512_256", "SHA3-224": "sha3_224",
                 "SHA3-256": "sha3_256", "SHA3-384": "sha3_384", "SHA3-512": "sha3_512"}


def _digest_name(algorithm: str) -> str:
    """hashlib's name for a Java MessageDigest algorithm (Java takes its names in any case)."""
    upper = algorithm.upper()
    return _JAVA_DIGESTS.get(upper) or upper.replace("-", "").lower()


class ColumnRules:
    """The column options of one configuration, compiled once."""

    def __init__(self, config: ConnectorConfig) -> None:
        self._include = config.get_patterns("column.include.list")
        self._exclude = config.get_patterns("column.exclude.list")
        self._truncate = [(int(m.group(1)), compile_patterns(v)) for m, v in config.items_matching(_TRUNCATE)]
        self._mask = [(int(m.group(1)), compile_patterns(v)) for m, v in config.items_matching(_MASK)]
        self._hash: list[tuple[bool, str, bytes, list[re.Pattern[str]]]] = []
        for match, value in config.items_matching(_HASH):
            algorithm = _digest_name(match.group(2))
            try:
                hashlib.new(algorithm)
            except ValueError:
                raise ConfigurationError(f"unknown hash algorithm {match.group(2)!r}", prop=match.group(0)) from None
            self._hash.append((bool(match.group(1)), algorithm, match.group(3).encode("utf-8"), compile_patterns(value)))
        self._propagate_columns = config.get_patterns("column.propagate.source.type")
        self._propagate_types = config.get_patterns("datatype.propagate.source.type")
        self._key_columns: list[tuple[re.Pattern[str], list[str]]] = []
        for entry in (config.settings.message_key_columns or "").split(";"):
            if entry.strip():
                table_pattern, _, columns = entry.partition(":")
                names = [c.strip() for c in columns.split(",") if c.strip()]
                self._key_columns.append((re.compile(table_pattern.strip(), re.IGNORECASE), names))

    def selected(self, qualified_column: str) -> bool:
        """``column.include.list`` / ``column.exclude.list``."""
        if self._include:
            return any(p.fullmatch(qualified_column) for p in self._include)
        return not any(p.fullmatch(qualified_column) for p in self._exclude)

    def key_override(self, qualified_table: str) -> list[str] | None:
        for pattern, columns in self._key_columns:
            if pattern.fullmatch(qualified_table):
                return columns
        return None

    def propagates(self, qualified_column: str, qualified_type: str) -> bool:
        return any(p.fullmatch(qualified_column) for p in self._propagate_columns) or any(
            p.fullmatch(qualified_type) for p in self._propagate_types
        )

    def fallback_transform(self, qualified_column: str, column_length: int) -> Callable[[Any], Any] | None:
        """Truncation and hashing of an already converted value (a NOT NULL column's fallback), as the
        column's converter applies them after conversion; None when neither applies to the column."""
        steps: list[Converter] = []
        for length, patterns in self._truncate:
            if any(p.fullmatch(qualified_column) for p in patterns):
                steps.append(_truncating(_same, length))
        for utf8, algorithm, salt, patterns in self._hash:
            if any(p.fullmatch(qualified_column) for p in patterns):
                steps.append(_hashing(_same, algorithm, salt, utf8, column_length if 0 < column_length < _UNKNOWN_LENGTH else None))
        if not steps:
            return None

        def transform(value: Any) -> Any:
            for step in steps:
                value = step(value)
            return value

        return transform

    def value_transform(
        self, qualified_column: str, convert: Converter, column_length: int
    ) -> tuple[Converter, dict[str, str], str | None]:
        """The converter with truncation/masking/hashing applied, the schema parameters they add, and
        the mask when the column is masked (Debezium masks NULL values too)."""
        parameters: dict[str, str] = {}
        mask: str | None = None
        for length, patterns in self._truncate:
            if any(p.fullmatch(qualified_column) for p in patterns):
                convert = _truncating(convert, length)
                parameters["truncateLength"] = str(length)
        for length, patterns in self._mask:
            if any(p.fullmatch(qualified_column) for p in patterns):
                mask = "*" * length
                convert = _constant(mask)
                parameters["masked"] = "true"
        for utf8, algorithm, salt, patterns in self._hash:
            if any(p.fullmatch(qualified_column) for p in patterns):
                limit = column_length if 0 < column_length < _UNKNOWN_LENGTH else None
                convert = _hashing(convert, algorithm, salt, utf8, limit)
                parameters["masked"] = "true"
        return convert, parameters, mask


def _truncating(inner: Converter, length: int) -> Converter:
    def convert(text: str) -> Any:
        value = inner(text)
        return value[:length] if isinstance(value, str) else value

    return convert


def _same(value: Any) -> Any:
    return value


def _constant(masked: str) -> Converter:
    return lambda text: masked


def _hashing(inner: Converter, algorithm: str, salt: bytes, utf8: bool, limit: int | None) -> Converter:
    def convert(text: str) -> Any:
        value = inner(text)
        if not isinstance(value, str):
            return value
        digest = hashlib.new(algorithm, salt)
        digest.update(value.encode("utf-8") if utf8 else java_serialized_string(value))
        hexed = digest.hexdigest()
        return hexed[:limit] if limit is not None else hexed

    return convert
