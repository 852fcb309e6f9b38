"""The training run that makes the driver JVM's class archive, in a Python process of its own.

Why a module of its own: :func:`sparkcdc.spark.launch.class_archive.build` runs it as
``python -m sparkcdc.spark.launch.archive_training PARTIAL [key=value ...]`` (with the archive
turned off): it starts a driver JVM through the same path every sparkcdc session takes
(:mod:`.spark_session`), with ``-XX:ArchiveClassesAtExit=PARTIAL``, has it do what sparkcdc's
driver does (Python data source planning, a streaming micro-batch into ``foreachBatch``, Arrow
exchanges with Python workers, Parquet, a shuffle), and ends it, so that it writes the classes it
loaded. What the archive is and when a session uses it is :mod:`.class_archive`'s, which never
starts a session itself.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .class_archive import ClassArchiveError
from .spark_defaults import JAVA_OPTIONS, spark_defaults

__all__ = ["train"]


def train(partial: str, settings: dict[str, str]) -> None:
    """The training run, in this process: its driver JVM writes the archive to ``partial`` as it exits."""
    from pyspark.core.context import SparkContext

    from .spark_session import spark_session

    own = settings.get(JAVA_OPTIONS, spark_defaults().get(JAVA_OPTIONS, ""))
    settings[JAVA_OPTIONS] = f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off -Xlog:cds+dynamic=off {own}".strip()
    spark = spark_session("local[2]", app_name="sparkcdc-class-archive", extra=settings)
    with tempfile.TemporaryDirectory(prefix="sparkcdc-class-archive-") as work:
        _exercise(spark, Path(work))
    spark.stop()
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is None:
        raise ClassArchiveError("the driver JVM was not started by this process (spark-submit?): no archive can be made here")
    process.stdin.close()  # PySpark's gateway JVM exits when its standard input ends, and dumps the archive then
    code = process.wait(timeout=300)
    if code not in (0, None):
        raise ClassArchiveError(f"the driver JVM exited with {code} while writing {partial}")


def _exercise(spark: object, work: Path) -> None:
    from pyspark.sql import SparkSession

    from .. import source

    assert isinstance(spark, SparkSession)
    source.register(spark)
    training = _training_source()
    spark.dataSource.register(training)
    frame = spark.range(0, 100_000, numPartitions=2).selectExpr("id", "cast(id % 97 as string) AS k", "repeat('x', 64) AS v")
    passed = frame.mapInArrow(lambda batches: batches, frame.schema)
    passed.groupBy("k").count().collect()
    passed.write.parquet(str(work / "parquet"))
    spark.read.parquet(str(work / "parquet")).count()

    def each_batch(batch: object, batch_id: int) -> None:
        batch.write.mode("append").parquet(str(work / "stream"))  # type: ignore[attr-defined]

    query = (spark.readStream.format(training.name()).load().writeStream.foreachBatch(each_batch)
             .option("checkpointLocation", str(work / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    spark.read.parquet(str(work / "stream")).count()


def _training_source() -> type:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

    class _Range(InputPartition):
        def __init__(self, start: int, end: int) -> None:
            self.start, self.end = start, end

    class _Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def initialOffset(self) -> dict:  # noqa: N802 - Spark's method names
            return {"at": 0}

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
            pass

        def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # noqa: N802
            return {"at": 2_000}

        def partitions(self, start: dict, end: dict) -> list:
            middle = (start["at"] + end["at"]) // 2
            return [_Range(start["at"], middle), _Range(middle, end["at"])]

        def read(self, partition: InputPartition) -> Iterator[tuple]:
            assert isinstance(partition, _Range)
            for value in range(partition.start, partition.end):
                yield (value, f"row {value}")

        def commit(self, end: dict) -> None:
            pass

    class TrainingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "sparkcdc-class-archive-training"

        def schema(self) -> str:
            return "id long, text string"

        def streamReader(self, schema: object) -> DataSourceStreamReader:  # noqa: N802
            return _Reader()

    return TrainingSource


if __name__ == "__main__":
    train(sys.argv[1], dict(argument.split("=", 1) for argument in sys.argv[2:]))
