"""What ``sparkcdc run`` shows while it works: the snapshot table by table, then a streaming status.

On a terminal (stdout is a TTY) a live rich display: one line per snapshot table (rows read of the
planner's estimate, a bar, rows/s, time left), then one status line for streaming (events/s, how
far behind the source, the slot's retained WAL, the last committed batch). Otherwise plain log
lines on stderr, every ``interval`` seconds, for log collectors. Both read the run's
:class:`~sparkcdc.spark.metrics.MetricsCollector` figures; :class:`ProgressModel` turns successive
figures into rates and times left (pure, so it is tested without a run).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

__all__ = ["LiveProgress", "PlainProgress", "ProgressModel", "ProgressView", "TableProgress", "progress_display"]


@dataclass(frozen=True)
class TableProgress:
    table: str
    rows: int
    estimate: int | None
    rate: float  # rows per second, over the last few seconds
    seconds_left: float | None
    done: bool


@dataclass(frozen=True)
class ProgressView:
    phase: str  # "starting", "snapshot" or "streaming"
    tables: tuple[TableProgress, ...] = ()
    snapshot_seconds: int = 0
    snapshot_kind: str = ""
    snapshot_completed: bool = False
    events: int = 0
    events_rate: float = 0.0
    behind_ms: int = -1
    commit_lag_seconds: float | None = None
    retained_bytes: int | None = None
    wal_status: str | None = None
    batch: int | None = None
    connected: bool = False


@dataclass
class ProgressModel:
    """Rates over a sliding ``window`` of seconds, from figures sampled over time."""

    window: float = 5.0
    _rows: dict[str, deque[tuple[float, int]]] = field(default_factory=dict)
    _events: deque[tuple[float, int]] = field(default_factory=deque)

    def _rate(self, history: deque[tuple[float, int]], now: float, value: int) -> float:
        history.append((now, value))
        while len(history) > 2 and now - history[1][0] >= self.window:
            history.popleft()
        (t0, v0), (t1, v1) = history[0], history[-1]
        return (v1 - v0) / (t1 - t0) if t1 > t0 else 0.0

    def update(self, figures: Mapping[str, Any], now: float) -> ProgressView:
        snapshot, streaming, extras = figures["snapshot"], figures["streaming"], figures["sparkcdc"]
        done = set(extras.get("snapshot_tables_done") or ())
        estimates = extras.get("table_estimates") or {}
        tables = []
        for table, rows in (snapshot.get("RowsScanned") or {}).items():
            rate = self._rate(self._rows.setdefault(table, deque()), now, int(rows))
            estimate = estimates.get(table)
            finished = table in done or bool(snapshot.get("SnapshotCompleted"))
            left = None
            if not finished and estimate and rate > 0:
                left = max(0.0, (estimate - rows) / rate)
            tables.append(TableProgress(table, int(rows), estimate, rate, left, finished))
        events = int(streaming.get("TotalNumberOfEventsSeen") or 0)
        running = bool(snapshot.get("SnapshotRunning"))
        if running:
            phase = "snapshot"
        elif snapshot.get("SnapshotCompleted") or extras.get("last_committed_batch_id") is not None:
            phase = "streaming"
        else:
            phase = "starting"
        return ProgressView(
            phase=phase, tables=tuple(tables), snapshot_seconds=int(snapshot.get("SnapshotDurationInSeconds") or 0),
            snapshot_kind="incremental" if snapshot.get("ChunkId") else "",
            snapshot_completed=bool(snapshot.get("SnapshotCompleted")), events=events,
            events_rate=self._rate(self._events, now, events), behind_ms=int(streaming.get("MilliSecondsBehindSource", -1)),
            commit_lag_seconds=extras.get("commit_lag_seconds"), retained_bytes=extras.get("slot_retained_wal_bytes"),
            wal_status=extras.get("slot_wal_status"), batch=extras.get("last_committed_batch_id"),
            connected=bool(streaming.get("Connected")),
        )


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def _bytes(n: int | None) -> str:
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def table_line(t: TableProgress) -> str:
    """``public.orders: 120,000 of ~500,000 rows (24%), 40,000 rows/s, 10s left``"""
    if t.done:
        return f"{t.table}: done, {_count(t.rows)} rows"
    of = f" of ~{_count(t.estimate)}" if t.estimate else ""
    percent = f" ({min(100, 100 * t.rows // t.estimate)}%)" if t.estimate else ""
    left = f", {_duration(t.seconds_left)} left" if t.seconds_left is not None else ""
    return f"{t.table}: {_count(t.rows)}{of} rows{percent}, {_count(t.rate)} rows/s{left}"


def streaming_line(view: ProgressView) -> str:
    """``streaming: 1,234 events (56.0/s), 0.4s behind source, commit lag 1.2s, slot retains 1.2 MB (reserved), batch 42``"""
    behind = "no change yet" if view.behind_ms < 0 else f"{view.behind_ms / 1000:.1f}s behind source"
    parts = [f"streaming: {_count(view.events)} events ({view.events_rate:.1f}/s)", behind]
    if view.commit_lag_seconds is not None:
        parts.append(f"commit lag {view.commit_lag_seconds:.1f}s")
    if view.retained_bytes is not None:
        parts.append(f"slot retains {_bytes(view.retained_bytes)} ({view.wal_status})")
    if view.batch is not None:
        parts.append(f"batch {view.batch}")
    if not view.connected:
        parts.append("NOT CONNECTED")
    return ", ".join(parts)


class _Display:
    """Samples the collector every ``interval`` seconds on its own thread and shows the result."""

    owns_terminal = False

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.model = ProgressModel()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._collector: Any = None

    def start(self, collector: Any) -> None:
        self._collector = collector
        self._thread = threading.Thread(target=self._run, name="sparkcdc-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.begin()
        try:
            while not self._stop.wait(self.interval):
                self.show(self.model.update(self._collector.snapshot(), time.monotonic()))
        finally:
            self.end()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def begin(self) -> None:
        pass

    def show(self, view: ProgressView) -> None:
        raise NotImplementedError

    def end(self) -> None:
        pass


class LiveProgress(_Display):
    """The rich display, redrawn in place on a terminal."""

    owns_terminal = True

    def __init__(self, console: Console, interval: float = 0.5) -> None:
        super().__init__(interval)
        self.console = console
        self.live: Live | None = None

    def begin(self) -> None:
        self.live = Live(Text("sparkcdc: starting ..."), console=self.console, refresh_per_second=4, transient=False)
        self.live.start()

    def show(self, view: ProgressView) -> None:
        assert self.live is not None
        self.live.update(self.render(view))

    def end(self) -> None:
        if self.live is not None:
            self.live.stop()

    #: Beyond this many snapshot tables, the finished ones are summed up in one line.
    MAX_ROWS = 15

    @classmethod
    def render(cls, view: ProgressView) -> Any:
        parts: list[Any] = []
        if view.tables:
            state = "completed in" if view.snapshot_completed else "running for"
            title = f"{view.snapshot_kind or 'initial'} snapshot, {state} {_duration(view.snapshot_seconds)}"
            table = Table(title=title, title_justify="left", box=None, pad_edge=False)
            for column, justify in (("table", "left"), ("rows read", "right"), ("of ~", "right"), ("", "left"),
                                    ("rows/s", "right"), ("left", "right")):
                table.add_column(column, justify=justify)  # type: ignore[arg-type]
            shown = list(view.tables)
            if len(shown) > cls.MAX_ROWS:
                running = [t for t in shown if not t.done]
                shown = running[: cls.MAX_ROWS]
            for t in shown:
                fraction = 1.0 if t.done else (min(1.0, t.rows / t.estimate) if t.estimate else 0.0)
                table.add_row(t.table, _count(t.rows), _count(t.estimate) if t.estimate else "?",
                              ProgressBar(total=1.0, completed=fraction, width=24), "" if t.done else _count(t.rate),
                              "done" if t.done else _duration(t.seconds_left))
            parts.append(table)
            hidden = len(view.tables) - len(shown)
            if hidden:
                done = sum(1 for t in view.tables if t.done)
                parts.append(Text(f"... and {hidden} more tables ({done} of {len(view.tables)} done)"))
        if view.phase == "streaming":
            parts.append(Text(streaming_line(view)))
        elif view.phase == "starting":
            parts.append(Text("sparkcdc: starting ..."))
        return Group(*parts)


class PlainProgress(_Display):
    """Log lines: the running snapshot tables, each finished table once, then the streaming status."""

    def __init__(self, emit: Callable[[str], None], interval: float = 10.0) -> None:
        super().__init__(interval)
        self.emit = emit
        self._reported_done: set[str] = set()

    def show(self, view: ProgressView) -> None:
        for t in view.tables:
            if t.done:
                if t.table not in self._reported_done:
                    self._reported_done.add(t.table)
                    self.emit(f"snapshot {table_line(t)}")
            elif view.phase == "snapshot":
                self.emit(f"snapshot {table_line(t)}")
        if view.phase == "streaming":
            self.emit(streaming_line(view))


def progress_display(stdout: Console, emit: Callable[[str], None]) -> _Display:
    """Live on a terminal, plain lines otherwise."""
    return LiveProgress(stdout) if stdout.is_terminal else PlainProgress(emit)
