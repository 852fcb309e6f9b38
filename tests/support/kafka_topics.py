"""Reading Kafka topics back whole, for tests and benchmarks that check what a run produced.

Reads with ``isolation.level=read_committed`` from the beginning of every partition to its end
(partition EOF), so that what a test sees is what a consumer of the topics would see once the
producing transactions committed.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from .waiting import ConditionTimeout

__all__ = ["consume"]


def consume(bootstrap: str, topics: list[str], timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every record of ``topics`` (all partitions, from the beginning to their end), in partition order.

    A partition's end is its high watermark, taken when its first EOF comes: under ``read_committed``
    an EOF comes at the last stable offset, which a transaction whose commit markers the broker has
    not written yet holds back (a broker writes them after the commit returns; on Tansu, the test
    broker, an EOF then came before a committed task's records: a flaky count in the full suite). So
    the read goes on until it has passed that watermark, as the kafka layout's own fence read does
    (``sparkcdc.spark.outputs.kafka.link.KafkaLink.read_fence``)."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    partitions = [TopicPartition(t, p, -2) for t in topics for p in sorted(metadata.topics[t].partitions)]
    settings = {"bootstrap.servers": bootstrap, "group.id": "tests-unused", "enable.auto.commit": False,
                "enable.partition.eof": True, "fetch.wait.max.ms": 50}
    consumer = Consumer({**settings, "isolation.level": "read_committed"})
    watcher = Consumer({**settings, "isolation.level": "read_uncommitted"})  # its high watermark counts open transactions
    records: list[dict[str, Any]] = []
    pending = {(tp.topic, tp.partition) for tp in partitions}
    ends: dict[tuple[str, int], int] = {}  # a partition's high watermark, once its first EOF came
    try:
        consumer.assign(partitions)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise ConditionTimeout(f"timed out reading {sorted(pending)} to their end ({ends})")
            msg = consumer.poll(0.5)
            if msg is None:
                for key in [key for key in pending if key in ends]:  # past the end without a new EOF (markers only)
                    if consumer.position([TopicPartition(*key)])[0].offset >= ends[key]:
                        pending.discard(key)
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                key = (msg.topic(), msg.partition())
                if key not in ends:
                    ends[key] = watcher.get_watermark_offsets(TopicPartition(*key), timeout=10, cached=False)[1]
                if msg.offset() >= ends[key]:
                    pending.discard(key)
                continue
            records.append({"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(), "key": msg.key(),
                            "value": msg.value(), "headers": msg.headers() or []})
    finally:
        consumer.close()
        watcher.close()
    return records
