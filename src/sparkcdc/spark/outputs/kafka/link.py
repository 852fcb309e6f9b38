"""What both Kafka writers share: the settings they insist on, producing with back-pressure,
committing a transaction, creating topics, reading the fence, and errors that name the pipeline.

Two writers produce to Kafka exactly once: :mod:`.batch_writer` (a ``foreachBatch`` function producing a
whole micro-batch from the driver in one transaction, for any frame) and :mod:`.task_producer` (the
source's ``kafka`` layout: each reader task produces its own records in a transaction of its own).
Both write their fence records to the pipeline's fence topic ``_sparkcdc.fence.<pipeline_id>``
(one partition, compacted) in the transaction they commit, and read it back with ``read_committed``
to its high watermark (:meth:`KafkaLink.read_fence`); the reasons are in :mod:`.batch_writer`'s docstring
and docs/spark-source.md.
"""

from __future__ import annotations

import logging
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ....errors import ConfigurationError, DestinationError

__all__ = [
    "DEFAULT_TRANSACTION_TIMEOUT_MS",
    "FENCE_TOPIC_PREFIX",
    "KafkaLink",
    "KafkaSinkError",
    "TopicConfig",
    "close_quietly",
    "fence_topic_name",
]

log = logging.getLogger(__name__)

FENCE_TOPIC_PREFIX = "_sparkcdc.fence."
#: How long one poll of the fence waits before the read looks at where the partition ends.
_FENCE_POLL_SECONDS = 0.5
#: ``transaction.timeout.ms`` unless configured: a whole micro-batch (an initial snapshot too) is one
#: transaction, and the broker aborts one that runs longer. 15 minutes is the brokers' default maximum.
DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000
_PIPELINE_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
_FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


class KafkaSinkError(DestinationError):
    """A batch could not be written to Kafka: nothing of it is committed (its transaction was aborted or
    never committed), and Spark will run it again when the query restarts.

    ``batch_id`` and ``topic`` name what failed where known; ``bootstrap_servers`` is the cluster.
    """

    def __init__(self, message: str, *, bootstrap_servers: str, batch_id: int | None = None, topic: str | None = None) -> None:
        super().__init__(message, target=f"kafka {bootstrap_servers}")
        self.bootstrap_servers = bootstrap_servers
        self.batch_id = batch_id
        self.topic = topic


@dataclass(frozen=True)
class TopicConfig:
    """How the sink creates a topic it does not find (existing topics are not changed).

    ``partitions`` / ``replication_factor`` of -1 take the broker's defaults. ``compact`` sets
    ``cleanup.policy=compact``: what a CDC topic wants for keeping each key's last state, and why
    deletes are followed by tombstones. ``config`` adds any other topic configuration.
    """

    partitions: int = 1
    replication_factor: int = -1
    compact: bool = False
    config: Mapping[str, str] = field(default_factory=dict)

    def topic_settings(self) -> dict[str, str]:
        settings = {str(k): str(v) for k, v in self.config.items()}
        if self.compact:
            settings["cleanup.policy"] = "compact"
        return settings

    @classmethod
    def of(cls, value: TopicConfig | Mapping[str, Any] | None) -> TopicConfig:
        if value is None:
            return cls()
        if isinstance(value, TopicConfig):
            return value
        unknown = set(value) - {"partitions", "replication_factor", "compact", "config"}
        if unknown:
            raise ConfigurationError(f"unknown keys {sorted(unknown)} (partitions, replication_factor, compact, config)", prop="topic_config")
        return cls(**value)


def fence_topic_name(pipeline_id: str) -> str:
    """The pipeline's fence topic: one per pipeline (see :mod:`.batch_writer`'s docstring for why not shared)."""
    return FENCE_TOPIC_PREFIX + pipeline_id


class KafkaLink:
    """A pipeline's connection settings to a Kafka cluster and the exchanges both writers make.

    - ``producer_config``: librdkafka producer settings over the defaults (``partitioner=murmur2_random``,
      ``transaction.timeout.ms``, ``linger.ms``); ``enable.idempotence`` and ``acks=all`` are required.
    - ``client_config``: settings every client gets (security, SASL, ...).
    - ``timeout``: seconds for each exchange outside producing records.
    - ``topic_config``: how a missing topic is created; ``topic_groups``: (group, config) pairs, in
      order, where a topic the group ``matches(topic)`` takes that config instead (Kafka Connect's
      ``topic.creation.groups``: the first matching group wins).

    It holds only settings (it pickles into Spark tasks); clients are made by the methods.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        pipeline_id: str,
        producer_config: Mapping[str, Any] | None = None,
        client_config: Mapping[str, Any] | None = None,
        topic_config: TopicConfig | Mapping[str, Any] | None = None,
        topic_groups: Sequence[tuple[Any, TopicConfig]] = (),
        timeout: float = 30.0,
        pipeline_property: str = "pipeline_id",
    ) -> None:
        if not _PIPELINE_ID.fullmatch(pipeline_id):
            raise ConfigurationError(f"{pipeline_id!r} must be 1 to 200 of [A-Za-z0-9._-] (it is part of a topic name)",
                                     prop=pipeline_property)
        if timeout <= 0:
            raise ConfigurationError(f"must be positive, not {timeout}", prop="timeout")
        self.bootstrap_servers = bootstrap_servers
        self.pipeline_id = pipeline_id
        self.fence_topic = fence_topic_name(pipeline_id)
        self.topic_config = TopicConfig.of(topic_config)
        self.topic_groups = tuple(topic_groups)
        self.timeout = timeout
        self.client_config = {str(k): v for k, v in (client_config or {}).items()}
        self.client_config["bootstrap.servers"] = bootstrap_servers
        self.producer_config = self._producer_settings(producer_config or {})

    def _producer_settings(self, user: Mapping[str, Any]) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "partitioner": "murmur2_random",  # the Java producer's: keys land where Debezium puts them
            "transaction.timeout.ms": DEFAULT_TRANSACTION_TIMEOUT_MS,
            "linger.ms": 20,
        }
        settings.update({str(k): v for k, v in user.items()})
        if str(settings.setdefault("enable.idempotence", True)).lower() not in ("true", "1"):
            raise ConfigurationError("enable.idempotence must stay true (exactly-once needs it)", prop="producer_config")
        if str(settings.setdefault("acks", "all")).lower() not in ("all", "-1"):
            raise ConfigurationError("acks must stay 'all' (exactly-once needs it)", prop="producer_config")
        settings.pop("transactional.id", None)  # each writer names its own
        return {**self.client_config, **settings}

    def client(self, **settings: Any) -> dict[str, Any]:
        """Settings for an admin client or consumer. librdkafka's own log lines go to Python logging."""
        return {**self.client_config, "logger": log, **settings}

    # -- producing -----------------------------------------------------------------------------------
    def transactional_producer(self, transactional_id: str, batch_id: int | None) -> Producer:
        """A producer after ``init_transactions``: whatever an earlier producer with this id left open
        is aborted, and one still running (a zombie) is fenced out by the broker."""
        producer = Producer({**self.producer_config, "transactional.id": transactional_id, "logger": log})
        try:
            self.call(lambda: producer.init_transactions(self.timeout), "start the transactional producer", batch_id)
        except BaseException:
            close_quietly(producer)
            raise
        return producer

    def produce(
        self, producer: Producer, topic: str, key: bytes | None, value: bytes | None, batch_id: int | None, *,
        headers: Any = None, on_delivery: Callable[[KafkaError | None, Any], None] | None = None, partition: int | None = None,
    ) -> None:
        """Produce one message, serving delivery reports while the local queue is full."""
        kwargs: dict[str, Any] = {}
        if on_delivery is not None:
            kwargs["on_delivery"] = on_delivery
        if headers:
            kwargs["headers"] = headers
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                producer.produce(topic, value, key, **kwargs)
                return
            except BufferError:
                producer.poll(0.1)  # the local queue is full: serve deliveries until there is room
            except KafkaException as exc:
                raise self.kafka_error(f"producing to topic {topic!r}", exc, batch_id, topic) from exc

    def flush(self, producer: Producer, batch_id: int | None) -> None:
        """Wait for every message's delivery (bounded: librdkafka fails one after message.timeout.ms)."""
        remaining = self.call(producer.flush, "flushing the batch's records", batch_id)
        if remaining:
            raise self.error(f"{remaining} records were not delivered", batch_id)

    def commit(self, producer: Producer, batch_id: int | None) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                producer.commit_transaction(self.timeout)
                return
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if isinstance(err, KafkaError) and err.retriable() and time.monotonic() < deadline:
                    continue  # the commit may be retried as it is (librdkafka's contract)
                raise self.kafka_error("committing the transaction", exc, batch_id) from exc

    def abort(self, producer: Producer | None) -> None:
        """Abort the open transaction, if any, and close the producer; never raises."""
        if producer is None:
            return
        try:
            producer.abort_transaction(min(self.timeout, 10.0))
        except KafkaException:
            pass  # no transaction, or a fatal state: the next init_transactions aborts it
        close_quietly(producer)

    # -- topics --------------------------------------------------------------------------------------
    def existing_topics(self, admin: AdminClient, batch_id: int | None) -> set[str]:
        try:
            metadata = admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self.kafka_error(f"no broker answered within {self.timeout}s", exc, batch_id) from exc
        return {name for name, topic in metadata.topics.items() if topic.error is None}

    def topic_config_for(self, topic: str) -> TopicConfig:
        """How ``topic`` is created: its first matching group's config, else the link's."""
        return next((config for group, config in self.topic_groups if group.matches(topic)), self.topic_config)

    def ensure_topics(self, admin: AdminClient, known: set[str], topics: list[str], batch_id: int | None,
                      config: TopicConfig | None = None) -> None:
        """Create the ``topics`` missing from ``known`` (with ``config``, default each topic's
        :meth:`topic_config_for`), then add them to it."""
        missing = [t for t in topics if t not in known]
        if missing:
            configs = {t: config or self.topic_config_for(t) for t in missing}
            new = [NewTopic(t, c.partitions, c.replication_factor, config=c.topic_settings()) for t, c in configs.items()]
            for topic, future in admin.create_topics(new, operation_timeout=self.timeout, request_timeout=self.timeout).items():
                try:
                    future.result(self.timeout)
                    log.info("Kafka sink %s: created topic %s (%s)", self.pipeline_id, topic, configs[topic])
                except KafkaException as exc:
                    if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                        continue
                    raise self.kafka_error(f"creating topic {topic!r}", exc, batch_id, topic) from exc
        known.update(topics)

    def ensure_fence_topic(self, admin: AdminClient, known: set[str], batch_id: int | None) -> None:
        fence = TopicConfig(partitions=1, replication_factor=self.topic_config.replication_factor, compact=True)
        self.ensure_topics(admin, known, [self.fence_topic], batch_id, fence)

    # -- the fence -----------------------------------------------------------------------------------
    def read_fence(self, batch_id: int | None) -> dict[bytes, bytes | None]:
        """The fence's last value per key: read from the beginning to the partition's end with ``read_committed``.

        The end is the high watermark, which a ``read_committed`` consumer cannot pass while a
        transaction that wrote to the fence is open: its partition EOF then comes early (at the last
        stable offset; before every record, on the broker the tests run) and a fence already
        committed would be missed, its task's records produced again. So the read goes on until it
        has passed the high watermark taken when it reached an EOF: the transactions before it are
        then settled, committed or aborted. Bounded by the timeout."""
        consumer = self._fence_consumer("read_committed")  # an aborted task's fence does not count
        partition = TopicPartition(self.fence_topic, 0, -2)  # -2: OFFSET_BEGINNING
        last: dict[bytes, bytes | None] = {}
        end: int | None = None  # the high watermark, once an EOF came
        try:
            consumer.assign([partition])
            deadline = time.monotonic() + self.timeout
            while True:
                msg = consumer.poll(min(_FENCE_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
                at_eof = msg is not None and msg.error() is not None and msg.error().code() == KafkaError._PARTITION_EOF
                if msg is None or at_eof:
                    if at_eof and end is None:
                        end = self._high_watermark(partition, batch_id)
                    # where the read is: the EOF's offset, or the consumer's position (none before a first record)
                    reached = msg.offset() if at_eof else consumer.position([partition])[0].offset
                    if end is not None and reached >= end:
                        return last
                    if time.monotonic() >= deadline:
                        raise self.error(f"reading the fence topic {self.fence_topic!r} did not reach its end within "
                                         f"{self.timeout}s (a transaction on it stayed open)", batch_id, self.fence_topic)
                    continue
                err = msg.error()
                if err is not None:
                    raise self.error(f"reading the fence topic {self.fence_topic!r}: {err.str()}", batch_id, self.fence_topic)
                key = msg.key()
                if key is not None:
                    last[key] = msg.value()
        finally:
            consumer.close()

    def _fence_consumer(self, isolation: str) -> Consumer:
        return Consumer(self.client(**{
            "group.id": f"sparkcdc-fence-{self.pipeline_id}",  # required by the client; no group is joined (assign)
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 50,
        }))

    def _high_watermark(self, partition: TopicPartition, batch_id: int | None) -> int:
        """The fence partition's high watermark, open transactions' records included (``read_uncommitted``)."""
        watcher = self._fence_consumer("read_uncommitted")
        try:
            _, high = self.call(lambda: watcher.get_watermark_offsets(partition, timeout=self.timeout, cached=False),
                                f"ask for the end of the fence topic {self.fence_topic!r}", batch_id)
            return int(high)
        finally:
            watcher.close()

    # -- errors --------------------------------------------------------------------------------------
    def call(self, action: Callable[[], Any], what: str, batch_id: int | None) -> Any:
        try:
            return action()
        except KafkaException as exc:
            raise self.kafka_error(what, exc, batch_id) from exc

    def error(self, what: str, batch_id: int | None, topic: str | None = None) -> KafkaSinkError:
        return KafkaSinkError(f"Kafka sink {self.pipeline_id!r} ({self.bootstrap_servers}), batch {batch_id}: {what}",
                              bootstrap_servers=self.bootstrap_servers, batch_id=batch_id, topic=topic)

    def kafka_error(self, what: str, exc: KafkaException, batch_id: int | None, topic: str | None = None) -> KafkaSinkError:
        err = exc.args[0] if exc.args else None
        detail = self.detail(err) if isinstance(err, KafkaError) else str(exc)
        return self.error(f"{what}: {detail}", batch_id, topic)

    def detail(self, err: KafkaError) -> str:
        detail = f"{err.str()} ({err.name()})"
        if err.code() in _FENCED:
            detail += "; another producer with the same transactional.id took over: is the pipeline running twice?"
        return detail


def close_quietly(producer: Producer | None) -> None:
    if producer is None:
        return
    try:
        producer.purge()  # close() flushes first: with the brokers gone that would wait for every message's timeout
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "abort_transaction failed during close": already reported
            producer.close()
    except Exception:  # noqa: BLE001 - closing after a failure must not hide it
        log.debug("closing the Kafka producer failed", exc_info=True)
