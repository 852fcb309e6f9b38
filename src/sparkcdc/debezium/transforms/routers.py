"""Kafka Connect's routing transforms: ``RegexRouter``, ``TimestampRouter`` and ``Filter``."""

from __future__ import annotations

from ..records import ChangeRecord
from .base import Option, Options, Transform, copy_record
from .java_regex import compile_java_regex, java_replacement

__all__ = ["RegexRouter"]


class RegexRouter(Transform):
    """``org.apache.kafka.connect.transforms.RegexRouter``: a topic the regex matches whole is renamed
    to the replacement (``$1``, ``${name}``); other topics are left as they are."""

    OPTIONS = (Option("regex", required=True), Option("replacement", required=True))

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._regex = compile_java_regex(options.prefix + "regex", options.text("regex"))
        self._replace = java_replacement(options.prefix + "replacement", options.text("replacement"))
        self._topics: dict[str, str] = {}

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        topic = self._topics.get(record.topic)
        if topic is None:
            match = self._regex.fullmatch(record.topic)
            topic = record.topic if match is None else self._replace(match)
            if len(self._topics) < 100_000:
                self._topics[record.topic] = topic
        return record if topic == record.topic else copy_record(record, topic=topic)
