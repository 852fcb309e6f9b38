"""Character, binary, bit-string, network, JSON/XML/UUID/LTREE, enum, range and unknown types."""

from __future__ import annotations

import base64
from collections.abc import Callable

from ..connect import boolean, bytes_, string
from .base import ColumnType, ConversionError, MappingOptions, ValueMapping

__all__ = [
    "BITS_NAME",
    "STREAMING_UNRESOLVED",
    "ENUM_NAME",
    "JSON_NAME",
    "binary_mapping",
    "decode_bytea",
    "map_text_type",
]

JSON_NAME = "io.debezium.data.Json"
XML_NAME = "io.debezium.data.Xml"
UUID_NAME = "io.debezium.data.Uuid"
LTREE_NAME = "io.debezium.data.Ltree"
ENUM_NAME = "io.debezium.data.Enum"
BITS_NAME = "io.debezium.data.Bits"
TSVECTOR_NAME = "io.debezium.data.Tsvector"

# ``isbn`` (from the isn extension) is the one extension type Debezium knows by name: a plain string.
_STRING_TYPES = frozenset({"text", "varchar", "bpchar", "char", "name", "citext", "inet", "cidr", "macaddr", "macaddr8",
                           "int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange", "isbn"})
_NAMED_STRINGS = {"json": JSON_NAME, "jsonb": JSON_NAME, "xml": XML_NAME, "uuid": UUID_NAME, "ltree": LTREE_NAME,
                  "tsvector": TSVECTOR_NAME}

#: ``ValueMapping.extra`` key: Debezium's streaming path has no resolver for the type, so a streamed
#: value is null (then the NOT NULL fallback) unless ``include.unknown.datatypes`` is on; snapshot
#: rows, read through JDBC, carry the value. Debezium 3.6.3 does this for ``name``.
STREAMING_UNRESOLVED = "streaming_unresolved"


def decode_bytea(text: str) -> bytes:
    """``\\x0102`` (bytea_output=hex) or the legacy escape format -> bytes."""
    if text.startswith("\\x"):
        try:
            return bytes.fromhex(text[2:])
        except ValueError:
            raise ConversionError(f"{text[:40]!r} is not hex bytea") from None
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        else:
            octal = text[i + 1 : i + 4]
            if len(octal) != 3 or not set(octal) <= _OCTAL_DIGITS or octal[0] > "3":
                raise ConversionError(f"{text[:40]!r} is not escape-format bytea")
            out.append(int(octal, 8))
            i += 4
    return bytes(out)


_OCTAL_DIGITS = frozenset("01234567")
_BIT_DIGITS = frozenset("01")


def encode_binary(data: bytes, mode: str) -> str:
    """Bytes as the JSON string a ``binary.handling.mode`` gives (``bytes``: JsonConverter's base64)."""
    if mode == "hex":
        return data.hex()
    if mode == "base64-url-safe":
        return base64.urlsafe_b64encode(data).decode("ascii")
    return base64.b64encode(data).decode("ascii")


def binary_mapping(to_bytes: Callable[[str], bytes], options: MappingOptions) -> ValueMapping:
    """A column whose value is bytes, represented per ``binary.handling.mode``."""
    mode = options.binary_handling_mode
    schema = bytes_() if mode == "bytes" else string()

    def convert(text: str) -> str:
        return encode_binary(to_bytes(text), mode)

    toast = options.unavailable_value_placeholder if mode == "hex" else encode_binary(options.placeholder_bytes, mode)
    # Debezium's base64 converters do not take its placeholder object: an unchanged TOAST value is null.
    extra = {"toast_null": True} if mode in ("base64", "base64-url-safe") else {}
    return ValueMapping(schema, convert, zero=encode_binary(b"", mode), toast=toast, extra=extra)


def _bits_to_bytes(text: str) -> str:
    """A bit string, most significant bit first -> base64 of its value's little-endian bytes."""
    if not set(text) <= _BIT_DIGITS:
        raise ConversionError(f"{text!r} is not a bit string")
    value = int(text, 2) if text else 0
    return base64.b64encode(value.to_bytes((value.bit_length() + 7) // 8, "little")).decode("ascii")


def _bit_boolean(text: str) -> bool:
    if text == "1":
        return True
    if text == "0":
        return False
    raise ConversionError(f"{text!r} is not a bit(1) value")


def _bits_mapping(column: ColumnType) -> ValueMapping:
    length = column.modifier
    if length == 1:
        return ValueMapping(boolean(), _bit_boolean, zero=False)
    if length < 0:
        length = 2147483647
    schema = bytes_(name=BITS_NAME, version=1).with_parameters({"length": str(length)})
    return ValueMapping(schema, _bits_to_bytes, zero=base64.b64encode(b"").decode("ascii"))


def _identity(text: str) -> str:
    return text


def map_text_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    name = column.name
    placeholder = options.placeholder_text
    if name in _STRING_TYPES:
        extra = {STREAMING_UNRESOLVED: True} if name == "name" else {}
        return ValueMapping(string(), _identity, zero="", toast=placeholder, extra=extra)
    schema_name = _NAMED_STRINGS.get(name)
    if schema_name is not None:
        # The NOT NULL fallback is the empty string for these too (not "{}" or the zero UUID).
        return ValueMapping(string(name=schema_name, version=1), _identity, zero="", toast=placeholder)
    if name == "bytea":
        return binary_mapping(decode_bytea, options)
    if name in ("bit", "varbit"):
        return _bits_mapping(column)
    if column.typtype == "e":
        schema = string(name=ENUM_NAME, version=1).with_parameters({"allowed": ",".join(column.enum_labels)})
        return ValueMapping(schema, _identity, zero="", toast=placeholder)
    return None


def unknown_mapping(options: MappingOptions) -> ValueMapping:
    """``include.unknown.datatypes``: the value's text as bytes, per ``binary.handling.mode``."""
    return binary_mapping(lambda text: text.encode("utf-8"), options)
