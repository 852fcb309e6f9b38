"""A table description as JSON text: how one version of a table's shape travels with its changes.

The reader that decodes a table's changes knows its shape at that point of the WAL (its Relation
message, completed from the catalog); the driver that applies them later cannot ask the catalog for
it, since the table may have changed since. So the ``changes`` layout carries each block's
:class:`~sparkcdc.debezium.table.TableDescription` as this text, and the driver builds the same
event schema from it (:class:`~sparkcdc.debezium.table.TableSchemaFactory` is pure).

:func:`description_digest` names a description: two blocks carry the same text exactly when their
digests are equal.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .table import ColumnDescription, TableDescription
from .types import ColumnType

__all__ = ["description_digest", "description_from_json", "description_json"]


def description_json(description: TableDescription) -> str:
    """The description as compact JSON text (stable: the same description, the same text)."""
    return orjson.dumps(_table(description)).decode()


def description_from_json(text: str) -> TableDescription:
    """The description :func:`description_json` wrote; ``ValueError`` naming what is malformed."""
    try:
        raw = orjson.loads(text)
        identity = raw.get("identity")
        return TableDescription(
            schema=str(raw["schema"]), name=str(raw["name"]),
            columns=tuple(_column_from(c) for c in raw["columns"]),
            primary_key=tuple(str(k) for k in raw["key"]),
            relation_id=int(raw.get("oid", 0)), replica_identity=str(raw.get("replica_identity", "")),
            identity_columns=None if identity is None else tuple(str(c) for c in identity),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a table description: {exc} in {text[:200]!r}") from exc


def description_digest(text: str) -> str:
    """A short name of a description's text."""
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _table(description: TableDescription) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": description.schema, "name": description.name, "columns": [_column(c) for c in description.columns],
        "key": list(description.primary_key), "oid": description.relation_id, "replica_identity": description.replica_identity,
    }
    if description.identity_columns is not None:
        out["identity"] = list(description.identity_columns)
    return out


def _column(column: ColumnDescription) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": column.name, "type": _type(column.type), "not_null": column.not_null, "default": column.default_expression,
        "position": column.position, "attnum": column.attnum, "declared": column.declared_type,
    }
    if column.has_missing:
        out["missing"] = [column.missing_value]  # a list: its one element may be null
    return out


def _column_from(raw: dict[str, Any]) -> ColumnDescription:
    missing = raw.get("missing")
    return ColumnDescription(
        name=str(raw["name"]), type=_type_from(raw["type"]), not_null=bool(raw["not_null"]), default_expression=raw.get("default"),
        position=int(raw["position"]), attnum=int(raw.get("attnum", 0)), declared_type=str(raw.get("declared", "")),
        has_missing=missing is not None, missing_value=None if missing is None else missing[0],
    )


def _type(column_type: ColumnType) -> dict[str, Any]:
    out: dict[str, Any] = {
        "oid": column_type.oid, "name": column_type.name, "namespace": column_type.namespace, "modifier": column_type.modifier,
        "declared": column_type.declared_name, "typtype": column_type.typtype, "category": column_type.category,
    }
    if column_type.enum_labels:
        out["enum"] = list(column_type.enum_labels)
    if column_type.element is not None:
        out["element"] = _type(column_type.element)
    return out


def _type_from(raw: dict[str, Any]) -> ColumnType:
    element = raw.get("element")
    return ColumnType(
        oid=int(raw["oid"]), name=str(raw["name"]), namespace=str(raw["namespace"]), modifier=int(raw["modifier"]),
        declared_name=str(raw["declared"]), typtype=str(raw["typtype"]), category=str(raw["category"]),
        enum_labels=tuple(str(label) for label in raw.get("enum", ())), element=None if element is None else _type_from(element),
    )
