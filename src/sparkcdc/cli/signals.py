"""SIGINT/SIGTERM for ``sparkcdc run``: the first asks the pipeline to stop cleanly, the second exits at once.

A streaming query stopped between micro-batches leaves a checkpoint that the next run continues
from without re-doing work; killed mid-batch it re-runs that batch (still correct, but slower and,
during a snapshot, expensive). So the first signal only sets a :class:`StopEvent` that the pipeline
watches. An operator who does not want to wait sends a second signal: the process exits
immediately with status 128 + the signal number, as a shell reports a process killed by it.

PySpark's ``SparkContext`` installs its own SIGINT handler when it is created (it cancels all jobs and
raises ``KeyboardInterrupt``, i.e. stops mid-batch), replacing ours. The pipeline creates its Spark
session after the CLI installed the handlers, so a :class:`StopEvent` puts its handlers back
whenever the main thread polls :meth:`StopEvent.is_set` (the pipeline polls it between waits on the
query); :meth:`StopEvent.rearm` does the same explicitly.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType
from typing import Any, NoReturn

__all__ = ["StopEvent", "exit_now"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_now(signum: int) -> NoReturn:
    """Leave without unwinding: no ``finally`` blocks, no waiting for Spark or the JVM."""
    sys.stderr.write(f"\n{signal.Signals(signum).name} again: exiting immediately\n")
    sys.stderr.flush()
    os._exit(128 + signum)


class StopEvent(threading.Event):
    """A ``threading.Event`` set by the first SIGINT/SIGTERM while installed (``with StopEvent() as stop:``).

    ``on_first`` is told which signal arrived (to print "stopping..."); ``exit_immediately`` runs on
    the second (replaceable so that tests can observe it without losing their process).
    """

    def __init__(
        self,
        *,
        on_first: Callable[[int], None] | None = None,
        exit_immediately: Callable[[int], Any] = exit_now,
        signals: Iterable[signal.Signals] = STOP_SIGNALS,
    ) -> None:
        super().__init__()
        self.received: int | None = None
        self._on_first = on_first
        self._exit_immediately = exit_immediately
        self._signals = tuple(signals)
        self._previous: dict[int, Any] = {}

    def handle(self, signum: int, frame: FrameType | None = None) -> None:
        if self.is_set():
            self._exit_immediately(signum)
            return
        self.received = signum
        self.set()
        if self._on_first is not None:
            self._on_first(signum)

    def is_set(self) -> bool:
        """``threading.Event.is_set``; polled from the main thread while installed, it also re-arms."""
        if self._previous and threading.current_thread() is threading.main_thread():
            for signum in self._signals:
                if signal.getsignal(signum) != self.handle:
                    signal.signal(signum, self.handle)
        return super().is_set()

    def rearm(self) -> bool:
        """(Re-)install the handlers; False outside the main thread, where Python allows no handlers."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in self._signals:
            previous = signal.signal(signum, self.handle)
            self._previous.setdefault(signum, previous)
        return True

    def restore(self) -> None:
        """Put back the handlers that were there before the first :meth:`rearm`."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()

    def __enter__(self) -> StopEvent:
        self.rearm()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.restore()
