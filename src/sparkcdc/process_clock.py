"""When this process started, as an epoch time: the zero of a command's start-up timeline.

``sparkcdc run`` reports how long each step of its start-up took from the moment the command's
process began (the interpreter's own start and imports included), which no clock inside Python
sees by itself: Linux records the process's start in ``/proc/self/stat`` (field 22, in clock ticks
since boot), against the boot-time clock (``CLOCK_BOOTTIME``), to a tick (10 ms). Elsewhere the
first import of this module stands in.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache

__all__ = ["process_started", "since_process_start"]

_IMPORTED = time.time()


@lru_cache(maxsize=1)
def process_started() -> float:
    """This process's start, in epoch seconds (Linux: from /proc; else when this module was imported)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # the command name may hold spaces
        started_since_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of the whole line: starttime
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started_since_boot)
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED


def since_process_start(epoch: float | None = None) -> float:
    """Seconds from this process's start to ``epoch`` (default: now)."""
    return (time.time() if epoch is None else epoch) - process_started()
