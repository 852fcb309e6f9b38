"""Topic directories: one JSON line per record under ``<path>/<topic>/``, exactly once.

Each task writes its lines to staging files; the driver's commit of micro-batch N renames them to
``<topic>/part-<N>-<partition>.jsonl`` and removes any other ``part-<N>-*`` file a previous attempt
of the same batch left. A replayed batch therefore replaces its earlier output instead of adding to
it, and an uncommitted attempt leaves nothing visible. Lines keep the order of the partition they
come from; sorted by (``commit_lsn``, ``lsn``, ``ordinal``) they are in commit order.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

__all__ = ["TopicFilesSink"]

_STAGING = "_sparkcdc_staging"


@dataclass
class _Written(WriterCommitMessage):
    partition: int
    files: dict[str, str] = field(default_factory=dict)  # topic -> staging file


def _line(key: str | None, value: str | None, headers: list[dict] | None, lsn: int, commit_lsn: int, ordinal: int) -> bytes:
    return orjson.dumps({
        "key": key,
        "value": value,
        "headers": [{"name": h["key"], "value": None if h["value"] is None else h["value"].decode("utf-8")} for h in headers or ()],
        "lsn": lsn,
        "commit_lsn": commit_lsn,
        "ordinal": ordinal,
    }) + b"\n"


class _Writer(DataSourceStreamArrowWriter):
    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _Written:
        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        staging = self.path / _STAGING / uuid.uuid4().hex
        handles: dict[str, object] = {}
        written = _Written(partition)
        try:
            for batch in iterator:
                columns = {name: batch.column(name).to_pylist() for name in
                           ("topic", "key", "value", "headers", "lsn", "commit_lsn", "ordinal")}
                for topic, key, value, headers, lsn, commit_lsn, ordinal in zip(
                    columns["topic"], columns["key"], columns["value"], columns["headers"], columns["lsn"],
                    columns["commit_lsn"], columns["ordinal"], strict=True,
                ):
                    handle = handles.get(topic)
                    if handle is None:
                        staging.mkdir(parents=True, exist_ok=True)
                        file = staging / f"{len(handles):05d}.jsonl"
                        handle = handles[topic] = open(file, "wb")  # noqa: SIM115 - closed below
                        written.files[topic] = str(file)
                    handle.write(_line(key, value, headers, lsn, commit_lsn, ordinal))  # type: ignore[attr-defined]
        finally:
            for handle in handles.values():
                handle.flush()  # type: ignore[attr-defined]
                os.fsync(handle.fileno())  # type: ignore[attr-defined]
                handle.close()  # type: ignore[attr-defined]
        return written

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        keep: set[Path] = set()
        for message in messages:
            if not isinstance(message, _Written):
                continue
            for topic, staged in message.files.items():
                target_dir = self.path / topic
                target_dir.mkdir(parents=True, exist_ok=True)
                target = target_dir / f"part-{batchId:010d}-{message.partition:05d}.jsonl"
                os.replace(staged, target)
                keep.add(target)
        for stale in self.path.glob(f"*/part-{batchId:010d}-*.jsonl"):
            if stale not in keep:
                stale.unlink()
        _clean_staging(self.path, messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        for message in messages:
            if isinstance(message, _Written):
                for staged in message.files.values():
                    Path(staged).unlink(missing_ok=True)
        _clean_staging(self.path, messages)


def _clean_staging(path: Path, messages: list[WriterCommitMessage | None]) -> None:
    for message in messages:
        if isinstance(message, _Written):
            for staged in message.files.values():
                try:
                    Path(staged).parent.rmdir()
                except OSError:
                    pass


class TopicFilesSink(DataSource):
    """``writeStream.format("sparkcdc-topics").option("path", DIR)``."""

    @classmethod
    def name(cls) -> str:
        return "sparkcdc-topics"

    def streamWriter(self, schema: object, overwrite: bool) -> DataSourceStreamArrowWriter:  # noqa: N802
        path = self.options.get("path")
        if not path:
            raise ValueError("sparkcdc-topics: the option 'path' (the output directory) is required")
        return _Writer(path)
