"""The ``postgres-cdc`` streaming data source (PySpark's Python Data Source API).

A thin adapter: the driver-side callbacks go to :class:`~sparkcdc.engine.planner.ConnectorPlanner`,
the executor-side ``read`` to the output the configuration chooses (:mod:`sparkcdc.spark.outputs`),
which reads the partition's planned work with the engine's readers and makes its rows. Usage::

    from sparkcdc.spark.source import register
    register(spark)
    df = spark.readStream.format("postgres-cdc").options(**debezium_properties).load()
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

from ..outputs import check_output_settings, output_for
from .options import config_from_options
from .partition import WorkPartition

__all__ = ["PostgresCdcDataSource", "PostgresCdcStreamReader", "read_partition", "register"]


class PostgresCdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]) -> None:
        # Spark also builds readers where no driver work happens (planning, executors): connect lazily.
        self._options = dict(options)
        self._config = config_from_options(self._options)
        self._planner: Any = None

    @property
    def planner(self) -> Any:
        if self._planner is None:
            from ...engine.planner import ConnectorPlanner

            self._planner = ConnectorPlanner(self._config)
        return self._planner

    def initialOffset(self) -> dict:  # noqa: N802 - Spark's method names
        return self.planner.initial_offset()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self.planner.prepare_for_available_now()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # noqa: N802
        return self.planner.latest_offset(start)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        from ...engine.snapshot_plan import SnapshotChunk

        planner = self.planner
        pieces = planner.partitions(start, end)
        snapshot_batch = any(isinstance(work, SnapshotChunk) for work in pieces)
        return [WorkPartition(self._config.raw, work, planner.run_id, index, snapshot_batch) for index, work in enumerate(pieces)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(partition)  # type: ignore[arg-type]

    def commit(self, end: dict) -> None:
        self.planner.commit(end)

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.stop()
            self._planner = None


def read_partition(partition: WorkPartition) -> Iterator[Any]:
    """Executor side: the partition's rows as Arrow record batches, made by the configuration's
    output from the engine's one reader of planned work (the same the in-process connector uses)."""
    from ...debezium.config import ConnectorConfig
    from ...gc_policy import use_throughput_gc

    use_throughput_gc()  # this Python worker does nothing but turn changes into records
    config = ConnectorConfig(partition.properties)
    return output_for(config).read(config, partition)


class PostgresCdcDataSource(DataSource):
    """``spark.readStream.format("postgres-cdc")``: Debezium PostgreSQL connector properties as options."""

    @classmethod
    def name(cls) -> str:
        return "postgres-cdc"

    def schema(self) -> str:
        from ...engine.core.stream_slots import check_parallel_streaming

        config = config_from_options(self.options)
        output = check_output_settings(config)
        check_parallel_streaming(config)  # refused on the driver as the query is built, not in the planner's worker
        output.check(config)
        return output.schema()

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return PostgresCdcStreamReader(self.options)


def register(spark: SparkSession) -> None:
    spark.dataSource.register(PostgresCdcDataSource)
