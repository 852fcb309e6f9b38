"""Streaming state handed from one micro-batch to the next (see docs/spark-source.md).

``source.sequence[0]`` of an event is the end LSN of the COMMIT before it, and a non-transactional
logical decoding message reports that commit's time. The task that reads a batch knows both at its
end; the driver does not. The task writes them to a small file named by the batch's end LSN, and
the next batch's task reads the file named by its start LSN. The files are JSON, written atomically
(write, then rename), so a re-executed batch rewrites the same content. With
``include.schema.changes``, the state also carries what the batch knew of each captured table's
shape at its end (engine/core/schema_changes.py).

With parallel streaming (``sparkcdc.stream.slots``) each stream has its own last commit: stream
i > 0 keeps its files next to stream 0's, named ``state-<LSN>-<i>.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StreamState", "StreamStateStore", "default_state_location"]


@dataclass(frozen=True)
class StreamState:
    last_commit_lsn: int | None
    last_commit_ts_us: int | None
    # Set when an interrupted snapshot batch was re-executed from a re-created slot: streaming
    # continues from this LSN (the new slot's consistent point), not from the LSN in the checkpoint.
    stream_from_lsn: int | None = None
    # Signals that arrived through the signal table in the batch ending here (Signal.to_dict()),
    # for the driver to act on when it plans the next batch.
    signals: tuple[dict, ...] = ()
    # include.schema.changes: the last Relation content known of each captured table at this point,
    # (schema, table, relation OID, digest) in name order (see engine/core/schema_changes.py).
    relations: tuple[tuple[str, str, int, str], ...] = ()


def default_state_location(database: str, slot: str) -> Path:
    return Path(tempfile.gettempdir()) / f"sparkcdc-state-{os.getuid()}" / f"{database}-{slot}"


class StreamStateStore:
    """State files under ``location`` (a local or mounted shared directory)."""

    def __init__(self, location: str | os.PathLike[str], stream: int = 0) -> None:
        self.location = Path(location)
        self.stream = stream

    def _path(self, lsn: int) -> Path:
        if self.stream:
            return self.location / f"state-{lsn:020d}-{self.stream}.json"
        return self.location / f"state-{lsn:020d}.json"

    def write(self, lsn: int, state: StreamState) -> None:
        self.location.mkdir(parents=True, exist_ok=True)
        target = self._path(lsn)
        with tempfile.NamedTemporaryFile("w", dir=self.location, prefix=".tmp-", delete=False, encoding="utf-8") as handle:
            json.dump({"last_commit_lsn": state.last_commit_lsn, "last_commit_ts_us": state.last_commit_ts_us,
                       "stream_from_lsn": state.stream_from_lsn, "signals": list(state.signals),
                       "relations": [list(entry) for entry in state.relations]}, handle)
            temporary = handle.name
        os.replace(temporary, target)

    def read(self, lsn: int) -> StreamState | None:
        try:
            raw = json.loads(self._path(lsn).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return StreamState(raw.get("last_commit_lsn"), raw.get("last_commit_ts_us"), raw.get("stream_from_lsn"),
                           tuple(raw.get("signals") or ()),
                           tuple((str(s), str(t), int(o), str(d)) for s, t, o, d in raw.get("relations") or ()))

    def prune(self, before_lsn: int) -> None:
        """Drop the states of positions before ``before_lsn`` (no batch can start there any more), every stream's."""
        if not self.location.is_dir():
            return
        for path in self.location.glob("state-*.json"):
            try:
                if int(path.stem.split("-")[1]) < before_lsn:
                    path.unlink(missing_ok=True)
            except ValueError:
                continue
