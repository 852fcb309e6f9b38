"""The ``topic_files`` output's object: its settings, its reader side (the task writes the files,
:mod:`.task_files`) and its driver side (the batch writer stages and publishes them, :mod:`.batch_writer`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base import BatchWriter, Output, OwnProperty, PlannedPartition, ignored_when

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

    from ....debezium.config import ConnectorConfig

__all__ = ["AUTO_PROCESSES_MAX", "TopicFilesOutput", "decoding_processes", "topic_files_directory"]

log = logging.getLogger(__name__)

_WRITES = "only the topic_files layout writes topic files from the reader"


def _one_process(config: ConnectorConfig, name: str, value: str) -> bool:
    return config.setting(name) in (None, 1)  # auto is 1 where no process writes topic files


class TopicFilesOutput(Output):
    """The reader tasks write each record's topic-files line to one file per topic themselves, and
    the rows name the files (``topic, file, records``); the driver's writer publishes them."""

    name = "topic_files"
    own_properties = (
        OwnProperty("sparkcdc.output.topic.files", _WRITES),
        OwnProperty("sparkcdc.output.topic.files.compression", _WRITES, ignored_when("none")),
        OwnProperty("sparkcdc.stream.decode.processes", "decodes in processes that write topic files' bytes, which only the "
                    "topic_files layout does", _one_process),
        OwnProperty("sparkcdc.stream.decode.chunk.messages", "sizes what each decoding process is given, and only the "
                    "topic_files layout decodes in processes"),
    )

    def schema(self) -> str:
        from .task_files import STAGED_FILES_DDL_SCHEMA

        return STAGED_FILES_DDL_SCHEMA

    def check(self, config: ConnectorConfig) -> None:
        topic_files_directory(config)  # refused here, on the driver, when absent
        if config.given("sparkcdc.stream.decode.chunk.messages") and decoding_processes(config) == 1:
            log.warning(
                "sparkcdc.stream.decode.chunk.messages has no effect: sparkcdc.stream.decode.processes=auto decodes in one "
                "process here (plain topic files, or a setting several processes cannot follow); set "
                "sparkcdc.stream.decode.processes to a number to decode in several")

    def batch_writer(self, config: ConnectorConfig) -> BatchWriter:
        from .batch_writer import TopicFilesBatchWriter

        return TopicFilesBatchWriter(topic_files_directory(config))

    def record_count(self) -> Column:
        from pyspark.sql import functions as F

        return F.sum("records")  # a row names a file of ``records`` records

    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        decoded = _decoded_elsewhere(config, partition)
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


#: The most decoding processes ``sparkcdc.stream.decode.processes=auto`` starts (each holds a
#: connection-free decoder and its buffers; past the cores that encode, more only wait).
AUTO_PROCESSES_MAX = 4


def decoding_processes(config: ConnectorConfig) -> int:
    """The processes that decode a stream range: ``sparkcdc.stream.decode.processes`` as given, or for
    ``auto`` the cores this executor process may run on (at most :data:`AUTO_PROCESSES_MAX`) where
    they pay: with zstd topic files (measured: docs/performance.md, "Decoding processes by default"),
    and where the configuration allows several (the rules of
    :mod:`sparkcdc.debezium.property_rules`, which an explicit number would break with an error).
    A stream batch is one task, alone on its executor's other cores while it runs."""
    import os

    from ....debezium.config import ConnectorConfig as Config
    from ....errors import ConfigurationError

    given = config.settings.sparkcdc_stream_decode_processes
    if given is not None:
        return int(given)
    if _compression(config) == "none":
        return 1
    cores = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, AUTO_PROCESSES_MAX)
    if cores < 2:
        return 1
    try:
        Config({**config.raw, "sparkcdc.stream.decode.processes": str(cores)})
    except ConfigurationError:
        return 1  # a rule several processes would break (signals, schema changes, post processors): one
    return cores


def _decoded_elsewhere(config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch] | None:
    """A stream range decoded by :func:`decoding_processes` processes (engine/parallel_stream.py)
    and written from their bytes; ``None`` where it is read here."""
    from ....engine.planner import StreamRange

    processes = decoding_processes(config)
    if processes == 1 or not isinstance(partition.work, StreamRange):
        return None
    from ....engine.work import read_stream_encoded, serializer_for
    from .task_files import TopicRunEncoder, write_topic_runs

    compression = _compression(config)
    placed = read_stream_encoded(config, partition.work, run_id=partition.run_id, processes=processes,
                                 encoder=TopicRunEncoder(serializer_for(config), compression))
    return None if placed is None else write_topic_runs(placed, topic_files_directory(config), partition.index,
                                                        compression=compression)
