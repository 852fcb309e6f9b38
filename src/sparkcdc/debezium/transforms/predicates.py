"""Kafka Connect's predicates: ``TopicNameMatches``, ``HasHeaderKey``, ``RecordIsTombstone``."""

from __future__ import annotations

from ..records import ChangeRecord
from .base import Option, Options, Predicate
from .java_regex import compile_java_regex

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]


class TopicNameMatches(Predicate):
    """True for a record whose topic the ``pattern`` matches whole (Java's ``Matcher.matches``)."""

    OPTIONS = (Option("pattern", required=True),)

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._pattern = compile_java_regex(options.prefix + "pattern", options.text("pattern"))
        self._seen: dict[str, bool] = {}

    def test(self, record: ChangeRecord) -> bool:
        verdict = self._seen.get(record.topic)
        if verdict is None:
            verdict = self._pattern.fullmatch(record.topic) is not None
            if len(self._seen) < 100_000:
                self._seen[record.topic] = verdict
        return verdict


class HasHeaderKey(Predicate):
    """True for a record with at least one header called ``name`` (compared exactly, as Java does)."""

    OPTIONS = (Option("name", required=True, doc="the header name"),)

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._name = options.text("name").strip()
        if not self._name:
            raise options.error("name", "String must be non-empty")

    def test(self, record: ChangeRecord) -> bool:
        name = self._name
        return any(header.name == name for header in record.headers)


class RecordIsTombstone(Predicate):
    """True for a record whose value is null: a tombstone, and any record a transform left without
    a value (Kafka's test is the value alone, whatever its schema)."""

    def test(self, record: ChangeRecord) -> bool:
        return record.value is None
