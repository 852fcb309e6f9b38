"""Debezium's ``ByLogicalTableRouter`` (``transforms.<alias>.type=io.debezium.transforms.ByLogicalTableRouter``):
the records of several physical tables (shards, partitions) sent to one logical table's topic.

What it does, as Debezium 3.6.3 does it (each point checked against it, tests/conformance/
test_transforms_routing_conformance.py):

* A record whose topic ``topic.regex`` matches whole goes to ``topic.replacement`` (``$1``,
  ``${name}``); other records pass untouched.
* Its key, when the key is a struct, becomes a struct named ``<new topic>.Key`` (version, doc and
  parameters kept) with the key's fields and, while ``key.enforce.uniqueness`` is true (the
  default), a required string field ``key.field.name`` (``__dbz__physicalTableIdentifier``) holding
  the original topic, or ``key.field.replacement`` applied to it when ``key.field.regex`` matches it
  whole. A null key (a table without a primary key, a truncate) stays null; a tombstone's key is
  rewritten as its delete's.
* A change event's value (an envelope) is renamed ``<new topic>.Envelope``, its ``before``/``after``
  rows ``<new topic>.Value``; the values themselves and every other record's value are unchanged.
* The new schema names are adjusted by ``schema.name.adjustment.mode`` (``none`` by default; ``avro``
  or ``avro_unicode`` as the connector's option of the same name); the topic is not.

``logical.table.cache.size`` bounds the schemas kept per logical table (Debezium's LRU cache: it
changes no record). Compiled per schema: a key or value schema is rewritten once per (schema,
topic), per record only the key's dict gains its field.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..connect import ConnectSchema, Field, string
from ..names import NameAdjuster
from ..records import ChangeRecord
from .base import Option, Options, Transform, copy_record
from .envelope import is_envelope
from .java_regex import compile_java_regex, java_replacement

__all__ = ["ByLogicalTableRouter"]

_PHYSICAL_ID: Any = string()  # the added key field's schema: a required string


class _Lru:
    """A bounded cache that forgets the least recently used entry (Debezium's ``LRUCache``)."""

    __slots__ = ("_entries", "_limit")

    def __init__(self, limit: int) -> None:
        self._entries: dict[Any, Any] = {}
        self._limit = max(limit, 1)

    def get(self, key: Any) -> Any:
        value = self._entries.pop(key, None)
        if value is not None:
            self._entries[key] = value
        return value

    def put(self, key: Any, value: Any) -> None:
        self._entries[key] = value
        if len(self._entries) > self._limit:
            del self._entries[next(iter(self._entries))]


class ByLogicalTableRouter(Transform):
    """``io.debezium.transforms.ByLogicalTableRouter`` (see the module's docstring)."""

    OPTIONS = (
        Option("topic.regex", required=True),
        Option("topic.replacement", required=True),
        Option("key.enforce.uniqueness", "true", kind="bool"),
        Option("key.field.name", "__dbz__physicalTableIdentifier"),
        Option("key.field.regex"),
        Option("key.field.replacement"),
        Option("schema.name.adjustment.mode", "none", kind="enum", choices=("none", "avro", "avro_unicode")),
        Option("logical.table.cache.size", "16", kind="int"),
    )

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        prefix = options.prefix
        self._topic_regex = compile_java_regex(prefix + "topic.regex", options.text("topic.regex"))
        self._topic_replace = java_replacement(prefix + "topic.replacement", options.text("topic.replacement"))
        self._unique = options.bool("key.enforce.uniqueness")
        self._key_field = options.text("key.field.name")
        if self._unique and not self._key_field.strip():
            raise options.error("key.field.name", "is empty: name the key field that tells the physical tables apart "
                                "(Debezium fails on every routed record without one)")
        key_regex = options.raw("key.field.regex")
        if key_regex and not options.raw("key.field.replacement"):
            raise options.error("key.field.replacement", "is required with key.field.regex: the value of the key field in "
                                "terms of the regex's groups")
        self._key_regex = compile_java_regex(prefix + "key.field.regex", key_regex) if key_regex else None
        self._key_replace = (java_replacement(prefix + "key.field.replacement", options.text("key.field.replacement"))
                             if key_regex else None)
        if options.given("key.field.replacement") and not key_regex:
            options.warn("key.field.replacement", "has no effect without key.field.regex (as in Debezium): the key field "
                         "holds the original topic")
        size = options.int("logical.table.cache.size")
        if size < 0:
            raise options.error("logical.table.cache.size", f"{size} is negative")
        self._adjust = NameAdjuster(options.enum("schema.name.adjustment.mode"), allow_dots=True)
        self._topics: dict[str, tuple[str | None, str]] = {}  # original topic -> (new topic or None, physical id)
        self._keys = _Lru(size)  # (key schema, new topic) -> new key schema
        self._values = _Lru(size)  # (value schema, new topic) -> new value schema

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        routed = self._topics.get(record.topic)
        if routed is None:
            routed = self._route(record.topic)
        topic, physical = routed
        if topic is None:
            return record
        key, key_schema = record.key, record.key_schema
        if key_schema is not None and key_schema.type == "struct" and isinstance(key, dict):
            key_schema = self._key_schema(record, key_schema, topic)
            if self._unique:
                key = {**key, self._key_field: physical}
        value_schema = record.value_schema
        if record.value is not None and is_envelope(value_schema):
            value_schema = self._value_schema(value_schema, topic)  # type: ignore[arg-type]
        return copy_record(record, topic=topic, key=key, key_schema=key_schema, value_schema=value_schema)

    def _route(self, topic: str) -> tuple[str | None, str]:
        match = self._topic_regex.fullmatch(topic)
        if match is None:
            routed: tuple[str | None, str] = (None, topic)
        else:
            physical = topic
            if self._key_regex is not None and self._key_replace is not None:
                key_match = self._key_regex.fullmatch(topic)
                if key_match is not None:
                    physical = self._key_replace(key_match)
            routed = (self._topic_replace(match), physical)
        if len(self._topics) < 100_000:
            self._topics[topic] = routed
        return routed

    def _key_schema(self, record: ChangeRecord, schema: ConnectSchema, topic: str) -> ConnectSchema:
        cache_key = (id(schema), topic)
        cached = self._keys.get(cache_key)
        if cached is None or cached[0] is not schema:
            fields = schema.fields
            if self._unique:
                if any(f.name == self._key_field for f in fields):
                    raise self.fail(record, f"key.field.name: the key of topic {record.topic!r} has a field "
                                            f"{self._key_field!r} already (Debezium stops on it): choose another name")
                fields = (*fields, Field(self._key_field, _PHYSICAL_ID))
            new = replace(schema, name=self._adjust(f"{topic}.Key"), fields=fields, _json=None)
            cached = (schema, new)
            self._keys.put(cache_key, cached)
        return cached[1]  # type: ignore[no-any-return]

    def _value_schema(self, schema: ConnectSchema, topic: str) -> ConnectSchema:
        cache_key = (id(schema), topic)
        cached = self._values.get(cache_key)
        if cached is None or cached[0] is not schema:
            row_name = self._adjust(f"{topic}.Value")
            fields = tuple(Field(f.name, replace(f.schema, name=row_name, _json=None)) if f.name in ("before", "after")
                           and f.schema.type == "struct" else f for f in schema.fields)
            cached = (schema, replace(schema, name=self._adjust(f"{topic}.Envelope"), fields=fields, _json=None))
            self._values.put(cache_key, cached)
        return cached[1]  # type: ignore[no-any-return]
