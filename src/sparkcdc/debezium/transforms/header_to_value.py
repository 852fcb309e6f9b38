"""Debezium's ``HeaderToValue``: headers copied or moved into the record's value.

``headers`` and ``fields`` are two lists of the same length: the header ``headers[i]`` becomes the
field ``fields[i]`` of the value (``a.b`` names the field ``b`` of the struct field ``a``), appended
to its struct with the header's schema, or replacing the value of a field the struct already has;
``operation=move`` also removes the header (every header of that name), ``copy`` keeps it.

As Debezium 3.6.3 does it (tests/conformance/test_transforms_debezium_conformance.py): records
without a struct value (tombstones) and records with none of the headers pass untouched; a header a
record lacks adds nothing. Debezium decides the new schema once per value schema, from the first
record that has any of the headers, and uses it for every later record of that schema; sparkcdc does
the same, and fails the record where Debezium's converter or ``Struct.put`` would fail it (a header
that record did not have set a required field, or a later record has a header the first did not).
Unlike Debezium's other transforms, it works on a copy of the record's headers: the tombstone after
a delete keeps the headers moved off the delete (compare :mod:`.shared_headers`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..connect import ConnectSchema, Field
from ..records import ChangeRecord, Header
from .base import Option, Options, Transform, copy_record

__all__ = ["HeaderToValue"]


class _Shape:
    """The value schema a record's headers made, for every record of one value schema."""

    __slots__ = ("fields", "original", "schema")

    def __init__(self, original: ConnectSchema, schema: ConnectSchema, fields: dict[str, ConnectSchema]) -> None:
        self.original = original
        self.schema = schema
        #: field path -> its schema in ``schema``, for each configured field the schema has
        self.fields = fields


def _with_field(struct: ConnectSchema, path: list[str], schema: ConnectSchema, where: str) -> tuple[ConnectSchema, ConnectSchema]:
    """``struct`` with the field at ``path`` added (appended to its struct), or kept if it exists;
    and the schema the field has there."""
    name = path[0]
    existing = next((f for f in struct.fields if f.name == name), None)
    if len(path) == 1:
        if existing is not None:
            return struct, existing.schema
        return replace(struct, fields=(*struct.fields, Field(name, schema)), _json=None), schema
    if existing is None or existing.schema.type != "struct":
        raise ValueError(f"{where}: the value has no struct field {name!r} to put {'.'.join(path[1:])!r} in")
    inner, found = _with_field(existing.schema, path[1:], schema, where)
    fields = tuple(Field(f.name, inner) if f.name == name else f for f in struct.fields)
    return replace(struct, fields=fields, _json=None), found


def _put(value: dict[str, Any], path: list[str], item: Any, where: str) -> dict[str, Any]:
    """A copy of ``value`` with ``item`` at ``path`` (the dicts on the way copied, none changed)."""
    out = dict(value)
    if len(path) == 1:
        out[path[0]] = item
        return out
    inner = value.get(path[0])
    if not isinstance(inner, dict):
        raise ValueError(f"{where}: {path[0]!r} is null in this record, so {'.'.join(path[1:])!r} cannot be set")
    out[path[0]] = _put(inner, path[1:], item, where)
    return out


def _json_type_matches(schema: ConnectSchema, item: Any) -> bool:
    """Whether a JSON-ready value can be a value of ``schema`` (Connect's ``Struct.put`` check)."""
    if item is None:
        return True
    expected = {"string": str, "boolean": bool, "struct": dict, "array": list, "map": dict, "bytes": str,
                "float": (int, float), "double": (int, float)}.get(schema.type)
    if expected is None:  # the integer types
        return isinstance(item, int) and not isinstance(item, bool)
    return isinstance(item, expected)


class HeaderToValue(Transform):
    """``io.debezium.transforms.HeaderToValue``: see the module's docstring."""

    OPTIONS = (
        Option("headers", None, "list", required=True, doc="the headers to copy or move"),
        Option("fields", None, "list", required=True, doc="the value's fields they become, in the same order"),
        Option("operation", None, "enum", ("move", "copy"), required=True, doc="move removes the headers, copy keeps them"),
    )

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        headers, fields = options.list("headers"), options.list("fields")
        if len(headers) != len(fields):
            raise options.error("fields", f"must have as many elements as headers ({len(fields)} fields for {len(headers)} headers)")
        self.pairs = tuple(zip(headers, fields, strict=True))
        self.paths = {field: field.split(".") for field in fields}
        self.move = options.enum("operation") == "move"
        self._moved = frozenset(headers) if self.move else frozenset()
        self._shapes: dict[int, _Shape] = {}

    def _shape(self, schema: ConnectSchema, present: dict[str, Header], record: ChangeRecord) -> _Shape:
        shape = self._shapes.get(id(schema))
        if shape is not None and shape.original is schema:
            return shape
        new, typed = schema, {}
        for name, field in self.pairs:
            header = present.get(name)
            if header is None or header.schema is None:
                continue
            try:
                new, typed[field] = _with_field(new, self.paths[field], header.schema, f"fields: {field}")
            except ValueError as problem:
                raise self.fail(record, str(problem)) from None
        if len(self._shapes) > 1024:
            self._shapes.clear()
        shape = self._shapes[id(schema)] = _Shape(schema, new, typed)
        return shape

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = record.value, record.value_schema
        if value is None or schema is None or schema.type != "struct" or not isinstance(value, dict):
            return record
        present: dict[str, Header] = {}
        for header in record.headers:
            present[header.name] = header  # the last of a name wins (Connect's lastWithName)
        if not any(name in present for name, _ in self.pairs):
            return record
        shape = self._shape(schema, present, record)
        out = value
        for name, field in self.pairs:
            header = present.get(name)
            field_schema = shape.fields.get(field)
            if header is None:
                if field_schema is not None and not field_schema.optional and not field_schema.has_default:
                    raise self.fail(record, f"header {name!r} is missing, and the field {field!r} it fills (decided by the first "
                                            "record of this schema that had it) is required: Conversion error: null value for "
                                            "field that is required and has no default value")
                continue
            if field_schema is None:
                raise self.fail(record, f"{field} is not a valid field name (the first record of this schema with any of "
                                        f"headers {', '.join(n for n, _ in self.pairs)} did not have {name!r})")
            if not _json_type_matches(field_schema, header.value):
                raise self.fail(record, f"header {name!r} cannot fill the field {field!r} of type {field_schema.type}")
            try:
                out = _put(out, self.paths[field], header.value, f"fields: {field}")
            except ValueError as problem:
                raise self.fail(record, str(problem)) from None
        headers = tuple(h for h in record.headers if h.name not in self._moved) if self.move else record.headers
        return copy_record(record, value=out, value_schema=shape.schema, headers=headers)
