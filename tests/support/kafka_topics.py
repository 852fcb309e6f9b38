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
    """Every record of ``topics`` (all partitions, from the beginning to partition EOF), in partition order."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    partitions = [TopicPartition(t, p, -2) for t in topics for p in sorted(metadata.topics[t].partitions)]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tests-unused", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": "read_committed", "fetch.wait.max.ms": 50})
    records: list[dict[str, Any]] = []
    pending = {(tp.topic, tp.partition) for tp in partitions}
    try:
        consumer.assign(partitions)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise ConditionTimeout(f"timed out reading {sorted(pending)} to their end")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard((msg.topic(), msg.partition()))
                continue
            records.append({"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(), "key": msg.key(),
                            "value": msg.value(), "headers": msg.headers() or []})
    finally:
        consumer.close()
    return records
