"""The ``postgres-cdc`` streaming data source (PySpark's Python Data Source API).

A thin adapter: the driver-side callbacks go to :class:`~sparkcdc.engine.planner.ConnectorPlanner`,
the executor-side ``read`` to the engine's snapshot-chunk and stream-range readers, whose records
become Arrow batches. Usage::

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

from ..outputs.columns import DDL_SCHEMA, to_arrow
from ..outputs.lines import LINES_DDL_SCHEMA, line_batch
from .options import config_from_options

__all__ = ["PostgresCdcDataSource", "register"]


class _Partition(InputPartition):
    """A snapshot chunk or a stream range, with the configuration the executor needs."""

    def __init__(self, properties: Mapping[str, str], work: Any, run_id: str, index: int = 0, snapshot_batch: bool = False) -> None:
        super().__init__(work)
        self.properties = dict(properties)
        self.work = work
        self.run_id = run_id
        self.index = index  # the partition's place in its batch
        self.snapshot_batch = snapshot_batch  # the batch reads an initial (or blocking) snapshot's chunks


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
        return [_Partition(self._config.raw, work, planner.run_id, index, snapshot_batch) for index, work in enumerate(pieces)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(partition)  # type: ignore[arg-type]

    def commit(self, end: dict) -> None:
        self.planner.commit(end)

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.stop()
            self._planner = None


def read_partition(partition: _Partition) -> Iterator[Any]:
    """Executor side: the partition's records as Arrow record batches, read by the engine's one
    reader of planned work (the same the in-process connector uses)."""
    from ...debezium.config import ConnectorConfig
    from ...engine.work import read_work
    from ...gc_policy import use_throughput_gc

    use_throughput_gc()  # this Python worker does nothing but turn changes into records
    config = ConnectorConfig(partition.properties)
    layout = config.get("sparkcdc.output.layout")
    if layout == "changes":
        return _change_blocks(config, partition)
    if layout == "topic_files":
        decoded = _decoded_elsewhere(config, partition)
        if decoded is not None:
            return decoded
    lines = layout in ("lines", "topic_files")
    # The topic files' lines end with their newline as the reader builds them: a run of them is then
    # written as the buffer it already is (spark/sinks/reader_files.py).
    batches = read_work(config, partition.work, run_id=partition.run_id, lines=lines, line_end=b"\n" if layout == "topic_files" else b"")
    if layout == "topic_files":
        from ..outputs.topic_files.task_files import write_topic_files

        return write_topic_files((line_batch(batch) for batch in batches), _topic_files_output(config), partition.index,
                                 compression=config.get("sparkcdc.output.topic.files.compression") or "none")
    if layout == "kafka":
        from ..outputs.kafka.task_producer import kafka_link, produce_partition

        return produce_partition(batches, kafka_link(config), partition.index, partition.run_id, partition.snapshot_batch)
    return (line_batch(batch) if lines else to_arrow(batch) for batch in batches)


def _decoded_elsewhere(config: Any, partition: _Partition) -> Iterator[Any] | None:
    """A stream range of the ``topic_files`` layout decoded by ``sparkcdc.stream.decode.processes``
    processes (engine/parallel_stream.py) and written from their bytes; ``None`` where it is read here."""
    from ...engine.parallel_stream import check_parallel_decoding
    from ...engine.planner import StreamRange

    processes = check_parallel_decoding(config)
    if processes == 1 or not isinstance(partition.work, StreamRange):
        return None
    from ...engine.work import read_stream_encoded, serializer_for
    from ..outputs.topic_files.task_files import TopicRunEncoder, write_topic_runs

    compression = config.get("sparkcdc.output.topic.files.compression") or "none"
    placed = read_stream_encoded(config, partition.work, run_id=partition.run_id, processes=processes,
                                 encoder=TopicRunEncoder(serializer_for(config), compression))
    return None if placed is None else write_topic_runs(placed, _topic_files_output(config), partition.index, compression=compression)


def _topic_files_output(config: Any) -> Any:
    """Where the ``topic_files`` layout's readers write: ``sparkcdc.output.topic.files``, required."""
    from pathlib import Path

    from ...errors import ConfigurationError

    location = config.get("sparkcdc.output.topic.files")
    if not location:
        raise ConfigurationError("required with sparkcdc.output.layout=topic_files: the topic files directory the reader "
                                 "tasks write into", prop="sparkcdc.output.topic.files")
    return Path(location)


def _change_blocks(config: Any, partition: _Partition) -> Iterator[Any]:
    """The ``changes`` layout: a snapshot chunk's rows typed a run at a time, other work's records."""
    from ...engine.snapshot_plan import SnapshotChunk
    from ...engine.snapshot_reader import read_chunk_columns
    from ...engine.work import read_work_records
    from ..outputs.changes.blocks import change_blocks, chunk_blocks

    work = partition.work
    if isinstance(work, SnapshotChunk):
        return chunk_blocks(read_chunk_columns(config, work, run_id=partition.run_id), config, kind=work.kind)
    return change_blocks(read_work_records(config, work, run_id=partition.run_id), config)


class PostgresCdcDataSource(DataSource):
    """``spark.readStream.format("postgres-cdc")``: Debezium PostgreSQL connector properties as options."""

    @classmethod
    def name(cls) -> str:
        return "postgres-cdc"

    def schema(self) -> str:
        from ...engine.parallel_stream import check_parallel_decoding
        from ...engine.stream_slots import check_parallel_streaming

        config = config_from_options(self.options)
        layout = config.get("sparkcdc.output.layout")
        _refuse_other_layouts_settings(config, layout)
        _warn_unused_topic_creation(config, layout)
        _warn_unwritten_partitions(config, layout)
        check_parallel_streaming(config)  # refused on the driver as the query is built, not in the planner's worker
        check_parallel_decoding(config)
        if layout == "changes":
            from ..outputs.changes.blocks import CHANGES_DDL_SCHEMA

            return CHANGES_DDL_SCHEMA
        if layout == "topic_files":
            from ..outputs.topic_files.task_files import STAGED_FILES_DDL_SCHEMA

            _topic_files_output(config)  # refused here, on the driver, when absent
            return STAGED_FILES_DDL_SCHEMA
        if layout == "kafka":
            from ..outputs.kafka.task_producer import PRODUCED_DDL_SCHEMA, kafka_link

            kafka_link(config)  # refused here, on the driver, when incomplete
            return PRODUCED_DDL_SCHEMA
        return LINES_DDL_SCHEMA if layout == "lines" else DDL_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return PostgresCdcStreamReader(self.options)


def _refuse_other_layouts_settings(config: Any, layout: str | None) -> None:
    """A layout's own settings given with another layout would do nothing: refused, naming the property."""
    from ...errors import ConfigurationError

    for prop in ("sparkcdc.output.topic.files", "sparkcdc.output.topic.files.compression"):
        value = config.raw.get(prop)
        if layout != "topic_files" and value and not (prop.endswith("compression") and value.strip().lower() == "none"):
            raise ConfigurationError(f"only the topic_files layout writes topic files from the reader, and the layout is "
                                     f"{layout}: drop the property or set sparkcdc.output.layout=topic_files", prop=prop)
    given = sorted(name for name, value in config.raw.items() if name.startswith("sparkcdc.output.kafka.") and value)
    if layout != "kafka" and given:
        raise ConfigurationError(f"only the kafka layout produces to Kafka from the reader, and the layout is {layout}: drop "
                                 f"the property or set sparkcdc.output.layout=kafka", prop=given[0])


def _warn_unused_topic_creation(config: Any, layout: str | None) -> None:
    """Kafka Connect's ``topic.creation.*`` in a Debezium configuration read with a layout that creates
    no topics: reported (a configuration brought from Debezium often carries them), not refused."""
    from ...debezium.config import report_warnings
    from ...debezium.topic_creation import unused_without_kafka

    unused = unused_without_kafka(config.raw, layout)
    if unused:
        config.warnings.extend(unused)
        report_warnings(config)


def _warn_unwritten_partitions(config: Any, layout: str | None) -> None:
    """A transform that chooses Kafka partitions (``PartitionRouting``, the outbox router's
    ``partition`` placement) with a layout that writes none: reported, naming the transform."""
    from ...debezium.config import report_warnings

    if layout == "kafka":
        return
    choosing = [step.alias for step in config.transforms.steps if getattr(step.transform, "chooses_partitions", False)]
    if choosing:
        config.warnings.append(f"transforms.{choosing[0]}: chooses each record's Kafka partition, which only "
                               f"sparkcdc.output.layout=kafka writes; the {layout} layout has no partitions, so it has no effect")
        report_warnings(config)


def register(spark: SparkSession) -> None:
    spark.dataSource.register(PostgresCdcDataSource)
