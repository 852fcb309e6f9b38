"""``sparkcdc run`` on a terminal, read as a person reads it: under tmux, from the screen.

During the snapshot the screen shows each table with rows read of the planner's estimate, rows/s
and time left; then a streaming status line that counts the changes made afterwards. The screens
are written next to the test's files (``screen-*.txt``) for whoever wants to look.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ..spark.support import properties
from ..support.waiting import ConditionTimeout, wait_until

ROWS = 400_000

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """A tmux server of our own (its socket in the test's directory) with one window of 150 x 40."""

    def __init__(self, socket: Path, session: str) -> None:
        self.base = ["tmux", "-S", str(socket)]
        self.session = session

    def start(self, command: str) -> None:
        subprocess.run([*self.base, "new-session", "-d", "-s", self.session, "-x", "150", "-y", "40", command], check=True)

    def screen(self) -> str:
        result = subprocess.run([*self.base, "capture-pane", "-p", "-t", self.session], capture_output=True, text=True)
        return result.stdout if result.returncode == 0 else ""

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", self.session, *keys], check=True)

    def alive(self) -> bool:
        return subprocess.run([*self.base, "has-session", "-t", self.session], capture_output=True).returncode == 0

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


def test_progress_on_a_terminal(db: psycopg.Connection, pg_cluster, unique_name: str, tmp_path: Path) -> None:
    name = unique_name
    big, small = f"{name}_big", f"{name}_small"
    db.execute(f"CREATE TABLE {big} (id int PRIMARY KEY, note text)")
    db.execute(f"CREATE TABLE {small} (id int PRIMARY KEY, note text)")
    db.execute(f"INSERT INTO {big} SELECT g, repeat('x', 40) FROM generate_series(1, {ROWS}) g")
    db.execute(f"INSERT INTO {small} SELECT g, 'row' FROM generate_series(1, 20) g")
    db.execute(f"ANALYZE {big}")
    db.execute(f"ANALYZE {small}")
    props = properties(pg_cluster, name, [rf"public\.{big}", rf"public\.{small}"],
                       **{"sparkcdc.snapshot.chunk.rows": "50000", "snapshot.max.threads": "2"})
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    env = " ".join(f"{k}={v}" for k, v in os.environ.items() if k in ("PYTHONPATH", "SPARKCDC_PURE_PYTHON", "JAVA_HOME", "PATH"))
    # Spark's own log lines go to a file: the screen is what sparkcdc draws.
    # COLUMNS/LINES of the test's own environment (pytest's terminal) would fix the width at theirs.
    command = (f"env -u COLUMNS -u LINES {env} {sys.executable} -m sparkcdc.cli run {config} --output {tmp_path / 'out'} "
               f"--checkpoint {tmp_path / 'ck'} --master local[2] 2>>{tmp_path / 'stderr.log'}; sleep 600")
    tmux = Tmux(tmp_path / "tmux.sock", "run")
    tmux.start(command)

    def shown(predicate, *, timeout: float, interval: float, what: str) -> str:  # noqa: ANN001
        try:
            return wait_until(predicate, timeout=timeout, interval=interval, what=what)
        except ConditionTimeout as exc:
            log = (tmp_path / "stderr.log").read_text(errors="replace")[-2000:]
            raise AssertionError(f"{exc}; the screen:\n{tmux.screen()}\nstderr:\n{log}") from None

    try:
        # -- the snapshot: the big table, rows read of ~its estimate, a rate and time left
        row = re.compile(rf"public\.{big}\s+([\d,]+)\s+([\d,]+)\s.*?\s([\d,]+)\s+(\d\S*)\s*$", re.M)

        def snapshot_screen() -> str | None:
            screen = tmux.screen()
            match = row.search(screen)
            if match and 0 < int(match.group(1).replace(",", "")) < ROWS and int(match.group(3).replace(",", "")) > 0:
                return screen
            return None

        screen = shown(snapshot_screen, timeout=180, interval=0.1, what="the snapshot's progress on the screen")
        (tmp_path / "screen-snapshot.txt").write_text(screen)
        match = row.search(screen)
        assert match is not None
        assert int(match.group(2).replace(",", "")) == pytest.approx(ROWS, rel=0.2), "the estimate is the planner's (reltuples)"
        assert "initial snapshot, running for" in screen

        # -- streaming: both tables done, one status line that counts new changes
        with db.transaction():
            db.execute(f"INSERT INTO {small} SELECT g, 'new' FROM generate_series(21, 27) g")

        def streaming_screen() -> str | None:
            screen = tmux.screen()
            found = re.search(r"streaming: ([\d,]+) events \(([\d.]+)/s\), ([\d.]+)s behind source", screen)
            return screen if found and int(found.group(1).replace(",", "")) >= 7 else None

        screen = shown(streaming_screen, timeout=180, interval=0.2, what="the streaming status line with the 7 inserts")
        (tmp_path / "screen-streaming.txt").write_text(screen)
        assert "initial snapshot, completed in" in screen
        assert re.search(rf"public\.{big}\s+{ROWS:,}\s", screen) and "done" in screen
        assert re.search(rf"public\.{small}\s+20\s", screen)
        assert "slot retains" in screen and "(reserved)" in screen
        assert "[Stage" not in screen  # Spark's console progress bar is off while sparkcdc draws

        # -- Ctrl-C stops it after the batch in flight
        tmux.keys("C-c")
        wait_until(lambda: "stopped" in (tmp_path / "stderr.log").read_text(errors="replace"), timeout=120,
                   what="the run to stop after Ctrl-C")
    finally:
        tmux.kill()
