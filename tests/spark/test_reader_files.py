"""The ``topic_files`` layout: the reader's tasks write the topic files, the writer publishes them.

Held to the files Spark's own writer makes from the same lines (the ``lines`` layout), byte for
byte: topics in runs and interleaved, topics Spark escapes, several partitions of one batch in
their order. Files of a task attempt that no row names (a failed or speculative attempt) are never
published and are gone after the batch; a batch without records publishes nothing; a record
without a topic is refused, as with Spark's writer. The path through ``sparkcdc run`` (a live
stream, replays after SIGKILLs) is covered by the CLI, conformance and kill tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.engine.core.encoded import Constant, EncodedBatch, joined
from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.outputs.lines import LINES_ARROW_SCHEMA, LINES_DDL_SCHEMA, line_batch, line_end
from sparkcdc.spark.outputs.topic_files.batch_writer import TopicFilesBatchWriter
from sparkcdc.spark.outputs.topic_files.output import topic_files_directory
from sparkcdc.spark.outputs.topic_files.staging import (
    STAGING_DIR,
    TopicFilesError,
    open_topic_file,
    published_files,
    task_staging_root,
)
from sparkcdc.spark.outputs.topic_files.task_files import STAGED_FILES_DDL_SCHEMA, write_topic_files

from .test_topic_files_sink import snapshot_of

TOPICS = ["srv.public.a", "srv.public.a", "odd topic=1%:#", "srv.public.a", "srv.public.b", "srv.public.b", "odd topic=1%:#"]


def _lines(topics: list[str | None], start: int = 0) -> pa.RecordBatch:
    rows = [{"topic": t, "line": f'{{"n":{start + i},"t":"{t}","pad":"{"é" * (i % 5)}"}}', "lsn": start + i,
             "commit_lsn": 100, "ordinal": start + i} for i, t in enumerate(topics)]
    return pa.RecordBatch.from_pylist(rows, schema=LINES_ARROW_SCHEMA)


def _rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    return list(zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns)), strict=True))


def test_task_written_files_are_the_files_spark_writes(spark: Any, tmp_path: Path) -> None:
    partitions = [[_lines(TOPICS), _lines(TOPICS[::-1], 10)], [_lines(TOPICS[2:], 20)]]  # two tasks, batches each
    by_spark = tmp_path / "spark"
    lines = [row for batches in partitions for batch in batches for row in _rows(batch)]
    TopicFilesBatchWriter(by_spark)(spark.createDataFrame(lines, LINES_DDL_SCHEMA).coalesce(1), 3)

    by_tasks = tmp_path / "tasks"
    named = [row for index, batches in enumerate(partitions) for batch in write_topic_files(batches, by_tasks, index)
             for row in _rows(batch)]
    assert sorted({topic for topic, _, _ in named}) == sorted(set(TOPICS))
    writer = TopicFilesBatchWriter(by_tasks)
    writer(spark.createDataFrame(named, STAGED_FILES_DDL_SCHEMA).coalesce(1), 3)
    assert writer.records_by_batch == {3: len(lines)}
    # Spark writes a topic's lines of one task into one file: the same lines, the same order.
    assert _by_topic(by_tasks) == _by_topic(by_spark)
    assert not (by_tasks / STAGING_DIR).exists()


def _ended(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` as the stream's reader makes it for the topic files: each line ending with its
    newline, said by the batch (``EncodedBatch.line_end``), laid out in one buffer as ``line_batch`` does."""
    texts = [(line + "\n").encode() for line in batch.column(1).to_pylist()]
    unused = Constant(None)
    encoded = EncodedBatch(batch.num_rows, batch.column(0).to_pylist(), None, None, unused, unused, unused, unused,
                           batch.column(2).to_pylist(), batch.column(3).to_pylist(), batch.column(4).to_pylist(), unused, unused,
                           unused, joined(b"".join(texts), [len(t) for t in texts]), b"\n")
    return line_batch(encoded)


def test_lines_ending_with_their_newline_are_written_as_they_are(tmp_path: Path) -> None:
    """The stream's reader ends each topic-files line with its newline, so that a run of one topic's
    lines is written as a slice of the batch's buffer: the files hold the same bytes."""
    partitions = [[_lines(TOPICS), _lines(TOPICS[::-1], 10)], [_lines(TOPICS[2:], 20)]]
    assert line_end(_ended(partitions[0][0])) == b"\n" and line_end(partitions[0][0]) == b""
    files = {}
    for name, convert in (("joined", lambda b: b), ("ended", _ended)):
        named = [row for index, batches in enumerate(partitions)
                 for batch in write_topic_files([convert(b) for b in batches], tmp_path / name, index) for row in _rows(batch)]
        files[name] = {(topic, Path(path).name): Path(path).read_bytes() for topic, path, _ in named}
    assert files["ended"] == files["joined"] and len(files["joined"]) == 6
    assert files["joined"]["srv.public.a", "part-00000.jsonl"].count(b"\n") == 3 + 3


def _by_topic(output: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name, data in snapshot_of(output).items():
        topic = name.split("/")[0]
        found[topic] = found.get(topic, b"") + data
    return found


def test_files_no_row_names_are_never_published(spark: Any, tmp_path: Path) -> None:
    output = tmp_path / "out"
    dead = [row for batch in write_topic_files([_lines(["srv.public.a"] * 3)], output, 0) for row in _rows(batch)]
    live = [row for batch in write_topic_files([_lines(["srv.public.a"] * 2, 50)], output, 0) for row in _rows(batch)]
    assert Path(dead[0][1]).exists() and task_staging_root(output).exists()
    writer = TopicFilesBatchWriter(output)
    writer(spark.createDataFrame(live, STAGED_FILES_DDL_SCHEMA), 0)  # the committed job's rows name only its own files
    published = snapshot_of(output)
    assert list(published) == ["srv.public.a/part-0000000000-00000.jsonl"]
    assert published["srv.public.a/part-0000000000-00000.jsonl"].count(b"\n") == 2
    assert not Path(dead[0][1]).exists() and not (output / STAGING_DIR).exists()

    writer(spark.createDataFrame([], STAGED_FILES_DDL_SCHEMA), 1)  # a batch without records: nothing new
    assert snapshot_of(output) == published and writer.records_by_batch[1] == 0


def test_a_record_without_a_topic_is_refused(spark: Any, tmp_path: Path) -> None:
    output = tmp_path / "out"
    named = [row for batch in write_topic_files([_lines(["srv.public.a", None])], output, 0) for row in _rows(batch)]
    with pytest.raises((TopicFilesError, PySparkException), match="without a topic"):
        TopicFilesBatchWriter(output)(spark.createDataFrame(named, STAGED_FILES_DDL_SCHEMA), 0)
    assert not list(output.glob("*/part-*"))


def test_the_directory_without_the_layout_is_refused() -> None:
    """No silent no-op: the directory is only honoured by the topic_files layout."""
    from sparkcdc.spark.source import PostgresCdcDataSource

    connector = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"}
    with pytest.raises(ConfigurationError, match="sparkcdc.output.topic.files.*layout is lines"):
        PostgresCdcDataSource({**connector, "sparkcdc.output.layout": "lines", "sparkcdc.output.topic.files": "/tmp/x"}).schema()
    with pytest.raises(ConfigurationError, match="sparkcdc.output.topic.files"):
        PostgresCdcDataSource({**connector, "sparkcdc.output.layout": "topic_files"}).schema()
    assert PostgresCdcDataSource({**connector, "sparkcdc.output.layout": "lines"}).schema().startswith("topic string, line")


def test_compressed_topic_files_hold_the_same_lines(spark: Any, tmp_path: Path) -> None:
    """``sparkcdc.output.topic.files.compression=zstd``: each file is one zstd frame of the very
    lines the plain layout writes, published as ``.jsonl.zst``; Spark reads them as text; a batch
    published again (a replay) replaces its compressed files, and a plain replay of it replaces them too."""
    partitions = [[_lines(TOPICS), _lines(TOPICS[::-1], 10)], [_lines(TOPICS[2:], 20)]]
    plain, packed = tmp_path / "plain", tmp_path / "zstd"
    for output, compression in ((plain, "none"), (packed, "zstd")):
        named = [row for index, batches in enumerate(partitions)
                 for batch in write_topic_files(batches, output, index, compression=compression) for row in _rows(batch)]
        TopicFilesBatchWriter(output)(spark.createDataFrame(named, STAGED_FILES_DDL_SCHEMA).coalesce(1), 3)
    files = published_files(packed)
    assert files and all(path.name.endswith(".jsonl.zst") for path in files)
    assert [path.name.removesuffix(".zst") for path in files] == [path.name for path in published_files(plain)]
    for zst in files:
        frame = zst.read_bytes()
        assert frame[:4] == b"\x28\xb5\x2f\xfd", "a zstd frame"
        with open_topic_file(zst) as handle:
            assert handle.read() == (plain / zst.parent.name / zst.name.removesuffix(".zst")).read_bytes()
    read_by_spark = spark.read.text(str(packed / "srv.public.a")).count()
    assert read_by_spark == sum(path.read_bytes().count(b"\n") for path in (plain / "srv.public.a").iterdir()) > 0

    replay = [row for batch in write_topic_files([_lines(["srv.public.a"] * 2, 90)], packed, 0) for row in _rows(batch)]
    TopicFilesBatchWriter(packed)(spark.createDataFrame(replay, STAGED_FILES_DDL_SCHEMA), 3)
    assert [f"{p.parent.name}/{p.name}" for p in published_files(packed)] == ["srv.public.a/part-0000000003-00000.jsonl"]


def test_compression_is_refused_where_nothing_compresses(tmp_path: Path) -> None:
    """No silent no-op: only the reader-written topic files are compressed."""
    from sparkcdc.spark.source import PostgresCdcDataSource

    connector = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "p"}
    with pytest.raises(ConfigurationError, match="sparkcdc.output.topic.files.compression.*layout is lines"):
        PostgresCdcDataSource({**connector, "sparkcdc.output.layout": "lines", "sparkcdc.output.topic.files.compression": "zstd"}).schema()
    assert PostgresCdcDataSource({**connector, "sparkcdc.output.layout": "lines",
                                  "sparkcdc.output.topic.files.compression": "none"}).schema().startswith("topic string, line")
    with pytest.raises(ConfigurationError, match="sparkcdc.output.topic.files.compression"):
        list(write_topic_files([_lines(["srv.public.a"])], tmp_path, 0, compression="gzip"))


def test_the_layout_needs_its_directory() -> None:
    config = ConnectorConfig({"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv",
                              "sparkcdc.output.layout": "topic_files"})
    with pytest.raises(ConfigurationError, match="sparkcdc.output.topic.files"):
        topic_files_directory(config)


def test_a_failed_write_fails_the_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writes run in a thread of their own; its failure (a full disk, say) is the task's."""
    from sparkcdc.spark.outputs.topic_files import task_files as reader_files

    class FullDisk:
        def __init__(self, path: Any, mode: str) -> None:
            self.closed = False

        def write(self, data: Any) -> int:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(reader_files, "open", FullDisk, raising=False)
    batches = [_lines(["srv.public.a"] * 3, 10 * i) for i in range(10)]  # more runs than the writer's queue holds
    from sparkcdc.spark.outputs.topic_files.staging import TopicFilesError

    with pytest.raises(TopicFilesError, match="No space left") as failure:  # naming where, as the project's error
        list(write_topic_files(batches, tmp_path / "out", 0))
    assert str(tmp_path / "out" / "_sparkcdc_staging" / "tasks") in str(failure.value)
    assert isinstance(failure.value.__cause__, OSError) and failure.value.__cause__.errno == 28
