"""Read the last committed source offset from a Spark Structured Streaming checkpoint directory.

``sparkcdc status`` shows where the pipeline is without starting Spark (a JVM just to read two small
files would make a status check slow and heavy). Spark's layout, as written by its offset and commit
logs: ``offsets/<batch>`` holds ``v1``, a JSON metadata line, then one line per source (the source's
offset JSON, or ``-`` when it has none); ``commits/<batch>`` exists once the batch's output was
committed. Names that are not plain batch numbers (``.0.crc``, temporary files) are Spark's
bookkeeping and are skipped. A batch with an offsets file but no commit file is still in flight:
after a restart Spark re-runs it from its offsets, so it is reported separately as ``pending``.

This reads a local directory; for a checkpoint on HDFS or object storage, copy the two folders.
Offset fields are documented in docs/spark-source.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = ["BatchOffset", "CheckpointError", "CheckpointState", "last_committed_offset", "read_checkpoint"]

_SUPPORTED_LOG_VERSIONS = frozenset({"v1"})


class CheckpointError(ConfigurationError):
    """The checkpoint directory, or one of its log files, is not in the format Spark writes."""


@dataclass(frozen=True)
class BatchOffset:
    """One micro-batch's end offset for our source, as the checkpoint records it."""

    batch_id: int
    offset: dict[str, Any] | None  # the source offset JSON; None when the source had no offset ("-")
    path: Path

    @property
    def lsn(self) -> int | None:
        value = (self.offset or {}).get("lsn")
        return value if isinstance(value, int) else None

    @property
    def phase(self) -> str | None:
        value = (self.offset or {}).get("phase")
        return value if isinstance(value, str) else None

    @property
    def slot(self) -> str | None:
        value = (self.offset or {}).get("slot")
        return value if isinstance(value, str) else None

    @property
    def database(self) -> str | None:
        value = (self.offset or {}).get("db")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class CheckpointState:
    last_committed: BatchOffset | None
    pending: BatchOffset | None  # a planned batch whose commit file is not there (yet)


def last_committed_offset(directory: Path | str) -> BatchOffset | None:
    """The newest batch that has both an offsets and a commits file; None before the first commit."""
    return read_checkpoint(directory).last_committed


def read_checkpoint(directory: Path | str) -> CheckpointState:
    root = Path(directory)
    if not root.is_dir():
        raise CheckpointError(f"{root}: not a directory")
    offsets = _batch_files(root / "offsets")
    commits = _batch_files(root / "commits")
    if not offsets and not commits and not (root / "offsets").is_dir():
        raise CheckpointError(f"{root}: not a Spark checkpoint directory (it has no offsets/ folder)")
    committed = sorted(set(offsets) & set(commits))
    missing = sorted(set(commits) - set(offsets))
    if missing and (not committed or missing[-1] > committed[-1]):
        raise CheckpointError(f"{commits[missing[-1]]}: batch {missing[-1]} is committed but {root / 'offsets' / str(missing[-1])} is missing")
    last = _read_offset(committed[-1], offsets[committed[-1]]) if committed else None
    newest = max(offsets) if offsets else None
    pending = None
    if newest is not None and newest not in commits:
        pending = _read_offset(newest, offsets[newest])
    return CheckpointState(last, pending)


def _batch_files(folder: Path) -> dict[int, Path]:
    if not folder.is_dir():
        return {}
    return {int(entry.name): entry for entry in folder.iterdir() if entry.name.isdigit() and entry.is_file()}


def _read_offset(batch_id: int, path: Path) -> BatchOffset:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: cannot be read: {exc}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0].strip() not in _SUPPORTED_LOG_VERSIONS:
        found = lines[0].strip() if lines else "an empty file"
        raise CheckpointError(f"{path}:1: expected the offset log version v1, found {found!r}")
    if len(lines) < 3:
        raise CheckpointError(f"{path}: expected a metadata line and a source offset line after {lines[0]!r}")
    _json_object(path, 2, lines[1])  # Spark's batch metadata: only checked, so a torn file is noticed
    source_line = lines[-1]  # one line per source; a sparkcdc query has one source, the last line
    if source_line.strip() == "-":
        return BatchOffset(batch_id, None, path)
    return BatchOffset(batch_id, _json_object(path, len(lines), source_line), path)


def _json_object(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}:{number}: expected a JSON object, found {line.strip()[:60]!r}")
    return value
