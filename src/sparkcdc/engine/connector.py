"""The connector run in-process: the Spark source's own planner and reader, in a loop.

There is one driver (:class:`~sparkcdc.engine.planner.ConnectorPlanner`: set-up, snapshot mode,
resume, slot handling) and one reader of planned work (:func:`~sparkcdc.engine.work.read_work`).
The ``postgres-cdc`` Spark source calls them from Spark's callbacks; this loop calls the same
methods in the same order — ``initial_offset``, then ``latest_offset`` / ``partitions`` / read /
``commit`` per batch — in one thread, without Spark. Tests (the Debezium conformance suite),
benchmarks and small embedded uses run it; whatever it shows holds for the Spark path.

Records come out serialized (:class:`~sparkcdc.engine.core.encoded.EncodedRecord`: topic, key, value,
headers as JsonConverter bytes), exactly as a Spark task hands them over. A batch's position is
committed (the slot may move) only when the caller asks for more after the batch's last record:
what the caller holds when it stops is not confirmed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Generator
from types import TracebackType
from typing import Any

from ..debezium.config import ConnectorConfig
from .core.encoded import EncodedBatch, EncodedRecord
from .planner import ConnectorPlanner
from .work import read_work

__all__ = ["LocalConnector"]

#: How often an idle loop asks the server for new WAL.
_IDLE_POLL_SECONDS = 0.05


class LocalConnector:
    """Runs one connector configuration; call :meth:`poll` or :meth:`poll_batch`."""

    def __init__(self, config: ConnectorConfig, *, state_location: str | None = None, offset: dict[str, Any] | None = None) -> None:
        """``offset``: resume from this committed offset (a checkpoint's), as a restarted query does;
        a new query's set-up otherwise."""
        self.config = config
        self._state_dir: tempfile.TemporaryDirectory[str] | None = None
        if state_location is None and not config.settings.sparkcdc_state_location:
            self._state_dir = tempfile.TemporaryDirectory(prefix="sparkcdc-local-state-")
            state_location = self._state_dir.name
        self.planner = ConnectorPlanner(config, state_location=state_location)
        self._offset: dict[str, Any] | None = offset
        self._batches: Generator[EncodedBatch, None, None] | None = None
        self._batch_end: dict[str, Any] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> LocalConnector:
        """Set-up as a new query does it: publication, slot, and the snapshot when one is wanted."""
        if self._offset is None:
            self._offset = self.planner.initial_offset()
        return self

    @property
    def offset(self) -> dict[str, Any] | None:
        """The end offset of the last committed batch: what a checkpoint holds, to resume from."""
        return self._offset

    @property
    def snapshot_pending(self) -> bool:
        """An initial snapshot is planned or being read (its batch is not committed yet)."""
        return self._offset is not None and self._offset.get("phase") == "snapshot"

    def poll(self, timeout: float) -> list[EncodedRecord]:
        """The next records, waiting up to ``timeout`` seconds for some: at most one encoded batch
        (a few thousand records), so that a backlog passes through in pieces."""
        batch = self.poll_batch(timeout)
        return [] if batch is None else list(batch.records())

    def poll_batch(self, timeout: float) -> EncodedBatch | None:
        """:meth:`poll`'s batch as the reader made it (columns of serialized records); None when
        ``timeout`` seconds passed without one."""
        if self._offset is None:
            self.start()
        deadline = time.monotonic() + timeout
        while True:
            batch = self._next_batch()
            if batch is not None:
                return batch
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.planner.streams and not self.snapshot_pending:
                return None
            time.sleep(min(_IDLE_POLL_SECONDS, remaining))  # the WAL has not moved: ask again shortly

    def _next_batch(self) -> EncodedBatch | None:
        """An encoded batch of the current micro-batch, planning the next one when it is done;
        None when the planner has nothing new."""
        while True:
            if self._batches is not None:
                batch = next(self._batches, None)
                if batch is not None:
                    return batch
                assert self._batch_end is not None
                self.planner.commit(self._batch_end)
                self._offset, self._batches, self._batch_end = self._batch_end, None, None
            assert self._offset is not None
            end = self.planner.latest_offset(self._offset)
            if end == self._offset:
                return None
            self._batches = self._read(self.planner.partitions(self._offset, end))
            self._batch_end = end

    def _read(self, pieces: list[Any]) -> Generator[EncodedBatch, None, None]:
        """The pieces of one micro-batch in plan order (a generator: closing it closes the reader)."""
        for piece in pieces:
            yield from read_work(self.config, piece, run_id=self.planner.run_id)

    def close(self) -> None:
        if self._batches is not None:
            self._batches.close()
            self._batches = None
        self.planner.stop()
        if self._state_dir is not None:
            self._state_dir.cleanup()
            self._state_dir = None

    def __enter__(self) -> LocalConnector:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
