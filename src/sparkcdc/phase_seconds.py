"""Seconds per phase of a piece of work: one clock for every place that reports where its time goes.

The apply path reports, per batch, the seconds of its phases (the driver's census, planning and
commit; the executors' read, fold and stage). The code of a phase does not time itself: its caller
wraps it in ``with seconds.timed("phase"):``, so the domain code stays free of timing arguments.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["PhaseSeconds"]


@dataclass
class PhaseSeconds:
    """Seconds spent per phase name, summed over every time the phase ran."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the time the ``with`` block takes (even when it raises) to ``phase``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - started
