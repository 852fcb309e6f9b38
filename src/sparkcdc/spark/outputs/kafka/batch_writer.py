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

Why the fence is read once per producer session, and with ``read_committed`` to the high watermark.
After ``init_transactions`` no other producer can commit for this pipeline, so what this one
commits afterwards is known without asking; reading the fence at every batch would read a topic
that compaction keeps short only eventually. EOF under ``read_committed`` is the last stable
offset, which a transaction still open on the fence holds back (the reader tasks' transactions
write their fence records concurrently, and a broker writes a commit's markers after the commit
returns): the read goes on to the high watermark a ``read_uncommitted`` client reports when it first
reaches an EOF, so every transaction before it is settled (:meth:`.link.KafkaLink.read_fence`).
ListOffsets by time or the last stable offset are not used: some Kafka-protocol brokers (Tansu)
answer them wrongly. A fence topic belongs to one pipeline (``_sparkcdc.fence.<pipeline_id>``): a
transaction of another pipeline left open on a shared partition would hold the read back.

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
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient

from .link import FENCE_TOPIC_PREFIX, KafkaLink, KafkaSinkError, TopicConfig, close_quietly, fence_topic_name

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
    "query_id",
]

log = logging.getLogger(__name__)

#: Rows per partition when ``sort=True`` range-partitions a batch: what the driver holds at once (twice, prefetching).
SORTED_PARTITION_ROWS = 50_000
_COLUMNS = ("topic", "key", "value", "headers", "commit_lsn", "lsn", "ordinal", "snapshot", "partition")
# Debezium's source.snapshot values that do not come from an initial snapshot (null: a streamed change).
_NOT_INITIAL_SNAPSHOT = (None, "false", "incremental")
_POSITION = ("commit_lsn", "lsn", "ordinal")
_POLL_EVERY = 1000  # produce calls between serving delivery reports


def kafka_writer(frame: DataFrame, bootstrap_servers: str, *, sort: bool = False, **link_settings: Any) -> DataStreamWriter:
    """``frame.writeStream`` writing to Kafka topics exactly once; set the checkpoint and trigger on it.

    ``pipeline_id`` (required) names the pipeline in Kafka (its ``transactional.id`` and fence
    topic): one pipeline id per checkpoint, and never two running queries with the same one (the
    newer fences the older out). The other keywords are :class:`KafkaBatchWriter`'s.
    """
    writer = KafkaBatchWriter(bootstrap_servers, sort=sort, **link_settings)
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

    - ``pipeline_id`` (required), ``producer_config``, ``client_config``, ``topic_config``,
      ``timeout``, ...: :class:`KafkaLink`'s keywords, the connection to the cluster. The producer
      settings override the sink's defaults, but ``enable.idempotence`` and ``acks=all`` are required.
    - ``sort``: sort each batch by (commit_lsn, lsn, ordinal) instead of relying on (and checking)
      the order of its partitions; for frames that do not keep the source's order.
    - A frame with an integer ``partition`` column (as Spark's Kafka sink reads one) has each record
      produced to that partition, or by key where it is null; the ``columns`` layout has no such
      column (the ``kafka`` layout produces the partitions transforms choose).
    """

    def __init__(self, bootstrap_servers: str, *, sort: bool = False, **link_settings: Any) -> None:
        self.link = KafkaLink(bootstrap_servers, **link_settings)
        self.pipeline_id = self.link.pipeline_id
        self.transactional_id = f"sparkcdc-{self.pipeline_id}"
        self.topic_config = self.link.topic_config
        self.sort = sort
        self._session: _Session | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Spark Connect pickles the foreachBatch function: clients are rebuilt where it runs.
        state = self.__dict__.copy()
        state["_session"] = None
        return state

    # -- the foreachBatch function -------------------------------------------------------------------
    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        query = query_id(batch)
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
        self.link.produce(producer, self.link.fence_topic, self.pipeline_id.encode(), fence, batch_id, on_delivery=delivered, partition=0)
        self.link.flush(producer, batch_id)
        self._raise_delivery_failure(failure, batch_id)
        self.link.commit(producer, batch_id)
        return count, snapshot

    def _produce_rows(
        self, session: _Session, rows: Iterator[Any], batch_id: int, delivered: Callable[[KafkaError | None, Message], None],
        failure: list[tuple[str, int, KafkaError]],
    ) -> tuple[int, bool]:
        """Produce every row (beginning the transaction at the first); checks the order unless sorted.

        Returns the count and whether a row came from an initial snapshot.
        """
        producer, link = session.producer, self.link
        last_position: dict[str, tuple[int, int, int]] = {}
        count = 0
        snapshot = False
        for topic, key, value, headers, commit_lsn, lsn, ordinal, marker, partition in rows:
            if topic is None or topic == "":
                raise link.error("a record without a topic", batch_id)
            if topic not in session.topics:
                link.ensure_topics(session.admin, session.topics, [topic], batch_id)
            position = (_or_first(commit_lsn), _or_first(lsn), _or_first(ordinal))
            if not self.sort:
                previous = last_position.get(topic)
                if previous is not None and position < previous:
                    raise link.error(
                        f"records out of commit order in topic {topic!r}: (commit_lsn, lsn, ordinal) {position} after "
                        f"{previous}; the frame's partitions do not keep the source's order (use sort=True)", batch_id, topic)
                last_position[topic] = position
            if count == 0:
                link.call(producer.begin_transaction, "begin the transaction", batch_id)
            link.produce(producer, topic, None if key is None else key.encode(), None if value is None else value.encode(),
                         batch_id, headers=_headers(headers), on_delivery=delivered, partition=partition)
            count += 1
            if not snapshot and marker not in _NOT_INITIAL_SNAPSHOT:
                snapshot = True
            if count % _POLL_EVERY == 0:
                link.call(lambda: producer.poll(0), "serving delivery reports", batch_id)
                self._raise_delivery_failure(failure, batch_id)
        return count, snapshot

    def _rows(self, batch: DataFrame) -> Generator[Any, None, None]:
        from pyspark.sql import functions as F

        # A frame of the user's own may lack the snapshot marker (its batches are then not snapshots)
        # and may have a partition column, as Spark's Kafka sink reads one (null: the partitioner's choice).
        frame = batch.select(*_COLUMNS[:-2], *(F.col(name) if name in batch.columns else F.lit(None).alias(name)
                                               for name in ("snapshot", "partition")))
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

    def _raise_delivery_failure(self, failure: list[tuple[str, int, KafkaError]], batch_id: int) -> None:
        if failure:
            topic, partition, err = failure[0]
            raise self.link.error(f"delivery to topic {topic!r} partition {partition} failed: {self.link.detail(err)}", batch_id, topic)

    # -- sessions ------------------------------------------------------------------------------------
    def _start_session(self, batch_id: int) -> _Session:
        """A transactional producer (aborting what an earlier one left open) and the fence's last batch."""
        link = self.link
        admin = AdminClient(link.client())
        topics = link.existing_topics(admin, batch_id)
        link.ensure_fence_topic(admin, topics, batch_id)
        producer = link.transactional_producer(self.transactional_id, batch_id)
        session = _Session(producer=producer, admin=admin, topics=topics, committed_batch=-1, committed_query=None)
        try:
            fence = link.read_fence(batch_id).get(self.pipeline_id.encode())
            session.committed_batch, session.committed_query, session.committed_snapshot = self._parse_fence(fence, batch_id)
        except BaseException:
            close_quietly(producer)
            raise
        self._session = session
        log.info("Kafka sink %s: producer %s ready; fence: batch %d of query %s (snapshot: %s)", self.pipeline_id,
                 self.transactional_id, session.committed_batch, session.committed_query, session.committed_snapshot)
        return session

    def _end_session(self, session: _Session, *, abort: bool) -> None:
        """Drop the producer; the next batch starts a new session (which reads the fence again)."""
        self._session = None
        if abort:
            self.link.abort(session.producer)
        else:
            close_quietly(session.producer)

    def _parse_fence(self, value: bytes | None, batch_id: int) -> tuple[int, str | None, bool]:
        if value is None:
            return (-1, None, False)  # no fence record, or a tombstone: the fence was reset by hand
        try:
            record = json.loads(value)
            return (int(record["batch_id"]), record.get("query_id"), bool(record.get("snapshot", False)))
        except (ValueError, KeyError, TypeError) as exc:
            raise self.link.error(f"the fence topic {self.link.fence_topic!r} holds a record that is not a fence: {value[:200]!r}",
                                  batch_id, self.link.fence_topic) from exc


def query_id(batch: DataFrame) -> str | None:
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
