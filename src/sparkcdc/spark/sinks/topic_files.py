"""Topic directories: one JSON line per record under ``<path>/<topic>/``, exactly once.

``topic_files_writer(frame, path)`` is a ``foreachBatch`` sink. Every line is built by Spark SQL
functions and written by Spark's text writer, so records never go back from the JVM to a Python
worker: a Python sink doubled the cost of a snapshot batch, all of it in the workers. The driver's
Python only moves the finished files into place (``sparkcdc.spark.sinks.staging``).

A line is ``{"key", "value", "headers": [{"name", "value"}], "lsn", "commit_lsn", "ordinal"}``:
key and value are the Debezium JSON texts as JSON strings (value null for a tombstone), a header's
value is its bytes decoded as UTF-8 (or null). Batch N's lines are in
``<topic>/part-<N:010d>-<n:05d>.jsonl``; each file's lines are in (commit_lsn, lsn, ordinal) order,
so sorting a topic's lines by that key gives its commit order. A re-executed batch replaces its
earlier output, and an attempt that dies before publishing leaves nothing visible.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

from .staging import TopicFilesError, new_staging_dir, publish_batch

__all__ = ["TopicFilesBatchWriter", "TopicFilesError", "line_column", "local_output_path", "topic_files_writer", "topic_lines"]

log = logging.getLogger(__name__)

_ORDER = ("topic", "commit_lsn", "lsn", "ordinal")
_HEADER_LINE_TYPE = "array<struct<name: string, value: string>>"


def topic_files_writer(frame: DataFrame, path: str | Path, *, fsync: bool = True) -> DataStreamWriter:
    """``frame.writeStream`` writing topic directories under ``path``; set the checkpoint and trigger on it.

    ``frame`` has the ``postgres-cdc`` source's columns (``topic, key, value, headers, lsn,
    commit_lsn, ordinal`` are used). ``fsync=False`` skips flushing files and directories to disk
    before the batch commits: faster, but a power loss may then lose committed output.
    """
    return frame.writeStream.foreachBatch(TopicFilesBatchWriter(path, fsync=fsync))


class TopicFilesBatchWriter:
    """The ``foreachBatch`` function: stage the batch with one Spark job, then publish it."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        # Absolute: Spark resolves relative paths against the JVM's working directory, the publisher
        # against Python's; they agree today, but nothing guarantees it.
        self.output = local_output_path(path)
        self.fsync = fsync

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        staging = new_staging_dir(self.output, batch_id)
        try:
            # One action: the batch's source is read once (a second read would decode the WAL again).
            # file:// keeps Hadoop from resolving the path on another default file system.
            topic_lines(batch).write.partitionBy("topic").text(f"file://{staging}")
            published = publish_batch(self.output, staging, batch_id, fsync=self.fsync)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            try:
                staging.parent.rmdir()  # when no other attempt's directory is left in it
            except OSError:
                pass
            raise
        log.debug("batch %d published: %s", batch_id, {t: len(f) for t, f in published.files.items()})


def local_output_path(path: str | Path) -> Path:
    """The output directory as an absolute local path; ``file:`` URIs are accepted, other schemes refused.

    Publishing renames files with POSIX renames, so the output must be a local file system (or one
    mounted at the same path on every node); ``s3a://...`` would otherwise become a relative
    directory named ``s3a:``.
    """
    text = str(path)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", text)
    if scheme and scheme.group(1).lower() == "file":
        parsed = urlsplit(text)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"topic files output {text!r}: a file: URI must name a local path")
        return Path(unquote(parsed.path)).absolute()
    if scheme and len(scheme.group(1)) > 1:  # one letter: a Windows drive, not a scheme
        raise ValueError(
            f"topic files output {text!r}: only a local (or mounted shared) file system is supported, not {scheme.group(1)}:"
        )
    return Path(text).absolute()


def topic_lines(frame: DataFrame) -> DataFrame:
    """``topic, line`` rows, each partition sorted by (topic, commit_lsn, lsn, ordinal).

    Sorted before the write so that each topic's file keeps commit order and Spark's partitioned
    writer (which needs rows grouped by topic) finds them grouped already. Spark's planned write
    (``V1Writes``) adds its own sort by the partition column unless the query's ordering already
    starts with it; such a sort would make the optimizer drop this one as redundant (and it is not
    stable once it spills), losing the commit order within a topic. For a nullable string partition
    column Spark first wraps the column in ``empty2null``, and whether it still recognises this
    ordering behind that wrapper depends on the Spark version; so ``topic`` is made non-nullable
    (a null topic becomes "", which Spark stages as the null partition, ``publish_batch`` refuses)
    and nothing is wrapped.
    """
    topic = F.coalesce(F.col("topic"), F.lit("")).alias("topic")
    return (
        frame.select(topic, *_ORDER[1:], line_column().alias("line"))
        .sortWithinPartitions(*_ORDER)
        .select("topic", "line")
    )


def line_column() -> Column:
    """The JSON line of a record, in Spark SQL only.

    ``ignoreNullFields=false``: ``to_json`` leaves null fields out by default, and a tombstone's
    ``"value": null`` (or a null header value) must stay in the line.
    """
    headers = F.transform(
        F.col("headers"),
        lambda header: F.struct(header["key"].alias("name"), F.decode(header["value"], "UTF-8").alias("value")),
    )
    headers = F.coalesce(headers, F.array().cast(_HEADER_LINE_TYPE))
    record = F.struct(
        F.col("key"), F.col("value"), headers.alias("headers"), F.col("lsn"), F.col("commit_lsn"), F.col("ordinal")
    )
    return F.to_json(record, {"ignoreNullFields": "false"})
