"""Kafka topics through confluent-kafka, exactly once across Spark's re-executed micro-batches.

``kafka_writer(frame, bootstrap_servers, pipeline_id=...)`` is a ``foreachBatch`` sink for the
``postgres-cdc`` source: each record goes to its ``topic`` with the key and value bytes of its
Debezium JSON texts (a tombstone's value is null) and its headers. Spark's own ``format("kafka")``
needs jars this project does not ship; a Python producer on the driver needs nothing but the wheel.

Why transactions plus a fence. Spark runs a micro-batch again whenever its commit log entry is
missing: after a crash between the sink's work and that entry, or when someone deletes the entry to
force a replay. The source then yields the same records (offsets only name positions), so the sink
alone decides whether they appear twice. The idempotent producer removes duplicates of its own
retries only, within one producer session; a re-executed batch is a new session. So each batch is
one Kafka transaction that also writes, to the pipeline's fence topic, the batch id it commits: the
records and the fence record become visible together or not at all, and a batch whose id the fence
already holds has reached Kafka entirely and is skipped. The ``transactional.id`` is stable per
pipeline (``sparkcdc-<pipeline_id>``), which gives two more guarantees: starting a producer aborts
whatever transaction an earlier one (a dead driver) left open, and a zombie that still runs is
fenced out by the broker instead of interleaving its writes with ours.

Why the fence is read once per producer session, and with ``read_committed`` to partition EOF.
After ``init_transactions`` no other producer can commit for this pipeline, so what this one
commits afterwards is known without asking; reading the fence at every batch would read a topic
that compaction keeps short only eventually. EOF under ``read_committed`` is the last stable
offset, which ``init_transactions`` has moved past our own earlier transactions. Watermark and
ListOffsets answers are not used: some Kafka-protocol brokers (Tansu) answer them wrongly. A fence
topic belongs to one pipeline (``_sparkcdc.fence.<pipeline_id>``): a transaction of another
pipeline left open on a shared partition would hold that offset back, and the fence read would
then miss our newest commit and replay it.

Why the fence also holds the streaming query's id. A new checkpoint restarts batch ids at 0; batch
ids alone would skip its first batches as "already written". A fence record of another query (the
id Spark keeps in the checkpoint) does not apply and is replaced by this query's first commit.

Why a replayed initial snapshot is written again. Its exported snapshot died with the driver (or
query) that took it, so the source re-executes the snapshot batch from a new snapshot and slot and
streams on from the new consistent point (Spark plans the batch's partitions, which does this, even
when the sink reads nothing). Skipping that batch would leave out of Kafka every change between the
two snapshots. So the fence notes whether its batch held initial snapshot records, and a replay of
such a batch is written again: the snapshot's reads then appear twice, as after Debezium restarts an
interrupted snapshot, while streamed changes stay exactly once.

Why the batch is read partition by partition, without a sort. ``DataFrame.toLocalIterator`` brings
one partition at a time to the driver (two with prefetching), and the source's partitions are
bounded (snapshot chunks, WAL-capped stream ranges); each partition is read exactly once, so the
source decodes its WAL once. Per-key order is what Kafka promises consumers, and the source gives
more: its partitions, taken in order, are in commit order topic by topic. The sink checks that
(``commit_lsn, lsn, ordinal`` never decreases within a topic) and fails the batch, aborting the
transaction, when a frame breaks it. ``sort=True`` is for frames that do not keep it: the batch is
persisted (one read of the source), range-partitioned into bounded pieces and sorted.

Topics are created when missing, with the partitions, replication factor and ``cleanup.policy``
given; existing topics are left as they are. Keys are partitioned with murmur2, as Kafka's Java
producer (Kafka Connect, Debezium) does: with the same key bytes and partition count, a key lands on
the partition Debezium would choose.
"""

from __future__ import annotations

import json
import logging
import re
import time
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ...errors import ConfigurationError, DestinationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import DataStreamWriter

__all__ = [
    "FENCE_TOPIC_PREFIX",
    "KafkaBatchWriter",
    "KafkaSinkError",
    "TopicConfig",
    "fence_topic_name",
    "kafka_writer",
]

log = logging.getLogger(__name__)

FENCE_TOPIC_PREFIX = "_sparkcdc.fence."
#: Rows per partition when ``sort=True`` range-partitions a batch: what the driver holds at once (twice, prefetching).
SORTED_PARTITION_ROWS = 50_000
#: ``transaction.timeout.ms`` unless configured: a whole micro-batch (an initial snapshot too) is one
#: transaction, and the broker aborts one that runs longer. 15 minutes is the brokers' default maximum.
DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000
_COLUMNS = ("topic", "key", "value", "headers", "commit_lsn", "lsn", "ordinal", "snapshot")
# Debezium's source.snapshot values that do not come from an initial snapshot (null: a streamed change).
_NOT_INITIAL_SNAPSHOT = (None, "false", "incremental")
_POSITION = ("commit_lsn", "lsn", "ordinal")
_PIPELINE_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
_POLL_EVERY = 1000  # produce calls between serving delivery reports
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
    """The pipeline's fence topic: one per pipeline (see the module docstring for why not shared)."""
    return FENCE_TOPIC_PREFIX + pipeline_id


def kafka_writer(
    frame: DataFrame,
    bootstrap_servers: str,
    *,
    pipeline_id: str,
    producer_config: Mapping[str, Any] | None = None,
    client_config: Mapping[str, Any] | None = None,
    topic_config: TopicConfig | Mapping[str, Any] | None = None,
    sort: bool = False,
    timeout: float = 30.0,
) -> DataStreamWriter:
    """``frame.writeStream`` writing to Kafka topics exactly once; set the checkpoint and trigger on it.

    ``pipeline_id`` names the pipeline in Kafka (its ``transactional.id`` and fence topic): one
    pipeline id per checkpoint, and never two running queries with the same one (the newer fences
    the older out). See :class:`KafkaBatchWriter` for the other arguments.
    """
    writer = KafkaBatchWriter(
        bootstrap_servers, pipeline_id=pipeline_id, producer_config=producer_config, client_config=client_config,
        topic_config=topic_config, sort=sort, timeout=timeout,
    )
    return frame.writeStream.foreachBatch(writer)


@dataclass
class _Session:
    """A producer after ``init_transactions``, and what is known to be committed for this pipeline."""

    producer: Producer
    admin: AdminClient
    topics: set[str]  # topics known to exist
    committed_batch: int  # the last batch id committed (-1: none)
    committed_query: str | None  # the streaming query that committed it, when known
    committed_snapshot: bool = False  # whether that batch held initial snapshot records


class KafkaBatchWriter:
    """The ``foreachBatch`` function: one Kafka transaction per micro-batch, skipped when already committed.

    Usable directly inside a user's own ``foreachBatch`` (call it with the batch and its id). One
    instance per streaming query; it keeps its producer between batches.

    - ``producer_config``: librdkafka producer settings; they override the sink's defaults
      (``partitioner=murmur2_random``, ``transaction.timeout.ms``), but ``enable.idempotence`` and
      ``acks=all`` are required.
    - ``client_config``: settings every client needs (security, SASL, ...): the producer, the
      admin client that creates topics and the consumer that reads the fence.
    - ``topic_config``: how missing topics are created (:class:`TopicConfig`, or a mapping of its fields).
    - ``sort``: sort each batch by (commit_lsn, lsn, ordinal) instead of relying on (and checking)
      the order of its partitions; for frames that do not keep the source's order.
    - ``timeout``: seconds for each exchange with the brokers outside producing records (metadata,
      topic creation, starting and committing a transaction, reading the fence).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        pipeline_id: str,
        producer_config: Mapping[str, Any] | None = None,
        client_config: Mapping[str, Any] | None = None,
        topic_config: TopicConfig | Mapping[str, Any] | None = None,
        sort: bool = False,
        timeout: float = 30.0,
    ) -> None:
        if not _PIPELINE_ID.fullmatch(pipeline_id):
            raise ConfigurationError(f"{pipeline_id!r} must be 1 to 200 of [A-Za-z0-9._-] (it is part of a topic name)", prop="pipeline_id")
        if timeout <= 0:
            raise ConfigurationError(f"must be positive, not {timeout}", prop="timeout")
        self.bootstrap_servers = bootstrap_servers
        self.pipeline_id = pipeline_id
        self.fence_topic = fence_topic_name(pipeline_id)
        self.topic_config = TopicConfig.of(topic_config)
        self.sort = sort
        self.timeout = timeout
        self._client_config = {str(k): v for k, v in (client_config or {}).items()}
        self._client_config["bootstrap.servers"] = bootstrap_servers
        self._producer_config = self._producer_settings(producer_config or {})
        self._session: _Session | None = None

    # -- configuration -----------------------------------------------------------------------------
    def _producer_settings(self, user: Mapping[str, Any]) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "transactional.id": f"sparkcdc-{self.pipeline_id}",
            "partitioner": "murmur2_random",  # the Java producer's: keys land where Debezium puts them
            "transaction.timeout.ms": DEFAULT_TRANSACTION_TIMEOUT_MS,
            "linger.ms": 20,
        }
        settings.update({str(k): v for k, v in user.items()})
        if str(settings.setdefault("enable.idempotence", True)).lower() not in ("true", "1"):
            raise ConfigurationError("enable.idempotence must stay true (exactly-once needs it)", prop="producer_config")
        if str(settings.setdefault("acks", "all")).lower() not in ("all", "-1"):
            raise ConfigurationError("acks must stay 'all' (exactly-once needs it)", prop="producer_config")
        return {**self._client_config, **settings}

    def _client(self, **settings: Any) -> dict[str, Any]:
        # librdkafka's own log lines go to Python logging (served on poll), not straight to stderr.
        return {**self._client_config, "logger": log, **settings}

    def __getstate__(self) -> dict[str, Any]:
        # Spark Connect pickles the foreachBatch function: clients are rebuilt where it runs.
        state = self.__dict__.copy()
        state["_session"] = None
        return state

    # -- the foreachBatch function -------------------------------------------------------------------
    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        query = _query_id(batch)
        session = self._session or self._start_session(batch_id)
        if session.committed_query is not None and query is not None and session.committed_query != query:
            log.warning("Kafka sink %s: the fence holds batch %d of streaming query %s, not of this query %s "
                        "(a new checkpoint?): it does not apply", self.pipeline_id, session.committed_batch,
                        session.committed_query, query)
            session.committed_batch, session.committed_query = -1, query
        if batch_id == session.committed_batch and session.committed_snapshot:
            log.warning("Kafka sink %s: batch %d, an initial snapshot already committed to Kafka, runs again: the source "
                        "takes a new snapshot (and slot) for it, so it is written again", self.pipeline_id, batch_id)
        elif batch_id <= session.committed_batch:
            # The same batch again is a replay; an older one means the checkpoint was rolled back.
            level = logging.INFO if batch_id == session.committed_batch else logging.WARNING
            log.log(level, "Kafka sink %s: batch %d is already committed to Kafka (fence: batch %d); skipped",
                    self.pipeline_id, batch_id, session.committed_batch)
            return
        try:
            count, snapshot = self._write(session, batch, batch_id, query)
        except BaseException:
            self._end_session(session, abort=True)
            raise
        if count:
            session.committed_batch, session.committed_query, session.committed_snapshot = batch_id, query, snapshot
        log.debug("Kafka sink %s: batch %d: %d records committed", self.pipeline_id, batch_id, count)

    def close(self) -> None:
        """Close the producer (a later call starts a new session, aborting nothing committed)."""
        if self._session is not None:
            self._end_session(self._session, abort=True)

    # -- a batch -------------------------------------------------------------------------------------
    def _write(self, session: _Session, batch: DataFrame, batch_id: int, query: str | None) -> tuple[int, bool]:
        """Produce the batch in one transaction with its fence record and commit it; the record count, and
        whether the batch held initial snapshot records.

        An empty batch opens no transaction and writes no fence: its replay writes nothing either.
        """
        producer = session.producer
        failure: list[tuple[str, int, KafkaError]] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None and not failure:
                partition = msg.partition()
                failure.append((msg.topic() or "?", -1 if partition is None else partition, err))

        rows = self._rows(batch)
        with closing(rows):  # on a failure: stop the batch's jobs and unpersist now, not when collected
            count, snapshot = self._produce_rows(session, rows, batch_id, delivered, failure)
        if count == 0:
            return 0, False
        fence = json.dumps({"batch_id": batch_id, "query_id": query, "records": count, "snapshot": snapshot}).encode()
        self._produce(producer, self.fence_topic, self.pipeline_id.encode(), fence, None, delivered, batch_id, partition=0)
        # Bounded: librdkafka fails a message after message.timeout.ms.
        remaining = self._call(producer.flush, "flushing the batch's records", batch_id)
        self._raise_delivery_failure(failure, batch_id)
        if remaining:
            raise self._error(f"{remaining} records were not delivered", batch_id)
        self._commit(producer, batch_id)
        return count, snapshot

    def _produce_rows(
        self, session: _Session, rows: Iterator[Any], batch_id: int, delivered: Callable[[KafkaError | None, Message], None],
        failure: list[tuple[str, int, KafkaError]],
    ) -> tuple[int, bool]:
        """Produce every row (beginning the transaction at the first); checks the order unless sorted.

        Returns the count and whether a row came from an initial snapshot.
        """
        producer = session.producer
        last_position: dict[str, tuple[int, int, int]] = {}
        count = 0
        snapshot = False
        for topic, key, value, headers, commit_lsn, lsn, ordinal, marker in rows:
            if topic is None or topic == "":
                raise self._error("a record without a topic", batch_id)
            if topic not in session.topics:
                self._ensure_topics(session, [topic], batch_id)
            position = (_or_first(commit_lsn), _or_first(lsn), _or_first(ordinal))
            if not self.sort:
                previous = last_position.get(topic)
                if previous is not None and position < previous:
                    raise self._error(
                        f"records out of commit order in topic {topic!r}: (commit_lsn, lsn, ordinal) {position} after "
                        f"{previous}; the frame's partitions do not keep the source's order (use sort=True)", batch_id, topic)
                last_position[topic] = position
            if count == 0:
                self._call(producer.begin_transaction, "begin the transaction", batch_id)
            self._produce(producer, topic, None if key is None else key.encode(),
                          None if value is None else value.encode(), _headers(headers), delivered, batch_id)
            count += 1
            if not snapshot and marker not in _NOT_INITIAL_SNAPSHOT:
                snapshot = True
            if count % _POLL_EVERY == 0:
                self._call(lambda: producer.poll(0), "serving delivery reports", batch_id)
                self._raise_delivery_failure(failure, batch_id)
        return count, snapshot

    def _rows(self, batch: DataFrame) -> Generator[Any, None, None]:
        from pyspark.sql import functions as F

        # A frame of the user's own may lack the snapshot marker: its batches are then not snapshots.
        frame = batch.select(*_COLUMNS[:-1], F.col("snapshot") if "snapshot" in batch.columns else F.lit(None).alias("snapshot"))
        if not self.sort:
            # One job per partition, in partition order; the next one runs while this one is produced.
            yield from frame.toLocalIterator(prefetchPartitions=True)
            return
        from pyspark import StorageLevel

        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)  # the sort's sampling and shuffle read it twice
        try:
            rows = frame.count()
            if rows == 0:
                return
            pieces = max(1, -(-rows // SORTED_PARTITION_ROWS))
            ordered = frame.repartitionByRange(pieces, *_POSITION).sortWithinPartitions(*_POSITION)
            yield from ordered.toLocalIterator(prefetchPartitions=True)
        finally:
            frame.unpersist()

    def _produce(
        self, producer: Producer, topic: str, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]] | None,
        delivered: Callable[[KafkaError | None, Message], None], batch_id: int, partition: int | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"on_delivery": delivered}
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
                raise self._kafka_error(f"producing to topic {topic!r}", exc, batch_id, topic) from exc

    def _commit(self, producer: Producer, batch_id: int) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                producer.commit_transaction(self.timeout)
                return
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if isinstance(err, KafkaError) and err.retriable() and time.monotonic() < deadline:
                    continue  # the commit may be retried as it is (librdkafka's contract)
                raise self._kafka_error("committing the transaction", exc, batch_id) from exc

    def _raise_delivery_failure(self, failure: list[tuple[str, int, KafkaError]], batch_id: int) -> None:
        if failure:
            topic, partition, err = failure[0]
            raise self._error(f"delivery to topic {topic!r} partition {partition} failed: {self._detail(err)}", batch_id, topic)

    # -- sessions ------------------------------------------------------------------------------------
    def _start_session(self, batch_id: int) -> _Session:
        """A transactional producer (aborting what an earlier one left open) and the fence's last batch."""
        admin = AdminClient(self._client())
        topics = self._existing_topics(admin, batch_id)
        session = _Session(producer=None, admin=admin, topics=topics, committed_batch=-1, committed_query=None)  # type: ignore[arg-type]
        fence = TopicConfig(partitions=1, replication_factor=self.topic_config.replication_factor, compact=True)
        self._ensure_topics(session, [self.fence_topic], batch_id, fence)
        producer = Producer({**self._producer_config, "logger": log})
        try:
            self._call(lambda: producer.init_transactions(self.timeout), "start the transactional producer", batch_id)
            session.producer = producer
            session.committed_batch, session.committed_query, session.committed_snapshot = self._read_fence(batch_id)
        except BaseException:
            _close_quietly(producer)
            raise
        self._session = session
        log.info("Kafka sink %s: producer %s ready; fence: batch %d of query %s (snapshot: %s)", self.pipeline_id,
                 self._producer_config["transactional.id"], session.committed_batch, session.committed_query,
                 session.committed_snapshot)
        return session

    def _end_session(self, session: _Session, *, abort: bool) -> None:
        """Drop the producer; the next batch starts a new session (which reads the fence again)."""
        self._session = None
        if abort and session.producer is not None:
            try:
                session.producer.abort_transaction(min(self.timeout, 10.0))
            except KafkaException:
                pass  # no transaction, or a fatal state: the next init_transactions aborts it
        _close_quietly(session.producer)

    def _read_fence(self, batch_id: int) -> tuple[int, str | None, bool]:
        """The last (batch id, query id, snapshot) committed for this pipeline, reading the fence to partition EOF."""
        consumer = Consumer(self._client(**{
            "group.id": f"sparkcdc-fence-{self.pipeline_id}",  # required by the client; no group is joined (assign)
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 50,
        }))
        key = self.pipeline_id.encode()
        last: tuple[int, str | None, bool] = (-1, None, False)
        try:
            consumer.assign([TopicPartition(self.fence_topic, 0, -2)])  # -2: OFFSET_BEGINNING
            deadline = time.monotonic() + self.timeout
            while True:
                msg = consumer.poll(max(0.0, deadline - time.monotonic()))
                if msg is None:
                    if time.monotonic() >= deadline:
                        raise self._error(f"reading the fence topic {self.fence_topic!r} did not reach its end within "
                                          f"{self.timeout}s", batch_id, self.fence_topic)
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        return last
                    raise self._error(f"reading the fence topic {self.fence_topic!r}: {err.str()}", batch_id, self.fence_topic)
                if msg.key() != key:
                    continue
                last = self._parse_fence(msg.value(), batch_id)
        finally:
            consumer.close()

    def _parse_fence(self, value: bytes | None, batch_id: int) -> tuple[int, str | None, bool]:
        if value is None:
            return (-1, None, False)  # a tombstone: the fence was reset by hand
        try:
            record = json.loads(value)
            return (int(record["batch_id"]), record.get("query_id"), bool(record.get("snapshot", False)))
        except (ValueError, KeyError, TypeError) as exc:
            raise self._error(f"the fence topic {self.fence_topic!r} holds a record that is not a fence: {value[:200]!r}",
                              batch_id, self.fence_topic) from exc

    # -- topics --------------------------------------------------------------------------------------
    def _existing_topics(self, admin: AdminClient, batch_id: int) -> set[str]:
        try:
            metadata = admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._kafka_error(f"no broker answered within {self.timeout}s", exc, batch_id) from exc
        return {name for name, topic in metadata.topics.items() if topic.error is None}

    def _ensure_topics(self, session: _Session, topics: list[str], batch_id: int, config: TopicConfig | None = None) -> None:
        config = config or self.topic_config
        missing = [t for t in topics if t not in session.topics]
        if missing:
            new = [NewTopic(t, config.partitions, config.replication_factor, config=config.topic_settings()) for t in missing]
            for topic, future in session.admin.create_topics(new, operation_timeout=self.timeout, request_timeout=self.timeout).items():
                try:
                    future.result(self.timeout)
                    log.info("Kafka sink %s: created topic %s (%s)", self.pipeline_id, topic, config)
                except KafkaException as exc:
                    if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                        continue
                    raise self._kafka_error(f"creating topic {topic!r}", exc, batch_id, topic) from exc
        session.topics.update(topics)

    # -- errors --------------------------------------------------------------------------------------
    def _call(self, action: Callable[[], Any], what: str, batch_id: int) -> Any:
        try:
            return action()
        except KafkaException as exc:
            raise self._kafka_error(what, exc, batch_id) from exc

    def _error(self, what: str, batch_id: int | None, topic: str | None = None) -> KafkaSinkError:
        return KafkaSinkError(f"Kafka sink {self.pipeline_id!r} ({self.bootstrap_servers}), batch {batch_id}: {what}",
                              bootstrap_servers=self.bootstrap_servers, batch_id=batch_id, topic=topic)

    def _kafka_error(self, what: str, exc: KafkaException, batch_id: int | None, topic: str | None = None) -> KafkaSinkError:
        err = exc.args[0] if exc.args else None
        detail = self._detail(err) if isinstance(err, KafkaError) else str(exc)
        return self._error(f"{what}: {detail}", batch_id, topic)

    def _detail(self, err: KafkaError) -> str:
        detail = f"{err.str()} ({err.name()})"
        if err.code() in _FENCED:
            detail += (f"; another producer with transactional.id {self._producer_config['transactional.id']!r} "
                       "took over: is the pipeline running twice?")
        return detail


def _query_id(batch: DataFrame) -> str | None:
    """The streaming query's id (kept in its checkpoint), or None outside a streaming query / on Spark Connect."""
    try:
        return batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: the fence then goes by batch id alone
        return None


def _or_first(position: int | None) -> int:
    return -1 if position is None else position  # unknown positions sort first, as Spark's nulls do


def _headers(headers: Any) -> list[tuple[str, bytes | None]] | None:
    if not headers:
        return None
    return [(name, None if data is None else bytes(data)) for name, data in headers]


def _close_quietly(producer: Producer | None) -> None:
    if producer is None:
        return
    try:
        producer.purge()  # close() flushes first: with the brokers gone that would wait for every message's timeout
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "abort_transaction failed during close": already reported
            producer.close()
    except Exception:  # noqa: BLE001 - closing after a failure must not hide it
        log.debug("closing the Kafka producer failed", exc_info=True)
