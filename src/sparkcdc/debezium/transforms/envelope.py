"""Debezium's change event envelope as its transforms see it: which records have one, and how a
field of the envelope or of one of its blocks is reached and typed.

Debezium's record-state transforms (``ExtractNewRecordState``, ``ExtractChangedRecordState``,
``TimezoneConverter``) act on a record only when its value schema is an envelope, which Debezium
recognises by the schema name's ``.Envelope`` suffix; every other record (heartbeats, transaction
metadata, logical decoding messages, notifications, schema change records, tombstones) passes
through them untouched.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..connect import NO_DEFAULT, ConnectSchema

__all__ = ["BLOCKS", "FieldRef", "field_schema", "is_envelope", "null_markers", "optional_copy", "parse_field_refs"]

#: The envelope's struct-valued fields, whose own fields ``add.fields`` may name as ``<block>.<field>``.
BLOCKS = ("before", "after", "source", "transaction")


def is_envelope(schema: ConnectSchema | None) -> bool:
    """Debezium's ``Envelope.isEnvelopeSchema``: a struct schema named ``<...>.Envelope``."""
    return schema is not None and schema.type == "struct" and schema.name is not None and schema.name.endswith(".Envelope")


def field_schema(schema: ConnectSchema | None, name: str) -> ConnectSchema | None:
    """The schema of ``schema``'s field ``name``; None when there is no such field (or no struct)."""
    if schema is None or schema.type != "struct":
        return None
    for candidate in schema.fields:
        if candidate.name == name:
            return candidate.schema
    return None


def optional_copy(schema: ConnectSchema) -> ConnectSchema:
    """Connect's ``SchemaUtil.copySchemaBasics(schema).optional()``: type, name, version, doc and
    parameters kept, made optional, without the default (the added field may be absent)."""
    return replace(schema, optional=True, default=NO_DEFAULT, _json=None)


class FieldRef:
    """One entry of ``add.fields`` / ``add.headers``: ``[<block>.]<field>[:<new name>]``.

    A bare ``<field>`` is looked up as Debezium does: the envelope's own fields first (``op``,
    ``ts_ms``, ...), then the ``source`` block's, then the ``transaction`` block's; the first that has
    it wins (so ``ts_ms`` is the envelope's processing time, ``source.ts_ms`` the change's time).
    """

    __slots__ = ("block", "field", "name")

    def __init__(self, block: str | None, field: str, name: str) -> None:
        self.block = block
        self.field = field
        self.name = name

    def resolve(self, envelope: ConnectSchema) -> tuple[str | None, ConnectSchema] | None:
        """(block, the field's schema) in this envelope schema; None when the envelope has no
        such field (Debezium then adds nothing for this entry)."""
        if self.block is not None:
            found = field_schema(field_schema(envelope, self.block), self.field)
            return None if found is None else (self.block, found)
        own = field_schema(envelope, self.field)
        if own is not None:
            return None, own
        for block in ("source", "transaction"):
            found = field_schema(field_schema(envelope, block), self.field)
            if found is not None:
                return block, found
        return None


def parse_field_refs(entries: list[str], prefix: str, error: Any) -> tuple[FieldRef, ...]:
    """The entries of ``add.fields`` or ``add.headers``, each named ``prefix`` + its new name, or
    ``prefix`` + ``<block>_<field>`` / ``<field>``. ``error(message)`` builds the configuration
    error naming the option.

    Refused here, although Debezium accepts them: entries that make Debezium fail on every record
    (a struct-valued field such as ``before``, whose schema the added field cannot take, or
    ``<x>.<field>`` where ``<x>`` is not one of the envelope's blocks)."""
    refs: list[FieldRef] = []
    for entry in entries:
        path, _, new_name = entry.partition(":")
        parts = path.strip().split(".")
        if not parts[0]:
            continue  # ":x": Debezium adds nothing for it
        if len(parts) == 1:
            if parts[0] in BLOCKS:
                raise error(f"{entry!r} names the envelope's struct {parts[0]!r}; a whole struct cannot be added "
                            "(Debezium fails on every record whose struct is not null); name one of its fields, "
                            f"e.g. {parts[0]}.<field>")
            block, field = None, parts[0]
        else:
            if parts[0] not in BLOCKS:
                raise error(f"{entry!r}: {parts[0]!r} is not one of the envelope's blocks ({', '.join(BLOCKS)}); "
                            "Debezium fails on every record with it")
            block, field = parts[0], parts[1]  # as Debezium, anything after <block>.<field> is ignored
        default_name = field if block is None else f"{block}_{field}"
        refs.append(FieldRef(block, field, prefix + (new_name.strip() or default_name)))
    return tuple(refs)


def _told_apart(value: Any) -> bool:
    """Whether a value object is never shared with a converted value that equals it: CPython
    shares ``True``/``False``, small integers and one-character strings, and REAL's converter
    caches its floats (so floats are left out)."""
    if value is None or isinstance(value, (bool, float)):
        return False
    if isinstance(value, int):
        return not -5 <= value <= 256
    if isinstance(value, str):
        return len(value) > 1
    return isinstance(value, (dict, list))


def null_markers(table_schema: Any, row: ConnectSchema | None) -> dict[str, Any]:
    """The columns of ``row`` whose NULL sparkcdc's row payloads carry as the column's default,
    each mapped to that default's very object.

    Debezium's row holds a null there, and JsonConverter writes it as the default, so the JSON is
    the same; but a transform that compares or copies the value itself (``ExtractChangedRecordState``,
    ``add.fields=before.<column>``) sees Debezium's null. sparkcdc's row builder puts the same
    default object in every NULL's place, so a value that *is* that object was a NULL, except
    where the object may be shared with equal values anyway (booleans, integers from -5 to 256,
    one-character strings, floats): those defaults are left out, and such a NULL reads as its default.
    ``table_schema`` is the record's ``TableSchema`` (None for records sparkcdc's connector did not
    make: no markers)."""
    plans = getattr(table_schema, "value_fields", None)
    if not plans or row is None:
        return {}
    defaults = {f.name: f.schema.default for f in row.fields if f.schema.has_default and f.schema.default is not None}
    return {plan.name: plan.null_value for plan in plans
            if plan.name in defaults and plan.null_value == defaults[plan.name] and _told_apart(plan.null_value)}
