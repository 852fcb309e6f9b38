"""Topic files written by the task that reads the changes: the ``topic_files`` output layout.

Why: measured (benchmarks/RESULTS.md, stream 2026-11-25), a streaming micro-batch written through
Spark moved every line's bytes (3.7 KB each with schemas) from the Python reader into the JVM's
Arrow buffers, into its rows and into its text writer: the JVM's task thread spent 10 s of CPU per
million records on it and the reader sat blocked 8 s waiting for the JVM to take its output, while
the topic files only need the bytes the reader already has. Here the reader's task appends each
record's line (:mod:`sparkcdc.debezium.topic_line`, the same bytes) to one file per topic under a
staging directory of its own, and hands Spark one row per file: ``topic, file, records``.

Exactly once stays the driver's job, as for files Spark writes (:mod:`.staging`): the
``foreachBatch`` writer collects the batch's rows (a handful), moves the files they name into the
batch's staging directory and publishes it; files of a failed or speculative task attempt are
never named by a row of the committed job and are deleted with their directory. The output must be
a local file system or one mounted at the same path on every node (the readers write into it).
"""

from __future__ import annotations

import os
import queue
import threading
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate, groupby
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import ConfigurationError
from ..lines import line_end
from .staging import TopicFilesError, escape_partition_value, task_staging_root

__all__ = ["STAGED_FILES_ARROW_SCHEMA", "STAGED_FILES_DDL_SCHEMA", "TopicRunEncoder", "write_topic_files", "write_topic_runs"]

STAGED_FILES_DDL_SCHEMA = "topic string, file string, records long"
STAGED_FILES_ARROW_SCHEMA = pa.schema([("topic", pa.string()), ("file", pa.string()), ("records", pa.int64())])


def write_topic_files(line_batches: Iterable[pa.RecordBatch], output: Path, index: int, *,
                      compression: str = "none") -> Iterator[pa.RecordBatch]:
    """Append the lines of ``line_batches`` (the ``lines`` layout: ``topic, line, …``) to one file
    per topic under a new task directory of ``output``'s staging; then one row per file. ``index``
    (the partition's place in its batch) orders the files of one topic across the batch's tasks.

    The writes run in a thread of their own: copying a batch's lines into the page cache is kernel
    time (measured: 2 to 8 s of system CPU for 3.7 GB here) during which the write releases the GIL,
    so the next batch is decoded and encoded meanwhile, on another core. With ``compression="zstd"``
    that thread compresses them first (zstd level 1, which releases the GIL too): measured on these
    lines, 4 GB/s of one core's time for a 100x smaller file, so the kernel's copies all but go."""
    opener, suffix = _opener(compression)
    files = _TopicFiles(output, index, opener, suffix)
    try:
        try:
            for batch in line_batches:
                ending = b"" if line_end(batch) == _NEWLINE else _NEWLINE
                for topic, first, end, text in _topic_runs(batch, joined=bool(ending)):
                    files.write(topic, text, ending, end - first)
            files.finish()
        finally:
            files.close()  # flushes what is buffered: may fail as a write does
    except OSError as exc:
        # A full disk (ENOSPC), a quota, a read-only mount: the task fails naming where, and nothing of it
        # is published (the batch's files are only moved into place once every task has written its own).
        raise TopicFilesError(f"cannot write topic files under {files.directory} (reader task {index}): {exc}") from exc
    yield from files.summary()


def write_topic_runs(placed: Iterable[tuple[list[tuple[str | None, int, int]], Callable[[Any], None]]], output: Path, index: int,
                     *, compression: str = "none") -> Iterator[pa.RecordBatch]:
    """:func:`write_topic_files` for pieces a :class:`TopicRunEncoder` made in the stream's decoding
    processes (``sparkcdc.stream.decode.processes``): each header ``[(topic, bytes, lines)]`` is
    answered, in WAL order, with where in its topic's file each run goes, and the process writes it
    there (when compressed, a zstd frame of its own: a topic file is then a sequence of frames, which
    every zstd reader reads as one stream). No byte of output passes through this task."""
    _, suffix = _opener(compression)
    directory = task_staging_root(output) / uuid.uuid4().hex
    files: dict[str | None, list[Any]] = {}  # topic -> [path, size so far, lines]
    for header, reply in placed:
        answer = []
        for topic, size, lines in header:
            entry = files.get(topic)
            if entry is None:
                path = _topic_file_path(directory, topic, index, suffix)
                path.touch()
                entry = files[topic] = [path, 0, 0]
            answer.append((str(entry[0]), entry[1]))
            entry[1] += size
            entry[2] += lines
        reply(answer)
    if files:
        yield pa.RecordBatch.from_arrays(
            [pa.array(list(files), pa.string()), pa.array([str(entry[0]) for entry in files.values()], pa.string()),
             pa.array([entry[2] for entry in files.values()], pa.int64())],
            schema=STAGED_FILES_ARROW_SCHEMA,
        )


class TopicRunEncoder:
    """Records to their topic files' lines, newline-ended, per topic in order (compressed as one zstd
    frame with ``compression="zstd"``), and written where the task says: the
    :class:`~sparkcdc.engine.decoding_process.PieceEncoder` of the ``topic_files`` layout, run in a
    stream's decoding processes so that only a header per piece reaches the task."""

    def __init__(self, serializer: Any, compression: str) -> None:
        _opener(compression)
        self.serializer = serializer
        self.compression = compression

    def encode(self, records: Iterable[Any]) -> tuple[list[tuple[str | None, int, int]], list[bytes]]:
        from ....engine.core.encoded import Constant, Joined
        from ....engine.core.lines import encode_lines

        texts: dict[str | None, list[Any]] = {}
        counts: dict[str | None, int] = {}
        for encoded in encode_lines(records, self.serializer, line_end=_NEWLINE):
            lines = encoded.line
            if isinstance(lines, Joined):
                data, offsets = memoryview(lines.data), lines.offsets
            else:  # too long for 32-bit offsets: a list of lines
                data, offsets = memoryview(b"".join(lines)), array("q", accumulate(map(len, lines), initial=0))  # type: ignore[arg-type]
            topics = encoded.topic
            runs = ([(topics.value, 0, encoded.size)] if isinstance(topics, Constant)
                    else _runs(topics))  # type: ignore[arg-type]
            for topic, first, end in runs:
                texts.setdefault(topic, []).append(data[offsets[first]:offsets[end]])  # a view: no copy
                counts[topic] = counts.get(topic, 0) + end - first
        retained = [self._bytes(parts) for parts in texts.values()]
        return [(topic, len(data), counts[topic]) for topic, data in zip(texts, retained, strict=True)], retained

    def deliver(self, retained: list[bytes], answer: list[tuple[str, int]]) -> None:
        """Each run at its place (``(path, offset)``, one per run): the task placed it after every
        earlier run of its topic, so the file's bytes end up in WAL order whichever process writes first."""
        for data, (path, offset) in zip(retained, answer, strict=True):
            handle = os.open(path, os.O_WRONLY)
            try:
                view = memoryview(data)
                while view:
                    written = os.pwrite(handle, view, offset)
                    view, offset = view[written:], offset + written
            finally:
                os.close(handle)

    def _bytes(self, parts: list[Any]) -> bytes:
        """The parts as one buffer, or one zstd frame compressed from them as they are (no join first)."""
        if self.compression != "zstd":
            return b"".join(parts)
        import zstandard

        compressor = zstandard.ZstdCompressor(level=1).compressobj()
        return b"".join([*map(compressor.compress, parts), compressor.flush()])


def _runs(topics: list[str | None]) -> list[tuple[str | None, int, int]]:
    """``(topic, first, end)`` of each run of one topic in ``topics``."""
    runs = []
    first = 0
    for topic, group in groupby(topics):
        end = first + sum(1 for _ in group)
        runs.append((topic, first, end))
        first = end
    return runs


def _topic_file_path(directory: Path, topic: str | None, index: int, suffix: str) -> Path:
    """Where a task's file of ``topic`` goes under its staging ``directory`` (its folder made)."""
    partition = directory / f"topic={escape_partition_value(topic)}"
    partition.mkdir(parents=True, exist_ok=True)
    return partition / f"part-{index:05d}{suffix}"


def _opener(compression: str) -> tuple[Callable[[Path], BinaryIO], str]:
    if compression not in _OPENERS:
        raise ConfigurationError(f"{compression!r} is not one of {', '.join(_OPENERS)}", prop="sparkcdc.output.topic.files.compression")
    return _OPENERS[compression]


class _TopicFiles:
    """A task's topic files: one per topic under a new task directory of ``output``'s staging,
    appended to by one writer thread; then one row per file."""

    def __init__(self, output: Path, index: int, opener: Callable[[Path], BinaryIO], suffix: str) -> None:
        self.directory = task_staging_root(output) / uuid.uuid4().hex
        self.index, self.opener, self.suffix = index, opener, suffix
        self.files: dict[str | None, tuple[BinaryIO, Path]] = {}
        self.counts: dict[str | None, int] = {}
        self.writer = _Writer()

    def write(self, topic: str | None, text: Any, ending: bytes, lines: int) -> None:
        entry = self.files.get(topic)
        if entry is None:
            path = _topic_file_path(self.directory, topic, self.index, self.suffix)
            entry = self.files[topic] = (self.opener(path), path)
        self.writer.write(entry[0], text, ending)
        self.counts[topic] = self.counts.get(topic, 0) + lines

    def finish(self) -> None:
        self.writer.finish()

    def close(self) -> None:
        """Every file closed, even when one fails to (a full disk fails the flush); then the first failure."""
        self.writer.stop()
        failure: OSError | None = None
        for handle, _ in self.files.values():
            try:
                handle.close()
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def summary(self) -> Iterator[pa.RecordBatch]:
        files = self.files
        if files:
            yield pa.RecordBatch.from_arrays(
                [pa.array(list(files), pa.string()), pa.array([str(path) for _, path in files.values()], pa.string()),
                 pa.array([self.counts[topic] for topic in files], pa.int64())],
                schema=STAGED_FILES_ARROW_SCHEMA,
            )


def _plain(path: Path) -> BinaryIO:
    return open(path, "wb")  # noqa: SIM115 - closed by write_topic_files, after the last batch


def _zstd(path: Path) -> BinaryIO:
    """A zstd frame written as the lines come (level 1: the fastest; the file's size is not known in
    advance, so the frame is streamed), ended and closed with the file. zstandard is imported here:
    an executor's environment that never compresses does not need it."""
    import zstandard

    return zstandard.ZstdCompressor(level=1).stream_writer(_plain(path), closefd=True)  # type: ignore[return-value]


#: Per ``sparkcdc.output.topic.files.compression``: how a topic file is opened, and its name's ending.
_OPENERS: dict[str, tuple[Callable[[Path], BinaryIO], str]] = {"none": (_plain, ".jsonl"), "zstd": (_zstd, ".jsonl.zst")}


class _Writer:
    """One thread appending buffers to files in the order given (a run of lines, then what ends it)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[BinaryIO, pa.Buffer, bytes] | None] = queue.Queue(maxsize=_PENDING_WRITES)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sparkcdc-topic-files-writer", daemon=True)
        self._thread.start()

    def write(self, handle: BinaryIO, text: Any, ending: bytes) -> None:
        self._raise_failure()
        self._queue.put((handle, text, ending))

    def finish(self) -> None:
        """Wait until every write is done; raise the first write's failure, if any."""
        self.stop()
        self._raise_failure()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._failure is not None:
                continue  # drain: the task fails with the first failure
            handle, text, ending = item
            try:
                handle.write(text)
                if ending:
                    handle.write(ending)
            except BaseException as exc:  # noqa: BLE001 - handed to the task's thread, which raises it
                self._failure = exc


#: Runs waiting for the writer thread at most: a run holds up to a batch of lines (a few MiB).
_PENDING_WRITES = 4


_NEWLINE = b"\n"


def _topic_runs(batch: pa.RecordBatch, *, joined: bool) -> Iterator[tuple[str | None, int, int, pa.Buffer]]:
    """``(topic, first row, end row, their lines)`` for each run of consecutive rows of one topic:
    one write per run. ``joined``: the lines are joined by newlines, by Arrow (a copy); otherwise
    each line already ends with one and the run is a slice of the line column's buffer, no copy."""
    size = batch.num_rows
    if size == 0:
        return
    topics = batch.column(0)
    filled = pc.fill_null(topics, "")
    changes = np.flatnonzero(pc.not_equal(filled.slice(1), filled.slice(0, size - 1)).to_numpy(zero_copy_only=False)) + 1
    starts = [0, *changes.tolist(), size]
    lines = batch.column(1)
    if not joined:
        _, offset_buffer, data = lines.buffers()
        bounds = np.frombuffer(offset_buffer, dtype=np.int32, count=lines.offset + size + 1)[lines.offset:]
        for first, end in zip(starts, starts[1:], strict=False):
            begin = int(bounds[first])
            yield topics[first].as_py(), first, end, data.slice(begin, int(bounds[end]) - begin)
        return
    offsets = pa.array(np.asarray(starts, dtype=np.int32))
    texts = pc.binary_join(pa.ListArray.from_arrays(offsets, lines), "\n")
    for run, (first, end) in enumerate(zip(starts, starts[1:], strict=False)):
        yield topics[first].as_py(), first, end, texts[run].as_buffer()
