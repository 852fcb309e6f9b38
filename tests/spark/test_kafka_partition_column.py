"""``kafka_writer``/``KafkaBatchWriter`` produce each record of a frame with a ``partition`` column to
that partition (null: the partitioner's choice by key), as Spark's Kafka sink reads the column."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import functions as F

from sparkcdc.spark.outputs.kafka.batch_writer import KafkaBatchWriter
from sparkcdc.spark.outputs.kafka.link import TopicConfig

from ..support.kafka_topics import consume
from .test_kafka_sink import frame, record


def test_a_partition_column_chooses_each_record_s_partition(spark: Any, kafka_broker: str, unique_name: str) -> None:
    topic = f"{unique_name}.routed"
    rows = [record(topic, f'{{"id":{n}}}', f'{{"n":{n}}}', lsn=n, commit_lsn=n) for n in range(40)]
    # records 0..29 on partition n % 3 (all keys differ, so the partitioner would scatter them otherwise), 30..39 by key
    partitioned = frame(spark, rows).withColumn(
        "partition", F.when(F.get_json_object("value", "$.n").cast("int") < 30, F.get_json_object("value", "$.n").cast("int") % 3))
    KafkaBatchWriter(kafka_broker, pipeline_id=f"p-{unique_name}", topic_config=TopicConfig(partitions=3))(partitioned, 0)
    produced = {json.loads(r["value"])["n"]: r["partition"] for r in consume(kafka_broker, [topic])}
    assert sorted(produced) == list(range(40))
    assert all(produced[n] == n % 3 for n in range(30))
    assert {produced[n] for n in range(30, 40)} <= {0, 1, 2}
