"""Rates, times left and the plain log lines of ``sparkcdc run``'s progress, from figures over time."""

from __future__ import annotations

from typing import Any

from sparkcdc.cli.progress import PlainProgress, ProgressModel, streaming_line, table_line


def _figures(rows: dict[str, int], *, running: bool = True, completed: bool = False, done: tuple[str, ...] = (),
             events: int = 0, behind: int = -1, batch: int | None = None) -> dict[str, Any]:
    return {
        "snapshot": {"RowsScanned": rows, "SnapshotRunning": running, "SnapshotCompleted": completed, "SnapshotDurationInSeconds": 4},
        "streaming": {"TotalNumberOfEventsSeen": events, "MilliSecondsBehindSource": behind, "Connected": True},
        "sparkcdc": {"table_estimates": {"public.a": 100_000}, "snapshot_tables_done": list(done), "last_committed_batch_id": batch,
                     "slot_retained_wal_bytes": 3 * 1024 * 1024, "slot_wal_status": "reserved", "commit_lag_seconds": 1.25},
    }


def test_rate_and_time_left_over_the_window() -> None:
    model = ProgressModel(window=5.0)
    model.update(_figures({"public.a": 0, "public.b": 0}), now=0.0)
    view = model.update(_figures({"public.a": 20_000, "public.b": 5}), now=2.0)
    a, b = view.tables
    assert view.phase == "snapshot"
    assert a.rate == 10_000 and a.seconds_left == 8.0  # 80,000 rows left at 10,000 rows/s
    assert b.estimate is None and b.seconds_left is None  # no statistics: no time left to promise
    assert table_line(a) == "public.a: 20,000 of ~100,000 rows (20%), 10,000 rows/s, 8s left"
    assert table_line(b) == "public.b: 5 rows, 2 rows/s"


def test_streaming_status_after_the_snapshot() -> None:
    model = ProgressModel(window=5.0)
    model.update(_figures({"public.a": 100_000}, running=False, completed=True, done=("public.a",), events=0, batch=1), now=0.0)
    view = model.update(_figures({"public.a": 100_000}, running=False, completed=True, done=("public.a",), events=50,
                                 behind=420, batch=3), now=10.0)
    assert view.phase == "streaming" and view.tables[0].done
    assert streaming_line(view) == ("streaming: 50 events (5.0/s), 0.4s behind source, commit lag 1.2s, "
                                    "slot retains 3.0 MB (reserved), batch 3")


def test_plain_lines_report_a_finished_table_once() -> None:
    lines: list[str] = []
    plain = PlainProgress(lines.append)
    model = ProgressModel()
    plain.show(model.update(_figures({"public.a": 50_000, "public.b": 3}, done=("public.b",)), now=0.0))
    plain.show(model.update(_figures({"public.a": 60_000, "public.b": 3}, done=("public.b",)), now=1.0))
    assert lines[0].startswith("snapshot public.a: 50,000 of ~100,000 rows (50%)")
    assert lines.count("snapshot public.b: done, 3 rows") == 1
    assert lines[-1].startswith("snapshot public.a: 60,000 of ~100,000 rows (60%), 10,000 rows/s, 4s left")
