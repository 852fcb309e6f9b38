"""PostgreSQL arrays: Connect ``array`` schemas, array text parsing, TOAST placeholders.

Debezium 3.6's rules, checked against the real connector (3.6.3, pgoutput):

* Element types Debezium lists explicitly (:data:`OPTIONAL_ITEM_ELEMENTS`) give an array of the
  element schema made optional. Any other element type goes through Debezium's generic path, whose
  element schema stays *required* (``items.optional = false``): enums, ``tsvector``, and unknown
  element types. Because the items are required, one NULL element there makes Debezium's value
  fail validation and the whole column becomes null; that is reproduced.
* ``money[]``, ``name[]``, ``interval[]``, ``varbit[]``, ``xml[]``, ``point[]``, ``refcursor[]``
  have no mapping at all: the column is left out, whatever ``include.unknown.datatypes`` says.
* Arrays of a *domain* are unknown to Debezium (it looks the element up by the domain's own type):
  left out, or with ``include.unknown.datatypes`` an array of required bytes of each element's text.
* ``bit(n)[]`` gets the scalar ``bit(n)`` schema (``Bits`` or boolean, not an array) and every
  value is null (Debezium's array value fails that schema). Reproduced, oddity and all.
* Multi-dimensional arrays: Debezium hands each top-level sub-array to the element converter as
  one element; it converts to null for most element types (``{{1,2},{3,4}}`` -> ``[null,null]``)
  and to an unreproducible ``[Ljava.lang.String;@1a2b3c`` for string-like ones. Here every
  top-level sub-array becomes null (and, as above, a null in required items nulls the column).
* ``numeric[]`` holding ``NaN`` or ``±Infinity`` is null as a whole (pgjdbc cannot read it), and so
  is ``ltree[]`` holding a NULL element (Debezium's converter calls ``toString()`` on each element).
* Temporal elements are pgjdbc's ``java.sql`` objects (in the snapshot and in streaming): ``±infinity``
  in ``date[]``, ``-infinity`` in ``timestamptz[]``, BC and pre-1582 dates, and TIME fractions all
  differ from the scalar columns; see ``temporal.jdbc_array_element``.
* ``sparsevec[]`` (pgvector): Debezium's element structs do not match the array's (required) items
  schema, so every array holding an element is null; an empty array stays ``[]``.
* Unchanged TOAST: text/varchar/bpchar/json/jsonb arrays -> ``[placeholder]``; int4/date arrays
  and int8 arrays -> the placeholder's bytes as signed numbers; bytea arrays -> ``[placeholder
  bytes]`` in ``binary.handling.mode=bytes`` (null in the string modes: Debezium's byte[] does not
  fit the string items); uuid arrays -> ``[UUID.nameUUIDFromBytes(placeholder)]``; every other
  array -> null (signalled by ``extra["toast_null"]``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any

from ..connect import ConnectSchema, array
from .base import ColumnType, ConversionError, MappingOptions, ValueMapping
from .temporal import jdbc_array_element
from .text import encode_binary, unknown_mapping

__all__ = [
    "OPTIONAL_ITEM_ELEMENTS",
    "SUBARRAY",
    "UNSUPPORTED_ELEMENTS",
    "map_array_type",
    "name_uuid_from_bytes",
    "parse_array",
]

#: Element types of Debezium's explicitly mapped arrays (their element schema is optional).
OPTIONAL_ITEM_ELEMENTS = frozenset({
    "int2", "int4", "int8", "oid", "char", "varchar", "text", "bpchar", "inet", "cidr", "macaddr", "macaddr8",
    "tsrange", "tstzrange", "daterange", "int4range", "numrange", "int8range", "numeric", "float4", "float8",
    "bool", "date", "uuid", "json", "jsonb", "time", "timetz", "timestamp", "timestamptz", "bytea",
    "geometry", "geography", "citext", "hstore", "ltree",
})  # fmt: skip

#: Element types whose arrays Debezium never maps (the column is dropped).
UNSUPPORTED_ELEMENTS = frozenset({"money", "name", "interval", "varbit", "xml", "point", "refcursor"})

_TEXT_TOAST_ELEMENTS = frozenset({"text", "varchar", "bpchar", "json", "jsonb"})
_NUMBER_TOAST_ELEMENTS = frozenset({"int4", "date", "int8"})
_NUMERIC_SPECIALS = frozenset({"NaN", "Infinity", "-Infinity"})
# pg_type.typdelim where it is not ',' (core box; PostGIS geometry and geography).
_DELIMITERS = {"box": ";", "geometry": ":", "geography": ":"}


class _SubArray:
    """Marks a top-level element that is itself an array (multi-dimensional input)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SUBARRAY"


SUBARRAY = _SubArray()

# -- parsing array_out -------------------------------------------------------------------------------


def parse_array(text: str, delimiter: str = ",") -> list[str | None | _SubArray]:
    """PostgreSQL's array text -> its top-level elements.

    ``None`` is a NULL element; :data:`SUBARRAY` stands for a nested array (the element of a
    multi-dimensional array). Handles the ``[lower:upper]=`` prefix PostgreSQL writes for
    non-default bounds, quoted elements with backslash escapes, and ``delimiter`` (``;`` for box, ``:`` for PostGIS types).
    """
    if text[:1] == "[":
        equals = text.find("=")
        if equals < 0:
            raise ConversionError(f"{text[:80]!r} is not array text (bounds without '=')")
        text = text[equals + 1 :]
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        raise ConversionError(f"{text[:80]!r} is not array text")
    body = text[1:-1]
    if not body:
        return []
    if '"' not in body and "{" not in body:  # the common case: plain unquoted elements
        items = body.split(delimiter)
        if "" in items or "}" in body:
            raise ConversionError(f"{text[:80]!r} is not array text (empty or unbalanced element)")
        return [None if item == "NULL" else item for item in items]
    return _scan(text, body, delimiter)


def _scan(text: str, body: str, delimiter: str) -> list[str | None | _SubArray]:
    elements: list[str | None | _SubArray] = []
    position, end = 0, len(body)
    while True:
        first = body[position] if position < end else ""
        if first == '"':
            element, position = _quoted(text, body, position + 1)
            elements.append(element)
        elif first == "{":
            position = _skip_nested(text, body, position)
            elements.append(SUBARRAY)
        else:
            stop = body.find(delimiter, position)
            if stop < 0:
                stop = end
            token = body[position:stop]
            if not token or '"' in token or "{" in token or "}" in token:
                raise ConversionError(f"{text[:80]!r} is not array text (bad element at {position + 1})")
            elements.append(None if token == "NULL" else token)
            position = stop
        if position == end:
            return elements
        if body[position] != delimiter:
            raise ConversionError(f"{text[:80]!r} is not array text (expected {delimiter!r} at {position + 1})")
        position += 1


def _quoted(text: str, body: str, position: int) -> tuple[str, int]:
    """Reads a quoted element starting after its opening quote; returns it and the next position."""
    parts: list[str] = []
    while True:
        quote = body.find('"', position)
        if quote < 0:
            raise ConversionError(f"{text[:80]!r} is not array text (unterminated quoted element)")
        backslash = body.find("\\", position, quote)
        if backslash < 0:
            parts.append(body[position:quote])
            return "".join(parts), quote + 1
        parts.append(body[position:backslash])
        parts.append(body[backslash + 1 : backslash + 2])
        position = backslash + 2


def _skip_nested(text: str, body: str, position: int) -> int:
    """Skips the sub-array starting at ``position`` (a ``{``); returns the position after it."""
    depth, index, end = 0, position, len(body)
    while index < end:
        char = body[index]
        if char == '"':
            _, index = _quoted(text, body, index + 1)
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise ConversionError(f"{text[:80]!r} is not array text (unbalanced braces)")


# -- converters --------------------------------------------------------------------------------------

def _array_converter(
    element_name: str, convert_element: Callable[[str], Any], delimiter: str, items_optional: bool, numeric: bool
) -> Callable[[str], list[Any] | None]:
    null_element_fails = element_name == "ltree"

    """text -> list of converted elements (NULLs and sub-arrays -> None), per Debezium's rules.

    ``numeric``: pgjdbc reads the elements as BigDecimal, so NaN/Infinity make the value null.
    """

    def convert(text: str) -> list[Any] | None:
        elements = parse_array(text, delimiter)
        if numeric and not _NUMERIC_SPECIALS.isdisjoint(elements):
            return None  # pgjdbc cannot read NaN/Infinity into BigDecimal: Debezium's value is null
        try:
            values = [convert_element(e) if isinstance(e, str) else None for e in elements]
        except ConversionError as error:
            raise type(error)(f"array of {element_name} {text[:80]!r}: {error}") from None
        if None in values and (not items_optional or null_element_fails):
            # A null in required items fails Debezium's validation; ltree's array converter calls
            # toString() on every element. Either way the column is null.
            return None
        return values

    return convert


def _always_null(text: str) -> None:
    return None


def _empty_or_null(convert: Callable[[str], list[Any] | None]) -> Callable[[str], list[Any] | None]:
    """An array whose elements Debezium cannot put in its value: ``[]`` when empty, else null."""

    def empty_or_null(text: str) -> list[Any] | None:
        return [] if convert(text) == [] else None

    return empty_or_null


def name_uuid_from_bytes(data: bytes) -> str:
    """Java's ``UUID.nameUUIDFromBytes``: MD5 of the bytes, stamped as a version 3 UUID."""
    return str(uuid.UUID(bytes=hashlib.md5(data).digest(), version=3))


def _toast(element_name: str, options: MappingOptions) -> Any:
    """The array value of an unchanged TOAST column, or ``None`` when Debezium emits null."""
    placeholder = options.placeholder_bytes
    if element_name in _TEXT_TOAST_ELEMENTS:
        return [placeholder.decode("utf-8", errors="replace")]
    if element_name in _NUMBER_TOAST_ELEMENTS:
        return [b - 256 if b > 127 else b for b in placeholder]  # Java bytes are signed
    if element_name == "bytea":
        return [encode_binary(placeholder, "bytes")] if options.binary_handling_mode == "bytes" else None
    if element_name == "uuid":
        return [name_uuid_from_bytes(placeholder)]
    return None


def _element_mapping(
    element: ColumnType, options: MappingOptions, map_element: Callable[[ColumnType], ValueMapping | None]
) -> ValueMapping | None:
    if element.declared_name != element.name:
        # A domain element: Debezium resolves it as the domain's own (unknown) type.
        return unknown_mapping(options) if options.include_unknown_datatypes else None
    return map_element(element)


def _bit_array_mapping(element_mapping: ValueMapping) -> ValueMapping:
    """``bit(n)[]``: Debezium declares the scalar bit schema and every value ends up null."""
    return ValueMapping(element_mapping.schema, _always_null, zero=None, extra={"toast_null": True})


def map_array_type(
    column: ColumnType, options: MappingOptions, map_element: Callable[[ColumnType], ValueMapping | None]
) -> ValueMapping | None:
    element = column.element
    if element is None or element.name in UNSUPPORTED_ELEMENTS:
        return None
    element_mapping = _element_mapping(element, options, map_element)
    if element_mapping is None:
        return None
    if element.name == "bit" and element.declared_name == element.name:
        return _bit_array_mapping(element_mapping)
    is_domain = element.declared_name != element.name
    items_optional = element.name in OPTIONAL_ITEM_ELEMENTS and not is_domain
    items: ConnectSchema = element_mapping.schema.as_optional(items_optional)
    delimiter = _DELIMITERS.get(element.name, ",")
    # Temporal elements are java.sql objects in Debezium (PgArray.getArray()), see temporal.jdbc_array_element.
    convert_element = (None if is_domain else jdbc_array_element(element, options)) or element_mapping.convert
    numeric = element.name == "numeric" and not is_domain
    convert = _array_converter(element.declared_name, convert_element, delimiter, items_optional, numeric)
    if element.name == "sparsevec" and not is_domain:
        convert = _empty_or_null(convert)
    toast = None if is_domain else _toast(element.name, options)
    extra = {"toast_null": True} if toast is None else {}
    return ValueMapping(array(items), convert, zero=[], toast=toast, extra=extra)
