"""Publishing a micro-batch's staged topic files: the driver-side half of the topic files sink.

Spark writes a batch's lines under a staging directory unique to the attempt, one sub-directory
``topic=<escaped topic>`` per topic (``DataFrameWriter.partitionBy``). Publishing then makes them
the batch's output in ``<output>/<topic>/part-<batch>-<n>.jsonl`` (``.jsonl.zst`` compressed). Nothing here knows Spark: it is
plain file-system work, done by the driver between the batch's write and Spark's commit of the
batch, so its order of steps is what makes the output exactly once:

1. the staged files are flushed to disk (``fsync``);
2. every ``part-<batch>-*`` file an earlier attempt of the same batch published is deleted;
3. the staged files are renamed into place, and the directories are flushed;
4. the attempt's staging directory and those of dead attempts of this or earlier batches go.

A crash before step 2 leaves the previous attempt's output (if any) and nothing of this one; a
crash inside steps 2-3 leaves part of the batch, and in every case Spark has not committed the
batch, so it runs again and its publication replaces whatever is there. The rename is a POSIX
rename: the output must be a local file system, or one shared by every node at the same path.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ....errors import DestinationError

__all__ = [
    "STAGING_DIR",
    "TOPIC_FILE_SUFFIXES",
    "PublishedBatch",
    "TopicFilesError",
    "escape_partition_value",
    "new_staging_dir",
    "open_topic_file",
    "published_files",
    "publish_batch",
    "remove_staging",
    "remove_task_staging",
    "stage_task_files",
    "task_staging_root",
    "topic_file_suffix",
]

STAGING_DIR = "_sparkcdc_staging"
_PARTITION_PREFIX = "topic="
# Spark's name for a partition whose value is null or empty (ExternalCatalogUtils.DEFAULT_PARTITION_NAME).
_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
# What Spark escapes in a partition directory name (ExternalCatalogUtils.charToEscape): control
# characters and these.
_TO_ESCAPE = frozenset(chr(c) for c in range(0x20)) | frozenset('"#%\'*/:=?\\\x7f{[]^')
#: Under the staging root: a directory per reader task that writes topic files itself (the
#: ``topic_files`` layout, :mod:`.task_files`). Not named after a batch: a task does not know it.
_TASKS_DIR = "tasks"


class TopicFilesError(DestinationError):
    """A batch's staged output cannot be published (unusable topic name, file-system failure)."""


@dataclass(frozen=True)
class PublishedBatch:
    batch_id: int
    files: dict[str, list[Path]]  # topic -> published files, in staging order


def new_staging_dir(output: Path, batch_id: int) -> Path:
    """A path (not yet created) no other attempt uses: ``<output>/_sparkcdc_staging/<batch>-<uuid>``.

    The batch id leads the name so that later batches can tell dead attempts' directories apart.
    """
    return output / STAGING_DIR / f"{batch_id}-{uuid.uuid4().hex}"


#: A topic file's name ends in one of these: JSON lines, or JSON lines compressed with zstd
#: (``sparkcdc.output.topic.files.compression``). Staging and publishing keep the ending they are given.
TOPIC_FILE_SUFFIXES = (".jsonl", ".jsonl.zst")


def batch_file_name(batch_id: int, n: int, suffix: str = ".jsonl") -> str:
    return f"part-{batch_id:010d}-{n:05d}{suffix}"


def published_files(output: Path) -> list[Path]:
    """The published topic files under ``output`` (``<topic>/part-*``, either ending), sorted by
    topic and then by batch and place: the order to read a topic's lines in."""
    return sorted(path for suffix in TOPIC_FILE_SUFFIXES for path in output.glob(f"*/part-*{suffix}")
                  if not path.parent.name.startswith("_"))


def open_topic_file(path: Path) -> BinaryIO:
    """A topic file's JSON lines for reading, decompressed if it is a ``.jsonl.zst`` file."""
    raw = open(path, "rb")  # noqa: SIM115 - the caller closes what is returned, which closes this
    if topic_file_suffix(path) == ".jsonl.zst":
        import zstandard  # only for compressed files: an executor's environment may lack it

        # a file the stream's decoding processes wrote is a sequence of frames: read across them
        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True, read_across_frames=True)  # type: ignore[return-value]
    return raw


def topic_file_suffix(path: Path) -> str:
    """``.jsonl.zst`` for a compressed topic file, else ``.jsonl`` (what Spark's text writer names
    ``.txt``, or nothing, is JSON lines too)."""
    return ".jsonl.zst" if path.name.endswith(".zst") else ".jsonl"


def escape_partition_value(value: str | None) -> str:
    """A topic as Spark names its partition directory: ``%XX`` for the characters Spark escapes;
    null or empty as Spark's null partition (which :func:`publish_batch` refuses, naming it)."""
    if not value:
        return _NULL_PARTITION
    return "".join(f"%{ord(c):02X}" if c in _TO_ESCAPE else c for c in value)


def task_staging_root(output: Path) -> Path:
    """Where reader tasks write their topic files before a batch's writer stages them."""
    return output / STAGING_DIR / _TASKS_DIR


def stage_task_files(staging: Path, files: list[tuple[str | None, str]], batch_id: int) -> None:
    """Move the task-written ``(topic, file)`` files into ``staging``, as Spark would have staged
    them (``topic=<escaped>/part-…``), keeping their order within each topic."""
    for n, (topic, file) in enumerate(files):
        source = Path(file)
        partition = staging / f"{_PARTITION_PREFIX}{escape_partition_value(topic)}"
        try:
            partition.mkdir(parents=True, exist_ok=True)
            os.replace(source, partition / f"part-{n:05d}{topic_file_suffix(source)}")
        except OSError as exc:
            raise TopicFilesError(f"batch {batch_id}: cannot stage {source}, written by a reader task: {exc}") from exc


def remove_task_staging(output: Path) -> None:
    """Delete every reader task's directory: called once a batch is published, when the tasks of its
    job have ended; what is left there belonged to failed or speculative attempts."""
    shutil.rmtree(task_staging_root(output), ignore_errors=True)
    _remove_root_if_empty(output)


def _remove_root_if_empty(output: Path) -> None:
    try:
        (output / STAGING_DIR).rmdir()
    except OSError:
        pass  # not empty (a later batch's directory) or already gone


def unescape_partition_value(name: str) -> str:
    """Undo Spark's escaping of a partition directory name (``%XX`` -> the character)."""
    return _ESCAPED.sub(lambda match: chr(int(match.group(1), 16)), name)


def publish_batch(output: Path, staging: Path, batch_id: int, *, fsync: bool = True) -> PublishedBatch:
    """Make the files staged under ``staging`` batch ``batch_id``'s output, replacing any earlier one."""
    staged = _staged_files(staging, batch_id)
    if fsync:
        for files in staged.values():
            for file in files:
                _fsync_file(file, batch_id)
    touched: set[Path] = set()
    for stale in (path for suffix in TOPIC_FILE_SUFFIXES for path in output.glob(f"*/part-{batch_id:010d}-*{suffix}")):
        try:
            stale.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise TopicFilesError(f"batch {batch_id}: cannot delete {stale}, left by an earlier attempt: {exc}") from exc
        touched.add(stale.parent)
    published: dict[str, list[Path]] = {}
    for topic, files in staged.items():
        target_dir = output / topic
        try:
            target_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TopicFilesError(f"batch {batch_id}: cannot create the topic directory {target_dir}: {exc}") from exc
        touched.add(target_dir)
        for n, file in enumerate(files):
            target = target_dir / batch_file_name(batch_id, n, topic_file_suffix(file))
            try:
                os.replace(file, target)
            except OSError as exc:
                raise TopicFilesError(f"batch {batch_id}: cannot move {file} to {target}: {exc}") from exc
            published.setdefault(topic, []).append(target)
    if fsync:
        for directory in sorted(touched) + [output]:
            _fsync_dir(directory, batch_id)
    shutil.rmtree(staging, ignore_errors=True)
    remove_staging(output, up_to=batch_id)
    return PublishedBatch(batch_id, published)


def remove_staging(output: Path, *, up_to: int) -> None:
    """Delete the staging directories of attempts of batches up to ``up_to`` (dead or failed ones).

    Called once batch ``up_to`` is published, when no attempt of it or of an earlier batch can still
    be writing. Directories of later batches (a checkpoint rolled back by hand) are left alone.
    """
    root = output / STAGING_DIR
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name == _TASKS_DIR:
            continue  # reader tasks' files: removed by remove_task_staging once a batch is published
        batch, _, _ = entry.name.partition("-")
        if batch.isdigit() and int(batch) <= up_to:
            shutil.rmtree(entry, ignore_errors=True)
    _remove_root_if_empty(output)


def _staged_files(staging: Path, batch_id: int) -> dict[str, list[Path]]:
    """topic -> the data files Spark wrote for it (``part-*``; ``_SUCCESS`` and ``.crc`` are not data)."""
    try:
        partitions = sorted(p for p in staging.iterdir() if p.is_dir() and p.name.startswith(_PARTITION_PREFIX))
    except FileNotFoundError:
        raise TopicFilesError(f"batch {batch_id}: the staging directory {staging} does not exist") from None
    staged: dict[str, list[Path]] = {}
    for partition in partitions:
        escaped = partition.name[len(_PARTITION_PREFIX):]
        if escaped == _NULL_PARTITION:
            raise TopicFilesError(f"batch {batch_id}: records without a topic (null or empty), staged in {partition}")
        topic = unescape_partition_value(escaped)
        if topic in (".", "..", STAGING_DIR) or "/" in topic or "\0" in topic:
            raise TopicFilesError(f"batch {batch_id}: topic {topic!r} cannot be a directory name under the output, "
                                  f"staged in {partition}")
        files = sorted(f for f in partition.iterdir() if f.name.startswith("part-") and f.is_file())
        if files:
            staged[topic] = files
    return staged


def _fsync_file(path: Path, batch_id: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise TopicFilesError(f"batch {batch_id}: cannot flush {path} to disk: {exc}") from exc


def _fsync_dir(path: Path, batch_id: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TopicFilesError(f"batch {batch_id}: cannot open directory {path} to flush it: {exc}") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        raise TopicFilesError(f"batch {batch_id}: cannot flush directory {path} to disk: {exc}") from exc
    finally:
        os.close(fd)
