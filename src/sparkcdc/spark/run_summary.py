"""What ``sparkcdc run`` reports when its query has ended (``run --summary``): batches, records,
restarts, Spark's timings of each micro-batch, and what each apply target applied.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunSummary", "spark_timestamp"]


@dataclass(frozen=True)
class RunSummary:
    batches: int
    records: int
    stopped_by_signal: bool
    restarts: int = 0  # streaming queries restarted after the server went away
    startup_seconds: float = 0.0  # from the call to the query's start: Spark's own start-up, mostly
    #: Seconds from the command's process start to each start-up milestone: ``runner`` (the pipeline
    #: begins: interpreter and imports before it), ``session`` (Spark is up), ``query`` (the streaming
    #: query started), ``first_batch`` (its first micro-batch's trigger began)
    startup_phases: dict[str, float] = field(default_factory=dict)
    batch_durations_ms: tuple[int, ...] = ()  # Spark's triggerExecution time of each micro-batch
    #: Spark's ``durationMs`` of each micro-batch (latestOffset, queryPlanning, addBatch, walCommit …):
    #: where a batch's time went outside the sink's own work
    batch_phases_ms: tuple[dict[str, int], ...] = ()
    # Of each micro-batch too, from the same progress: its id (the topic files' part-<id>-* names), its
    # input rows, and when its trigger began (Spark's ISO 8601 UTC timestamp): which batch did what, when.
    batch_ids: tuple[int, ...] = ()
    batch_input_rows: tuple[int, ...] = ()
    batch_timestamps: tuple[str, ...] = ()
    applied: dict[str, dict[str, int]] | None = None  # apply target -> table -> events applied
    apply_seconds: dict[str, dict[str, float]] | None = None  # apply target -> phase -> driver seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "records": self.records,
            "stopped_by_signal": self.stopped_by_signal,
            "restarts": self.restarts,
            "startup_seconds": round(self.startup_seconds, 3),
            "startup_phases": {name: round(seconds, 3) for name, seconds in self.startup_phases.items()},
            "batch_durations_ms": list(self.batch_durations_ms),
            "batch_phases_ms": [dict(phases) for phases in self.batch_phases_ms],
            "batch_ids": list(self.batch_ids),
            "batch_input_rows": list(self.batch_input_rows),
            "batch_timestamps": list(self.batch_timestamps),
            "applied": self.applied or {},
            "apply_seconds": self.apply_seconds or {},
        }


def spark_timestamp(text: str) -> float:
    """A streaming progress's ``timestamp`` (ISO 8601, UTC, ``Z``) in epoch seconds."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
