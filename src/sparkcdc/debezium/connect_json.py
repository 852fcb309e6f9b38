"""Connect schemas read back from the JSON JsonConverter writes (``schemas.enable=true``).

A record written by sparkcdc (topic files, Kafka) carries its schema; reading it back gives the
:class:`~.connect.ConnectSchema` the record was made with, from which a reader types the payload
(the outbox events' expanded payloads, whose schema was inferred record by record, have no other
description). The inverse of :meth:`ConnectSchema.to_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .connect import NO_DEFAULT, ConnectSchema, Field

__all__ = ["schema_from_json"]


def schema_from_json(node: Mapping[str, Any]) -> ConnectSchema:
    """The schema JsonConverter rendered as ``node`` (ValueError naming what is malformed)."""
    if not isinstance(node, Mapping) or not isinstance(node.get("type"), str):
        raise ValueError(f"not a Connect schema in JsonConverter's form: {str(node)[:200]}")
    kind = node["type"]
    fields: tuple[Field, ...] = ()
    items = keys = values = None
    if kind == "struct":
        fields = tuple(Field(str(child["field"]), schema_from_json(child)) for child in node.get("fields", ()))
    elif kind == "array":
        items = schema_from_json(node["items"])
    elif kind == "map":
        keys, values = schema_from_json(node["keys"]), schema_from_json(node["values"])
    parameters = node.get("parameters")
    return ConnectSchema(
        kind,
        optional=bool(node.get("optional", False)),
        name=node.get("name"),
        version=node.get("version"),
        doc=node.get("doc"),
        parameters=tuple((str(k), str(v)) for k, v in parameters.items()) if parameters else None,
        default=node["default"] if "default" in node else NO_DEFAULT,
        fields=fields,
        items=items,
        keys=keys,
        values=values,
    )
