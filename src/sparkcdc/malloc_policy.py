"""glibc's malloc settings for processes that allocate and free buffers of megabytes again and again.

This is process set-up, not the connector's logic: like :mod:`sparkcdc.gc_policy`, a process that
owns its lifetime (here, a decoding process forked by :mod:`sparkcdc.engine.parallel_stream`) calls
it once when it starts. Measured: a decoding process allocates and frees buffers of megabytes per
piece (the frames it receives, each batch's lines, their compressed frame); with glibc's defaults
it returned them to the system and faulted them in again, 676,000 page faults and 1.5 s of system
time for 300,000 changes (the task's own sequential reader: 73,000). Where the C library is not
glibc there is nothing to tune.
"""

from __future__ import annotations

from typing import Final

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3


def keep_freed_memory() -> None:
    """Have glibc keep what the process frees for its next allocations rather than give it back."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to tune
    libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest
