"""The outbox router's ``table.expand.json.payload``: a JSON text made into a Connect value whose
schema is inferred from the document itself, as Debezium 3.6.3 infers it.

What Debezium does, seen record by record through the oracle (and so what this does):

* Only a text that starts with ``{`` or ``[`` (no leading blank, no byte order mark) is parsed,
  strictly (no comments, no ``NaN``, no leading zeros); the first JSON value is read and anything
  after it ignored. A text that cannot be read stays as it is (Debezium logs a warning).
* An object becomes an optional struct named after the payload column (``payload``), each nested
  object a struct named by its path (``payload.lines``); its fields are the object's keys in order
  (a repeated key: the first one's place, the last one's value). A key whose value is null, or an
  empty array, is left out of schema and value, unless
  ``table.json.payload.null.behavior=optional_bytes``, which types a null as optional bytes.
* Numbers are typed by their size: ``int32``, then ``int64``; a decimal is a ``double``. An integer
  beyond ``int64`` is typed ``double`` but its value does not fit the schema.
* An array takes its items' schema from its non-null items, which must all be of one JSON kind (and,
  for numbers, of one number type), else the text stays as it is. Objects of different shapes are
  merged into one required struct with every field; an array of arrays takes its first array's
  schema (a struct directly in it has no name, and its nested structs are named from their key on). An array of nulls only stays text (optional bytes items with
  ``optional_bytes``).
* Where the inferred schema does not fit the values (an integer beyond ``int64``, an array's arrays
  of different item types, a top-level array) Debezium emits the new schema with the old text,
  which its JsonConverter refuses: the connector stops. :class:`Unfit` says so here.
* A top-level empty array gets no schema at all: the record's value stays the text, with a null
  schema (``{"schema":null,"payload":"[]"}``).

Where Debezium is not deterministic sparkcdc picks one answer: Debezium merges the shapes of an
array's objects in the order of a Java hash set of their schemas, which changes from one JVM run to
the next (the field order of the merged struct, and which type a field seen with two types keeps).
sparkcdc merges them in array order, a field keeping the first type it was seen with (a null typed
as optional bytes gives way to a real type).
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from ...errors import PipelineError
from ..connect import ConnectSchema, array, boolean, bytes_, float64, int32, int64, string, struct
from .java_numbers import double_json

__all__ = ["NotExpanded", "SchemaInterner", "Unfit", "expand_json"]

_INT32: Final = (-(1 << 31), (1 << 31) - 1)
_INT64: Final = (-(1 << 63), (1 << 63) - 1)

_BOOLEAN: Final = boolean(optional=True)
_INT32_SCHEMA: Final = int32(optional=True)
_INT64_SCHEMA: Final = int64(optional=True)
_DOUBLE: Final = float64(optional=True)
_STRING: Final = string(optional=True)
_NULL_BYTES: Final = bytes_(optional=True)


class NotExpanded(PipelineError):
    """The text is not JSON Debezium expands: the payload stays as it is (Debezium logs a warning)."""


class Unfit(PipelineError):
    """The inferred schema does not fit the document's values: Debezium's record carries the schema
    with the unchanged text, and its converter stops the connector on it."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard token {name!r}")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def _parse(text: str) -> Any:
    if not text:
        raise NotExpanded("the payload is empty")
    if text[0] not in "{[":
        raise NotExpanded(f"the payload starts with {text[0]!r}, not with {{ or [")
    try:
        return _DECODER.raw_decode(text)[0]
    except (ValueError, RecursionError) as exc:
        raise NotExpanded(f"the payload is not valid JSON: {exc}") from None


def expand_json(text: str, name: str, nulls_as_bytes: bool) -> tuple[ConnectSchema | None, Any]:
    """(schema, value) of the expanded payload ``text``; ``name`` is the payload column's name
    (the struct's). Raises :class:`NotExpanded` or :class:`Unfit` (see the module's docstring)."""
    document = _parse(text)
    schema = _schema(document, name, nulls_as_bytes)
    if schema is None:  # a top-level empty array
        return None, text
    if schema.type != "struct":
        raise Unfit("the payload is a JSON array: Debezium gives it an array schema but keeps the text as its value")
    return schema, _value(document, schema, "the payload")


def _number_type(value: int | float) -> str:
    if isinstance(value, float):
        return "double"
    if _INT32[0] <= value <= _INT32[1]:
        return "int32"
    return "int64" if _INT64[0] <= value <= _INT64[1] else "big"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _schema(node: Any, name: str | None, nulls_as_bytes: bool) -> ConnectSchema | None:
    """The schema Debezium infers for ``node`` (a parsed JSON value); None for what it leaves out."""
    if node is None:
        return _NULL_BYTES if nulls_as_bytes else None
    if isinstance(node, bool):
        return _BOOLEAN
    if isinstance(node, (int, float)):
        number = _number_type(node)
        return _INT32_SCHEMA if number == "int32" else _INT64_SCHEMA if number == "int64" else _DOUBLE
    if isinstance(node, str):
        return _STRING
    if isinstance(node, dict):
        fields = []
        for key, value in node.items():
            if key == "":
                raise NotExpanded("an object has a key that is the empty string, which cannot name a field")
            child = _schema(value, key if name is None else f"{name}.{key}", nulls_as_bytes)
            if child is not None:
                fields.append((key, child))
        return struct(fields, optional=True, name=name)
    return _array_schema(node, name, nulls_as_bytes)


def _array_schema(node: list[Any], name: str | None, nulls_as_bytes: bool) -> ConnectSchema | None:
    if not node:
        return None
    items = [item for item in node if item is not None]
    if not items:
        if nulls_as_bytes:
            return array(_NULL_BYTES, optional=True)
        raise NotExpanded(f"the array {name or ''!r} holds only nulls: its items have no type")
    kinds = {_kind(item) for item in items}
    if len(kinds) > 1:
        raise NotExpanded(f"the array {name or ''!r} is not homogeneous: it holds {', '.join(sorted(kinds))}")
    kind = kinds.pop()
    if kind == "number":
        numbers = {_number_type(item) for item in items}
        if len(numbers) > 1:
            raise NotExpanded(f"the array {name or ''!r} is not homogeneous: it holds numbers of types "
                              f"{', '.join(sorted(numbers))}")
    if kind == "object":
        shapes: list[ConnectSchema] = []
        for item in items:
            shape = _schema(item, name, nulls_as_bytes)
            assert shape is not None
            if shape not in shapes:
                shapes.append(shape)
        item_schema = shapes[0] if len(shapes) == 1 else _merged(shapes, name)
    else:
        # An array of arrays: its first array's schema, unnamed (Debezium names no struct in it).
        item_schema = _schema(items[0], None if kind == "array" else name, nulls_as_bytes)  # type: ignore[assignment]
        if item_schema is None:
            raise NotExpanded(f"the array {name or ''!r} starts with an empty array: its items have no type")
    return array(item_schema, optional=True)


def _merged(shapes: list[ConnectSchema], name: str | None) -> ConnectSchema:
    """One required struct with the fields of every shape, in the order they are first seen."""
    fields: dict[str, ConnectSchema] = {}
    for shape in shapes:
        for candidate in shape.fields:
            seen = fields.get(candidate.name)
            if seen is None or (seen is _NULL_BYTES and candidate.schema is not _NULL_BYTES):
                fields[candidate.name] = candidate.schema
    return struct(fields.items(), optional=False, name=name)


def _value(node: Any, schema: ConnectSchema, where: str) -> Any:
    """``node`` as a JSON-ready value of ``schema``; :class:`Unfit` where Connect would refuse it."""
    if node is None:
        if not schema.optional:
            raise Unfit(f"{where} is null, but its inferred schema is required")
        return None
    kind = schema.type
    if kind == "struct":
        if not isinstance(node, dict):
            raise Unfit(f"{where} is {_kind(node)}, but its inferred schema is a struct")
        return {f.name: _value(node.get(f.name), f.schema, f"field {f.name!r}") for f in schema.fields}
    if kind == "array":
        if not isinstance(node, list):
            raise Unfit(f"{where} is {_kind(node)}, but its inferred schema is an array")
        items = schema.items
        assert items is not None
        return [_value(item, items, f"an item of {where}") for item in node]
    if isinstance(node, bool):
        fits = kind == "boolean"
    elif isinstance(node, (int, float)):
        fits = kind == {"int32": "int32", "int64": "int64", "double": "double"}.get(_number_type(node))
    else:
        fits = isinstance(node, str) and kind == "string"
    if not fits:
        raise Unfit(f"{where} is {json.dumps(node)[:60]}, which does not fit its inferred type {kind}")
    if isinstance(node, float) and not math.isfinite(node):
        return double_json(node)
    return node


class SchemaInterner:
    """One object per distinct inferred schema (bounded): equal schemas are the same object, so a
    serializer renders each schema once and memory does not grow with the records."""

    __slots__ = ("_limit", "_seen")

    def __init__(self, limit: int = 4096) -> None:
        self._seen: dict[ConnectSchema, ConnectSchema] = {}
        self._limit = limit

    def __call__(self, schema: ConnectSchema) -> ConnectSchema:
        seen = self._seen.get(schema)
        if seen is None:
            if len(self._seen) >= self._limit:
                self._seen.clear()
            self._seen[schema] = seen = schema
        return seen
