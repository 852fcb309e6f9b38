"""What sparkcdc asks of a session it runs on, classic or Spark Connect alike.

Why a module of its own: a Spark Connect session (a client: no JVM, SparkContext or py4j gateway in
this process) answers some questions another way than a classic one: whether it is one, its
default parallelism, how a job is described. The appliers, the runner, the pipelines and the start-up
each ask them; none of them needs :mod:`sparkcdc.spark.launch`, which starts sessions. Importing
this module imports no Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["default_parallelism", "is_connect", "job_description"]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` (a session) is a Spark Connect client, without importing Spark Connect's
    modules (they need grpc) when it is not one."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def default_parallelism(spark: Any) -> int:
    """The scheduler's default parallelism (the cores of the executors, in practice).

    A Spark Connect client has no SparkContext to ask: there it is ``spark.default.parallelism`` when
    set, else the partitions of a range read without a partition count (Spark cuts a leaf into the
    default parallelism), found by a small job.
    """
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    from pyspark.sql import functions as F

    partitions = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p"))  # not inside an aggregate: nondeterministic
    row = partitions.agg(F.countDistinct("p").alias("n")).first()
    return max(1, int(row["n"])) if row is not None else 1


@contextmanager
def job_description(spark: Any, description: str, tag: str) -> Iterator[None]:
    """Jobs started in the block are described as ``description`` (the UI and the event log show it);
    the thread's description before is restored. A Spark Connect client cannot set a job's
    description: its jobs carry the tag ``tag`` instead (letters, digits and dashes)."""
    if is_connect(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    context = spark.sparkContext
    before = context.getLocalProperty("spark.job.description")
    context.setJobDescription(description)
    try:
        yield
    finally:
        context.setJobDescription(before)
