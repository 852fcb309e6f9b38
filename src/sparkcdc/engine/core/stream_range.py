"""One streaming micro-batch as the planner hands it out: a piece of work like a snapshot chunk.

It is data only (two offsets, where the streams' state lives, which stream), made by the driver
(:class:`~sparkcdc.engine.planner.ConnectorPlanner`) and read wherever the batch runs
(:func:`~sparkcdc.engine.work.read_work`), so the reading side needs nothing of the driver's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StreamRange"]


@dataclass(frozen=True)
class StreamRange:
    """One streaming micro-batch, to be read by ``engine.batch_reader.read_stream_range``."""

    start: dict[str, Any]
    end: dict[str, Any]
    state_location: str
    #: Which of the parallel streams (``sparkcdc.stream.slots``, engine/core/stream_slots.py) this range reads.
    stream: int = 0
