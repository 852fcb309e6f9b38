"""The ``kafka`` signal channel: signals as messages of ``signal.kafka.topic``, read from a cursor.

The message is Debezium's (``KafkaSignalChannel``): the key is the connector's ``topic.prefix``
(messages with another key are meant for another connector sharing the topic: logged and skipped),
the value a JSON object ``{"type": "execute-snapshot", "data": {...}}`` with an optional ``id``.
A message without an ``id`` is named by its place, ``kafka-<partition>-<offset>`` (Debezium leaves
it null and passes the offset along).

Why offsets in the checkpoint and not consumer-group commits. Debezium's consumer auto-commits to
``signal.kafka.groupId``: a signal whose offset was committed before the connector acted on it is
lost in a crash. sparkcdc keeps the next offset of every partition in the batch's end offset, and a
new driver seeks there: each signal is acted on in exactly one committed batch. The group still
serves two purposes. Once a batch is committed, its offsets are committed to the group too (so the
group's lag shows what is pending); and a partition the cursor has no offset for (a new checkpoint,
a new partition) starts at the group's committed offset, else at the earliest (as Debezium starts).

Debezium reads partition 0 only; sparkcdc reads every partition the topic has when the channel
first finds it (messages with one key all go to one partition anyway). Polling is one
``consume`` bounded by ``signal.kafka.poll.timeout.ms``; the consumer's settings are
``signal.consumer.*`` (prefix stripped) over sparkcdc's defaults, and the same settings reach the
producer of ``sparkcdc signal`` (they are mostly where and how to connect).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ...debezium.config import ConnectorConfig
from ...errors import ConfigurationError
from ..core.signals import Signal, SignalError
from .base import PolledChannel, SignalSendError, signal_from_json, signal_to_json

__all__ = ["KafkaSignalChannel", "kafka_client_settings"]

log = logging.getLogger("sparkcdc.signals")

_PASSTHROUGH = re.compile(r"signal\.consumer\.(.+)")
#: Java client classes in a Debezium configuration; librdkafka would refuse them, and the topic's
#: keys and values are read as UTF-8 text whatever they say.
_JAVA_ONLY = frozenset({"key.deserializer", "value.deserializer", "key.serializer", "value.serializer"})
#: At most this many messages per poll (the rest come at the next one).
_MAX_MESSAGES = 500


def kafka_client_settings(config: ConnectorConfig) -> dict[str, str]:
    """The librdkafka settings of the signal channel's clients: ``signal.consumer.*`` over the
    ``signal.kafka.*`` properties (the configuration requires the servers with the kafka channel)."""
    servers = config.settings.signal_kafka_bootstrap_servers
    if not servers:
        raise ConfigurationError("required with the kafka signal channel: the brokers to read signals from",
                                 prop="signal.kafka.bootstrap.servers")
    settings = {"bootstrap.servers": servers, "client.id": "sparkcdc-signals"}
    for match, value in config.items_matching(_PASSTHROUGH):
        name = match.group(1)
        if name in _JAVA_ONLY:
            log.warning("signal.consumer.%s: has no effect here: signal messages are read as UTF-8 text", name)
            continue
        settings[name] = value
    return settings


class KafkaSignalChannel(PolledChannel):
    name = "kafka"

    def __init__(self, config: ConnectorConfig) -> None:
        self.topic = config.settings.signal_kafka_topic or f"{config.topic_prefix}-signal"  # Debezium's default name
        self.key = config.topic_prefix
        self.timeout = config.settings.signal_kafka_poll_timeout_ms / 1000
        self.settings = kafka_client_settings(config)
        self.group = config.settings.signal_kafka_groupid
        self._consumer: Any = None
        self._partitions: list[int] = []
        self._position: dict[int, int] | None = None  # where the consumer stands; None: to be assigned
        self._acknowledged: dict[int, int] = {}

    # -- reading ---------------------------------------------------------------------------------
    def poll(self, cursor: Any) -> tuple[list[Signal], Any]:
        from confluent_kafka import KafkaException

        offsets = self._offsets(cursor)
        try:
            if self._position != offsets and not self._assign(offsets):
                return [], cursor
            messages = self._consumer.consume(num_messages=_MAX_MESSAGES, timeout=self.timeout)
        except KafkaException as exc:
            log.warning("the kafka signal channel (topic %s) cannot be read now: %s", self.topic, exc)
            self._position = None
            return [], cursor
        position = dict(offsets)
        signals: list[Signal] = []
        for message in messages:
            if message.error() is not None:
                log.warning("the kafka signal channel (topic %s): %s", self.topic, message.error())
                continue
            position[message.partition()] = message.offset() + 1
            signal = self._signal(message)
            if signal is not None:
                signals.append(signal)
        self._position = position
        if position == offsets:
            return [], cursor
        return signals, {"topic": self.topic, "offsets": {str(p): o for p, o in sorted(position.items())}}

    def _offsets(self, cursor: Any) -> dict[int, int]:
        if not cursor or cursor.get("topic") != self.topic:
            return {}
        return {int(p): int(o) for p, o in cursor.get("offsets", {}).items()}

    def _assign(self, offsets: dict[int, int]) -> bool:
        """Point the consumer at ``offsets`` (a new driver, or a planner asked again from an older
        cursor); False while the topic does not exist."""
        from confluent_kafka import OFFSET_STORED, TopicPartition

        consumer = self._client()
        if not self._partitions:
            topic = consumer.list_topics(self.topic, timeout=max(self.timeout, 1.0)).topics.get(self.topic)
            if topic is None or topic.error is not None or not topic.partitions:
                log.info("the kafka signal channel waits for topic %s (%s)", self.topic, None if topic is None else topic.error)
                return False
            self._partitions = sorted(topic.partitions)
            log.info("reading signals from topic %s, partitions %s", self.topic, self._partitions)
        consumer.assign([TopicPartition(self.topic, p, offsets.get(p, OFFSET_STORED)) for p in self._partitions])
        self._position = dict(offsets)
        return True

    def _client(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer, KafkaException

            settings = {"group.id": self.group, "enable.auto.commit": False, "auto.offset.reset": "earliest", **self.settings}
            try:
                self._consumer = Consumer(settings, logger=log)
            except KafkaException as exc:
                raise ConfigurationError(f"the signal topic's consumer refuses its settings: {exc}", prop="signal.consumer.*") from exc
        return self._consumer

    def _signal(self, message: Any) -> Signal | None:
        where = f"topic {self.topic} partition {message.partition()} offset {message.offset()}"
        key = message.key()
        key = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
        if key != self.key:
            log.info("signal at %s: key %r is not this connector's topic.prefix %r; skipped", where, key, self.key)
            return None
        value = message.value()
        if not value:
            return None
        try:
            return signal_from_json(value.decode("utf-8"), channel=self.name, default_id=f"kafka-{message.partition()}-{message.offset()}")
        except (SignalError, UnicodeDecodeError) as exc:
            log.error("signal at %s: %s; skipped", where, exc)
            return None

    def acknowledge(self, cursor: Any) -> None:
        """The offsets are durable in the checkpoint: commit them to the group too (best effort)."""
        offsets = self._offsets(cursor)
        if not offsets or offsets == self._acknowledged or self._consumer is None:
            return
        from confluent_kafka import KafkaException, TopicPartition

        try:
            self._consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()], asynchronous=True)
            self._acknowledged = offsets
        except KafkaException as exc:
            log.warning("the kafka signal channel could not commit its offsets to group %s: %s", self.group, exc)

    # -- sending ---------------------------------------------------------------------------------
    def send(self, signal: Signal) -> str:
        """Produce the signal with the connector's key and wait until the broker has it."""
        from confluent_kafka import KafkaException, Producer

        try:
            producer = Producer(self.settings, logger=log)
        except KafkaException as exc:
            raise ConfigurationError(f"the signal topic's producer refuses its settings: {exc}", prop="signal.consumer.*") from exc
        failures: list[str] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                failures.append(str(error))

        try:
            producer.produce(self.topic, key=self.key.encode(), value=signal_to_json(signal).encode(), on_delivery=delivered)
            left = producer.flush(30)
        except (KafkaException, BufferError) as exc:
            raise SignalSendError(f"cannot send the signal to topic {self.topic}: {exc}") from exc
        if failures or left:
            raise SignalSendError(f"topic {self.topic} did not take the signal: {failures[0] if failures else 'no answer in 30 s'}")
        return f"topic {self.topic} (key {self.key!r}) at {self.settings['bootstrap.servers']}"

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
