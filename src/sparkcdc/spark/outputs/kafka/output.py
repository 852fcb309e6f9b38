"""The ``kafka`` output's object: its settings, its reader side (each task produces its records in
a transaction of its own, :mod:`.task_producer`) and its driver side (the batch writer that runs the
tasks and collects what they committed, :mod:`.task_commits`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..base import BatchWriter, Output, OwnProperty, PlannedPartition

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

    from ....debezium.config import ConnectorConfig

__all__ = ["KafkaOutput"]


class KafkaOutput(Output):
    """The reader tasks produce their records to Kafka exactly once themselves, and the rows count
    them per task and topic (``index, topic, records, skipped``)."""

    name = "kafka"
    own_properties = (OwnProperty("sparkcdc.output.kafka.", "only the kafka layout produces to Kafka from the reader"),)
    creates_topics = True
    writes_partitions = True

    def schema(self) -> str:
        from .task_producer import PRODUCED_DDL_SCHEMA

        return PRODUCED_DDL_SCHEMA

    def check(self, config: ConnectorConfig) -> None:
        from .task_producer import kafka_link

        kafka_link(config)  # refused here, on the driver, when incomplete

    def batch_writer(self, config: ConnectorConfig) -> BatchWriter:
        from .task_commits import ReaderKafkaBatchWriter
        from .task_producer import kafka_link

        return ReaderKafkaBatchWriter(kafka_link(config))

    def record_count(self) -> Column:
        from pyspark.sql import functions as F

        return F.sum("records")  # the records a task produced to a topic

    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        from ....engine.work import read_work
        from .task_producer import kafka_link, produce_partition

        batches = read_work(config, partition.work, run_id=partition.run_id)
        return produce_partition(batches, kafka_link(config), partition.index, partition.run_id, partition.snapshot_batch)
