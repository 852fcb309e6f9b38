"""Garbage-collector settings for processes whose main work is turning changes into records.

Each change allocates a handful of dicts and tuples that reference counting frees at once; none
form cycles. CPython's cyclic collector still runs every 700 container allocations and then scans
every live container (the connector's caches, Spark's objects) again and again: measured here, a
third of the per-event cost. Runtimes that own their process (``sparkcdc run``, Spark tasks,
benchmarks) call :func:`use_throughput_gc` once; a library caller keeps its own policy.
"""

from __future__ import annotations

import gc

__all__ = ["use_throughput_gc"]

_applied = False


def use_throughput_gc(first_generation_threshold: int = 100_000) -> None:
    """Move what exists now out of the collector's sight and collect young objects rarely."""
    global _applied
    if _applied:
        return
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(first_generation_threshold, second, third)
    _applied = True
