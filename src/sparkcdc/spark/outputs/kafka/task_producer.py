"""Kafka produced by the task that reads the changes: the ``kafka`` output layout.

Why: a ``foreachBatch`` producer on the driver (:mod:`.batch_writer`) brings every record of a micro-batch
to the driver through ``toLocalIterator``: one Python process for the whole cluster's records, and
each record crossing the JVM twice. Here the reader task produces its own records straight from the
serialized batches the engine made, and hands Spark one row per topic: ``index, topic, records,
skipped``. The driver only collects those rows.

Exactly once with several producers. A Kafka transaction belongs to one producer, so a batch is no
longer one transaction: each task is. Task ``i`` of a batch produces with ``transactional.id =
sparkcdc-<pipeline_id>-<i>`` and writes, in the same transaction, a fence record under the key
``<pipeline_id>#<i>`` holding the batch id, the streaming query's id, the driver run that planned
the batch, the records per topic and whether the batch was an initial snapshot. Its records and its
fence record are committed together or not at all, per task.

Before producing, a task calls ``init_transactions``: a transaction that an earlier attempt with the
same index left open is aborted, and an attempt still running (a zombie, a speculative copy) is
fenced out by the broker. It then reads the fence, when a replay is possible, and skips its records
if the fence holds its batch already (the rows it yields then carry the counts the fence kept):

* a task's second attempt (``attemptNumber > 0``): the first may have committed before dying;
* a batch the driver's writer (:class:`.task_commits.ReaderKafkaBatchWriter`) does not know to be new. It reads
  the fence once per session (after a start, or after a failed batch), and marks each batch it
  knows no task of has committed with the local property ``sparkcdc.kafka.fence=clear``; a task
  without that mark reads the fence. Used without that writer, every task reads it.

An initial snapshot batch run again by a new driver run is written again, as with the driver's
writer: its exported snapshot died with the driver that took it, the source takes a new one (and a
new slot) and streams on from the new consistent point, so skipping its chunks would lose the
changes between the two snapshots. A task's second attempt in the same run reads the same exported
snapshot, so it is skipped when the first committed.

Order: records are produced in the order the task reads them, so a stream range keeps commit order
per topic; the chunks of one table's snapshot are produced in parallel by their tasks (the rows of
a snapshot have no order between them). A batch's records become visible to ``read_committed``
consumers task by task rather than all at once.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ....engine.core.encoded import Constant, EncodedBatch
from ....errors import ConfigurationError
from .link import KafkaLink, TopicConfig, close_quietly

if TYPE_CHECKING:
    from ....debezium.config import ConnectorConfig

__all__ = [
    "FENCE_CLEAR",
    "FENCE_PROPERTY",
    "PRODUCED_ARROW_SCHEMA",
    "PRODUCED_DDL_SCHEMA",
    "kafka_link",
    "parse_fence",
    "produce_partition",
]

log = logging.getLogger(__name__)

PRODUCED_DDL_SCHEMA = "index int, topic string, records long, skipped boolean"
PRODUCED_ARROW_SCHEMA = pa.schema([("index", pa.int32()), ("topic", pa.string()), ("records", pa.int64()), ("skipped", pa.bool_())])
#: The local property by which the driver's writer tells a batch's tasks that none of them has committed it.
FENCE_PROPERTY = "sparkcdc.kafka.fence"
#: Its value when no task of the batch has committed it.
FENCE_CLEAR = "clear"
_POLL_EVERY = 2000  # produce calls between serving delivery reports

#: librdkafka settings for every client of the layout (producers, admin, fence consumer), prefix stripped.
_CLIENT_SETTING = re.compile(r"sparkcdc\.output\.kafka\.client\.(.+)")


def kafka_link(config: ConnectorConfig) -> KafkaLink:
    """The ``kafka`` layout's link from the connector properties (``sparkcdc.output.kafka.*``)."""
    servers = config.settings.sparkcdc_output_kafka_bootstrap_servers
    if not servers:
        raise ConfigurationError("required with sparkcdc.output.layout=kafka: the Kafka cluster the reader tasks produce to",
                                 prop="sparkcdc.output.kafka.bootstrap.servers")
    pipeline = config.settings.sparkcdc_output_kafka_pipeline_id or config.settings.topic_prefix
    client = {match.group(1): value for match, value in config.items_matching(_CLIENT_SETTING)}
    topics, groups = _topic_configs(config)
    # one family of settings for every client; the producer's defaults give way to them too (linger.ms, compression)
    return KafkaLink(servers, pipeline_id=pipeline, client_config=client, producer_config=client, topic_config=topics,
                     topic_groups=groups, timeout=config.settings.sparkcdc_output_kafka_timeout_ms / 1000,
                     pipeline_property="sparkcdc.output.kafka.pipeline.id")


def _topic_configs(config: ConnectorConfig) -> tuple[TopicConfig, list[tuple[Any, TopicConfig]]]:
    """How missing topics are created: ``sparkcdc.output.kafka.topic.*`` with Kafka Connect's default
    group (``topic.creation.default.*``: the same sizes, any topic-level setting), and each group of
    ``topic.creation.groups`` (sizes it leaves out: the default's)."""
    creation = config.topic_creation
    default = creation.default
    compact = config.settings.sparkcdc_output_kafka_topic_compact
    if compact and (default.config.get("cleanup.policy") or "compact").strip().lower() != "compact":
        raise ConfigurationError(f"asks for cleanup.policy=compact, but topic.creation.default.cleanup.policy is "
                                 f"{default.config['cleanup.policy']}: give one of them", prop="sparkcdc.output.kafka.topic.compact")
    partitions = default.partitions if default.partitions is not None else config.settings.sparkcdc_output_kafka_topic_partitions
    replication = (default.replication_factor if default.replication_factor is not None
                   else config.settings.sparkcdc_output_kafka_topic_replication_factor)
    topics = TopicConfig(partitions=partitions, replication_factor=replication, compact=compact, config=dict(default.config))
    groups = [(group, TopicConfig(partitions=partitions if group.partitions is None else group.partitions,
                                  replication_factor=replication if group.replication_factor is None else group.replication_factor,
                                  config=dict(group.config)))
              for group in creation.groups]
    return topics, groups


def fence_key(pipeline_id: str, index: int) -> bytes:
    return f"{pipeline_id}#{index}".encode()


def produce_partition(
    batches: Iterable[EncodedBatch], link: KafkaLink, index: int, run_id: str, snapshot_batch: bool,
) -> Iterator[pa.RecordBatch]:
    """Executor side: produce the partition's records in one transaction with its fence record, or skip
    them when the fence shows this batch's task ``index`` already committed; then one row per topic."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the kafka layout produces from a Spark task: no task context here")
    query = context.getLocalProperty("sql.streaming.queryId")
    batch_text = context.getLocalProperty("streaming.sql.batchId")
    if batch_text is None:
        raise link.error("the kafka layout runs in a streaming query only (the task has no streaming.sql.batchId)", None)
    batch_id = int(batch_text)
    _ensure_topics(link, [], batch_id)  # the fence topic
    producer = link.transactional_producer(f"sparkcdc-{link.pipeline_id}-{index}", batch_id)
    try:
        check = context.attemptNumber() > 0 or context.getLocalProperty(FENCE_PROPERTY) != FENCE_CLEAR
        done = _committed(link, index, batch_id, query, run_id, snapshot_batch) if check else None
        if done is not None:
            # Drain nothing: the records were read by the attempt that committed them.
            yield _rows(index, done, skipped=True)
            return
        counts = _produce(producer, link, batches, batch_id)
        if counts:
            fence = {"batch_id": batch_id, "query_id": query, "run_id": run_id, "snapshot": snapshot_batch, "topics": counts}
            link.produce(producer, link.fence_topic, fence_key(link.pipeline_id, index), json.dumps(fence).encode(), batch_id,
                         partition=0)
            link.flush(producer, batch_id)
            link.commit(producer, batch_id)
            yield _rows(index, counts, skipped=False)
    except BaseException:
        link.abort(producer)
        producer = None
        raise
    finally:
        close_quietly(producer)


def _committed(link: KafkaLink, index: int, batch_id: int, query: str | None, run_id: str, snapshot_batch: bool) -> dict[str, int] | None:
    """The records per topic that the fence shows this task's batch committed, or None when it did not."""
    value = link.read_fence(batch_id).get(fence_key(link.pipeline_id, index))
    if value is None:
        return None
    fence = parse_fence(link, value, batch_id)
    fenced_batch, fenced_query, topics = fence["batch_id"], fence.get("query_id"), fence["topics"]
    if fenced_query != query or fenced_batch < batch_id:
        return None  # another query's (a new checkpoint), or an older batch
    if snapshot_batch and fence.get("run_id") != run_id:
        log.warning("Kafka sink %s: task %d of batch %d, an initial snapshot already committed to Kafka by another run, "
                    "runs again: the source took a new snapshot for it, so it is written again", link.pipeline_id, index, batch_id)
        return None
    level = logging.INFO if fenced_batch == batch_id else logging.WARNING
    log.log(level, "Kafka sink %s: task %d of batch %d is already committed to Kafka (fence: batch %d); skipped",
            link.pipeline_id, index, batch_id, fenced_batch)
    return topics if fenced_batch == batch_id else {}


def parse_fence(link: KafkaLink, value: bytes, batch_id: int) -> dict[str, Any]:
    """A task's fence record, with ``batch_id`` an int and ``topics`` a dict of counts; refused when malformed."""
    try:
        fence = json.loads(value)
        fence["batch_id"] = int(fence["batch_id"])
        fence["topics"] = {str(k): int(v) for k, v in fence.get("topics", {}).items()}
        return fence  # type: ignore[no-any-return]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise link.error(f"the fence topic {link.fence_topic!r} holds a record that is not a fence: {value[:200]!r}",
                         batch_id, link.fence_topic) from exc


def _produce(producer: Any, link: KafkaLink, batches: Iterable[EncodedBatch], batch_id: int) -> dict[str, int]:
    """Produce every record of ``batches`` (beginning the transaction at the first); records per topic.

    No delivery callback per record: a record that fails delivery fails the transaction, which the
    commit reports (and the task aborts)."""
    from confluent_kafka import KafkaException

    counts: Counter[str] = Counter()
    produce, poll = producer.produce, producer.poll
    sent = 0
    for batch in batches:
        size = batch.size
        if size == 0:
            continue
        if batch.key is None or batch.value is None:
            raise ValueError("the kafka layout needs each record's key and value (an encoded batch of lines only)")
        if isinstance(batch.topic, Constant):
            batch_counts: Mapping[str, int] = {batch.topic.value: size}  # type: ignore[dict-item]
            topics: Any = [batch.topic.value] * size
        else:
            topics = batch.topic
            batch_counts = Counter(topics)
        _ensure_topics(link, list(batch_counts), batch_id)
        if sent == 0:
            link.call(producer.begin_transaction, "begin the transaction", batch_id)
        partitions = batch.partition
        if isinstance(partitions, Constant) and partitions.value is None:
            for topic, key, value, headers in zip(topics, batch.key, batch.value, _header_column(batch.headers, size), strict=True):
                try:
                    if headers:
                        produce(topic, value, key, headers=headers)
                    else:
                        produce(topic, value, key)
                except BufferError:
                    link.produce(producer, topic, key, value, batch_id, headers=headers)  # waits for room
                except KafkaException as exc:
                    raise link.kafka_error(f"producing to topic {topic!r}", exc, batch_id, topic) from exc
                sent += 1
                if sent % _POLL_EVERY == 0:
                    poll(0)
        else:
            sent = _produce_to_partitions(producer, link, batch, topics, batch_id, sent)
        counts.update(batch_counts)
    return dict(counts)


def _produce_to_partitions(producer: Any, link: KafkaLink, batch: EncodedBatch, topics: Any, batch_id: int, sent: int) -> int:
    """A batch some of whose records have a partition a transform chose (``PartitionRouting``): those
    are produced to it, the others to the partitioner's choice by key. Returns ``sent`` plus the batch."""
    from confluent_kafka import KafkaException

    size = batch.size
    partitions = [batch.partition.value] * size if isinstance(batch.partition, Constant) else batch.partition
    for topic, key, value, headers, partition in zip(topics, batch.key, batch.value, _header_column(batch.headers, size),  # type: ignore[arg-type]
                                                     partitions, strict=True):
        try:
            if partition is None:
                producer.produce(topic, value, key, headers=headers)
            else:
                producer.produce(topic, value, key, partition=partition, headers=headers)
        except BufferError:
            link.produce(producer, topic, key, value, batch_id, headers=headers, partition=partition)  # waits for room
        except KafkaException as exc:
            raise link.kafka_error(f"producing to topic {topic!r} partition {partition}", exc, batch_id, topic) from exc
        sent += 1
        if sent % _POLL_EVERY == 0:
            producer.poll(0)
    return sent


#: Topics known to exist, per cluster, in this Python worker (reused across tasks): a task asks the
#: brokers only about topics it has not seen.
_KNOWN_TOPICS: dict[str, set[str]] = {}


def _ensure_topics(link: KafkaLink, topics: list[str], batch_id: int) -> None:
    """Create what is missing of ``topics`` and the pipeline's fence topic (asking the brokers only
    when this worker has not seen them all)."""
    known = _KNOWN_TOPICS.get(link.bootstrap_servers)
    if known is not None and link.fence_topic in known and all(t in known for t in topics):
        return
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(link.client())
    if known is None:
        known = _KNOWN_TOPICS[link.bootstrap_servers] = link.existing_topics(admin, batch_id)
    link.ensure_fence_topic(admin, known, batch_id)
    link.ensure_topics(admin, known, topics, batch_id)


def _header_column(headers: Any, size: int) -> Any:
    """Each record's headers as confluent-kafka takes them (a list of (name, bytes) pairs), or None."""
    if isinstance(headers, Constant):
        value = list(headers.value) if headers.value else None  # type: ignore[call-overload]
        return [value] * size
    return [list(h) if h else None for h in headers]


def _rows(index: int, counts: Mapping[str, int], *, skipped: bool) -> pa.RecordBatch:
    topics = list(counts)
    return pa.RecordBatch.from_arrays(
        [pa.array([index] * len(topics), pa.int32()), pa.array(topics, pa.string()),
         pa.array([counts[t] for t in topics], pa.int64()), pa.array([skipped] * len(topics), pa.bool_())],
        schema=PRODUCED_ARROW_SCHEMA,
    )
