"""Kafka Connect's predicates: ``TopicNameMatches``, ``HasHeaderKey``, ``RecordIsTombstone``."""

from __future__ import annotations

from ..records import ChangeRecord
from .base import Option, Options, Predicate
from .java_regex import compile_java_regex

__all__ = ["TopicNameMatches"]


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
