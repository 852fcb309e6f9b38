"""What an applier counts and times (:class:`ApplyStats`): what ``make demo``, the benchmarks and
the runner's metrics read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...phase_seconds import PhaseSeconds

__all__ = ["ApplyStats"]


@dataclass
class ApplyStats(PhaseSeconds):
    """Counts since the applier started (what ``make demo`` and the benchmarks print)."""

    batches: int = 0
    events: dict[str, int] = field(default_factory=dict)  # target table -> events applied
    applied_batches_skipped: int = 0
    dropped_late: int = 0
    images: int = 0  # initial-snapshot batches applied (again, when re-executed) as the tables' whole image
    #: batch id -> the row changes its census counted (on the changes layout a source row is a block
    #: of changes, so Spark's numInputRows counts blocks; the runner reports these instead)
    changes_by_batch: dict[int, int] = field(default_factory=dict)
    # ``seconds`` (PhaseSeconds): driver seconds per phase: census (which tables, snapshot?),
    # describe (the catalog and the target's position), plan (the count of each big table's typed
    # changes), stage (the executors' fold and staging), commit (the target's commit of the staged
    # rows); and "executors read/fold/stage": the executors' seconds of each step, summed over partitions.
