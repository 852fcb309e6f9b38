"""Kafka Connect schemas, rendered exactly as Kafka's JsonConverter renders them.

Debezium events are Connect records; consumers see their schemas through JsonConverter. So the
model here is Connect's (type, optional, name, version, doc, parameters, default, fields / items /
keys+values) and :meth:`ConnectSchema.to_json` emits JsonConverter's key order:
``type, fields|items|keys+values, optional, name, version, doc, parameters, default, field``.

Payload values are kept "JSON-ready" (bytes already base64, decimals already encoded) by the
converters that produce them, so a schema's ``default`` is stored JSON-ready too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

__all__ = [
    "NO_DEFAULT",
    "ConnectSchema",
    "Field",
    "array",
    "boolean",
    "bytes_",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "map_",
    "string",
    "struct",
]


class _NoDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: Marks a schema without a default (``None`` is a legitimate JSON default: null).
NO_DEFAULT: Final = _NoDefault()

# Connect's FLOAT32/FLOAT64 are spelled "float"/"double" by JsonConverter; we use its spelling.
PRIMITIVE_TYPES = frozenset({"int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes"})


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    schema: ConnectSchema


@dataclass(frozen=True, slots=True)
class ConnectSchema:
    """An immutable Connect schema. ``parameters`` keeps insertion order, as Connect does."""

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: tuple[tuple[str, str], ...] | None = None
    default: Any = NO_DEFAULT
    fields: tuple[Field, ...] = ()
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None
    _json: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    # -- derivation ------------------------------------------------------------------------------
    def as_optional(self, optional: bool = True) -> ConnectSchema:
        return self if self.optional == optional else replace(self, optional=optional, _json=None)

    def with_default(self, default: Any) -> ConnectSchema:
        return replace(self, default=default, _json=None)

    def with_parameters(self, parameters: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> ConnectSchema:
        items = tuple(parameters.items()) if isinstance(parameters, Mapping) else (tuple(parameters) if parameters else None)
        return replace(self, parameters=items or None, _json=None)

    def add_parameters(self, parameters: Mapping[str, str]) -> ConnectSchema:
        merged = dict(self.parameters or ())
        merged.update(parameters)
        return replace(self, parameters=tuple(merged.items()), _json=None)

    def with_name(self, name: str | None, version: int | None = None) -> ConnectSchema:
        return replace(self, name=name, version=version, _json=None)

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def field(self, name: str) -> Field:
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    # -- JsonConverter rendering -----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The schema as JsonConverter renders it (cached; treat the result as read-only)."""
        cached = self._json
        if cached is None:
            cached = self._render()
            object.__setattr__(self, "_json", cached)
        return cached

    def _render(self) -> dict[str, Any]:
        node: dict[str, Any] = {"type": self.type}
        if self.type == "struct":
            node["fields"] = [{**f.schema.to_json(), "field": f.name} for f in self.fields]
        elif self.type == "array":
            assert self.items is not None
            node["items"] = self.items.to_json()
        elif self.type == "map":
            assert self.keys is not None and self.values is not None
            node["keys"] = self.keys.to_json()
            node["values"] = self.values.to_json()
        node["optional"] = self.optional
        if self.name is not None:
            node["name"] = self.name
        if self.version is not None:
            node["version"] = self.version
        if self.doc is not None:
            node["doc"] = self.doc
        if self.parameters is not None:
            node["parameters"] = dict(self.parameters)
        if self.default is not NO_DEFAULT and self.default is not None:
            node["default"] = self.default
        return node


def _primitive(type_: str, optional: bool, name: str | None, version: int | None) -> ConnectSchema:
    return ConnectSchema(type_, optional=optional, name=name, version=version)


def int8(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("int8", optional, name, version)


def int16(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("int16", optional, name, version)


def int32(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("int32", optional, name, version)


def int64(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("int64", optional, name, version)


def float32(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("float", optional, name, version)


def float64(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("double", optional, name, version)


def boolean(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("boolean", optional, name, version)


def string(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("string", optional, name, version)


def bytes_(optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return _primitive("bytes", optional, name, version)


def struct(
    fields: Iterable[tuple[str, ConnectSchema] | Field],
    *,
    optional: bool = False,
    name: str | None = None,
    version: int | None = None,
    doc: str | None = None,
) -> ConnectSchema:
    built = tuple(f if isinstance(f, Field) else Field(f[0], f[1]) for f in fields)
    return ConnectSchema("struct", optional=optional, name=name, version=version, doc=doc, fields=built)


def array(items: ConnectSchema, *, optional: bool = False, name: str | None = None, version: int | None = None) -> ConnectSchema:
    return ConnectSchema("array", optional=optional, name=name, version=version, items=items)


def map_(keys: ConnectSchema, values: ConnectSchema, *, optional: bool = False, name: str | None = None) -> ConnectSchema:
    return ConnectSchema("map", optional=optional, name=name, keys=keys, values=values)
