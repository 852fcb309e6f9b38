"""The ``topic_files`` output's object: its settings, its reader side (the task writes the files,
:mod:`.task_files`) and its driver side (the batch writer stages and publishes them, :mod:`.batch_writer`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base import BatchWriter, Output, OwnProperty, PlannedPartition, ignored_when
from ..decoding import DECODING_PROPERTIES, decoded_pieces, decoding_processes, warn_idle_chunk_messages

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

    from ....debezium.config import ConnectorConfig

__all__ = ["TopicFilesOutput", "topic_files_directory"]

_WRITES = "only the topic_files layout writes topic files from the reader"


class TopicFilesOutput(Output):
    """The reader tasks write each record's topic-files line to one file per topic themselves, and
    the rows name the files (``topic, file, records``); the driver's writer publishes them."""

    name = "topic_files"
    own_properties = (
        OwnProperty("sparkcdc.output.topic.files", _WRITES),
        OwnProperty("sparkcdc.output.topic.files.compression", _WRITES, ignored_when("none")),
        *DECODING_PROPERTIES,
    )

    def schema(self) -> str:
        from .task_files import STAGED_FILES_DDL_SCHEMA

        return STAGED_FILES_DDL_SCHEMA

    def check(self, config: ConnectorConfig) -> None:
        topic_files_directory(config)  # refused here, on the driver, when absent
        warn_idle_chunk_messages(config, self.decoding_processes(config))

    def decoding_processes(self, config: ConnectorConfig) -> int:
        """With ``auto``, several only for zstd files, where decoding is the cost (measured:
        docs/performance.md, "Decoding processes by default"); with plain files the bytes written
        are, and a second process competes with them for the cores."""
        return decoding_processes(config, pays=_compression(config) != "none")

    def batch_writer(self, config: ConnectorConfig) -> BatchWriter:
        from .batch_writer import TopicFilesBatchWriter

        return TopicFilesBatchWriter(topic_files_directory(config))

    def record_count(self) -> Column:
        from pyspark.sql import functions as F

        return F.sum("records")  # a row names a file of ``records`` records

    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        decoded = _decoded_elsewhere(self, config, partition)
        if decoded is not None:
            return decoded
        from ....engine.work import read_work
        from ..lines import line_batch
        from .task_files import write_topic_files

        # The lines end with their newline as the reader builds them: a run of them is then
        # written as the buffer it already is (.task_files).
        batches = read_work(config, partition.work, run_id=partition.run_id, lines=True, line_end=b"\n")
        return write_topic_files(map(line_batch, batches), topic_files_directory(config), partition.index,
                                 compression=_compression(config))


def topic_files_directory(config: Any) -> Path:
    """Where the reader tasks write: ``sparkcdc.output.topic.files``, required."""
    from ....errors import ConfigurationError

    location = config.settings.sparkcdc_output_topic_files
    if not location:
        raise ConfigurationError("required with sparkcdc.output.layout=topic_files: the topic files directory the reader "
                                 "tasks write into", prop="sparkcdc.output.topic.files")
    return Path(location)


def _compression(config: ConnectorConfig) -> str:
    return config.settings.sparkcdc_output_topic_files_compression or "none"


def _decoded_elsewhere(output: Output, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch] | None:
    """A stream range decoded by the output's processes (engine/parallel_stream.py) and written from
    their bytes; ``None`` where it is read here."""
    from ....engine.work import serializer_for
    from .task_files import TopicRunEncoder, write_topic_runs

    compression = _compression(config)
    placed = decoded_pieces(output, config, partition, lambda: TopicRunEncoder(serializer_for(config), compression))
    return None if placed is None else write_topic_runs(placed, topic_files_directory(config), partition.index,
                                                        compression=compression)
