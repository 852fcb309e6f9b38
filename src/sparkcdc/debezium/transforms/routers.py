"""Kafka Connect's routing transforms: ``RegexRouter``, ``TimestampRouter`` and ``Filter``."""

from __future__ import annotations

from ..records import ChangeRecord
from .base import Option, Options, Transform, copy_record
from .java_dates import DatePatternError, compile_date_pattern
from .java_regex import compile_java_regex, java_replacement

__all__ = ["Filter", "RegexRouter", "TimestampRouter"]


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


class TimestampRouter(Transform):
    """``org.apache.kafka.connect.transforms.TimestampRouter``: the topic becomes ``topic.format`` with
    ``${topic}`` and ``${timestamp}`` (the record timestamp in ``timestamp.format``, a Java
    ``SimpleDateFormat`` pattern, in UTC) replaced.

    Debezium's source records carry no timestamp (Kafka Connect's producer sets it after the
    transforms), so Kafka's TimestampRouter fails on every record it is applied to ("Timestamp
    missing on record"), and so does this one: the configuration is checked and the formatting is
    Java's (:meth:`topic_for`), but a record that reaches it stops the run, as it stops Debezium."""

    OPTIONS = (
        Option("topic.format", "${topic}-${timestamp}", doc="the new topic: ${topic} and ${timestamp} are replaced"),
        Option("timestamp.format", "yyyyMMdd", doc="java.text.SimpleDateFormat pattern, UTC"),
    )

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._format = options.text("topic.format").strip()
        try:
            self._timestamp = compile_date_pattern(options.text("timestamp.format").strip())
        except DatePatternError as exc:
            raise options.error("timestamp.format", f"{options.text('timestamp.format')!r} is not a SimpleDateFormat pattern: "
                                                    f"{exc}") from None
        options.warn("type", "Debezium's records carry no timestamp, so TimestampRouter fails on every record it is applied to, "
                             "as it does on Kafka Connect (Timestamp missing on record)")

    def topic_for(self, topic: str, timestamp_ms: int) -> str:
        """The topic a record of ``topic`` with timestamp ``timestamp_ms`` is routed to (Kafka replaces
        ``${topic}`` first, then ``${timestamp}``)."""
        return self._format.replace("${topic}", topic).replace("${timestamp}", self._timestamp(timestamp_ms))

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        raise self.fail(record, "Timestamp missing on record: Debezium's source records carry no timestamp "
                                "(Kafka Connect's TimestampRouter fails on them too)")


class Filter(Transform):
    """``org.apache.kafka.connect.transforms.Filter``: drops every record it is applied to; with a
    predicate (``transforms.<alias>.predicate``, ``negate``) it drops the records that match."""

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        return None
