"""``sparkcdc run --metrics-port``: Debezium's snapshot and streaming metrics, scraped as Prometheus would.

The run is a real subprocess against the session's PostgreSQL; ``/metrics`` is scraped while the
snapshot runs (RowsScanned grows, a table at a time) and while streaming (Connected, events counted,
MilliSecondsBehindSource small once the backlog is read). The names are those the JMX exporter rule
of Debezium's monitoring example gives (docs/metrics.md).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import psycopg
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from sparkcdc.cli.app import app

from ..support.processes import GroupProcess
from ..support.waiting import wait_until
from .support import properties

# The attributes of the PostgreSQL connector manual's two tables (reference/seeds), in its order.
MANUAL_SNAPSHOT = ("LastEvent", "MilliSecondsSinceLastEvent", "TotalNumberOfEventsSeen", "NumberOfEventsFiltered", "MonitoredTables",
                   "CapturedTables", "QueueTotalCapacity", "QueueRemainingCapacity", "TotalTableCount", "RemainingTableCount",
                   "SnapshotRunning", "SnapshotAborted", "SnapshotCompleted", "SnapshotDurationInSeconds", "RowsScanned",
                   "MaxQueueSizeInBytes", "CurrentQueueSizeInBytes")
MANUAL_STREAMING = ("LastEvent", "MilliSecondsSinceLastEvent", "TotalNumberOfEventsSeen", "NumberOfEventsFiltered", "MonitoredTables",
                    "CapturedTables", "QueueTotalCapacity", "QueueRemainingCapacity", "Connected", "MilliSecondsBehindSource",
                    "NumberOfCommittedTransactions", "SourceEventPosition", "LastTransactionId", "MaxQueueSizeInBytes",
                    "CurrentQueueSizeInBytes")
# The JMX exporter turns numbers and booleans into samples; strings, string arrays and string maps have none.
NOT_NUMERIC = {"LastEvent", "MonitoredTables", "CapturedTables", "SourceEventPosition", "LastTransactionId"}

ROWS = 400_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scraper:
    def __init__(self, port: int, prefix: str) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.prefix = prefix

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        """Every sample of ``/metrics`` by (name, sorted labels); None while the server is not up."""
        try:
            with urllib.request.urlopen(self.base + "/metrics", timeout=5) as response:
                text = response.read().decode()
        except OSError:
            return None
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def value(self, samples: dict, attribute: str, context: str, **extra: str) -> float | None:
        labels = {"plugin": "postgres", "name": self.prefix, "context": context, **extra}
        return samples.get((f"debezium_metrics_{attribute}", tuple(sorted(labels.items()))))

    def attributes(self) -> dict:
        with urllib.request.urlopen(self.base + "/attributes", timeout=5) as response:
            return json.loads(response.read())


def test_metrics_during_snapshot_and_streaming(db: psycopg.Connection, pg_cluster, unique_name: str, tmp_path: Path) -> None:
    name = unique_name
    db.execute(f"CREATE TABLE {name}_big (id int PRIMARY KEY, note text)")
    db.execute(f"CREATE TABLE {name}_small (id int PRIMARY KEY, note text)")
    db.execute(f"INSERT INTO {name}_big SELECT g, 'row ' || g FROM generate_series(1, {ROWS}) g")
    db.execute(f"INSERT INTO {name}_small SELECT g, 'row ' || g FROM generate_series(1, 10) g")
    db.execute(f"ANALYZE {name}_big")
    props = properties(pg_cluster, name, [rf"public\.{name}_big", rf"public\.{name}_small"],
                       **{"sparkcdc.snapshot.chunk.rows": "40000", "snapshot.max.threads": "2"})
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    port = _free_port()
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--output", str(tmp_path / "out"),
            "--checkpoint", str(tmp_path / "ck"), "--master", "local[2]", "--metrics-port", str(port)]
    run = GroupProcess(argv, tmp_path / "run.log")
    scrape = Scraper(port, "srv")
    try:
        # -- during the snapshot: RowsScanned of the big table grows while the snapshot runs
        seen_rows: list[float] = []

        def snapshot_progress() -> bool:
            samples = scrape.samples()
            if samples is None:
                return False
            rows = scrape.value(samples, "RowsScanned", "snapshot", table=f"public.{name}_big")
            if rows is not None and scrape.value(samples, "SnapshotRunning", "snapshot") == 1.0 and 0 < rows < ROWS:
                if not seen_rows or rows > seen_rows[-1]:
                    seen_rows.append(rows)
            return len(seen_rows) >= 2

        wait_until(snapshot_progress, timeout=180, interval=0.05, what="RowsScanned growing during the snapshot")
        samples = scrape.samples()
        assert samples is not None
        assert scrape.value(samples, "TotalTableCount", "snapshot") == 2.0
        assert scrape.value(samples, "SnapshotCompleted", "snapshot") in (0.0, 1.0)
        for attribute in MANUAL_SNAPSHOT:
            if attribute in NOT_NUMERIC or attribute == "RowsScanned":
                continue
            assert scrape.value(samples, attribute, "snapshot") is not None, f"snapshot {attribute} missing from /metrics"
        # changes committed while the snapshot runs: streamed after it
        db.execute(f"INSERT INTO {name}_small SELECT g, 'during' FROM generate_series(11, 15) g")

        # -- the snapshot completes: every table scanned, none remaining
        def completed() -> dict | None:
            samples = scrape.samples()
            return samples if samples and scrape.value(samples, "SnapshotCompleted", "snapshot") == 1.0 else None

        samples = wait_until(completed, timeout=240, interval=0.2, what="SnapshotCompleted")
        assert scrape.value(samples, "RowsScanned", "snapshot", table=f"public.{name}_big") == ROWS
        assert scrape.value(samples, "RowsScanned", "snapshot", table=f"public.{name}_small") == 10
        assert scrape.value(samples, "RemainingTableCount", "snapshot") == 0.0
        assert scrape.value(samples, "SnapshotRunning", "snapshot") == 0.0
        assert scrape.value(samples, "TotalNumberOfEventsSeen", "snapshot") == ROWS + 10

        # -- streaming: the changes made during the snapshot, then new ones while idle
        def streamed(at_least: int):  # noqa: ANN202
            def check() -> dict | None:
                samples = scrape.samples()
                seen = samples and scrape.value(samples, "TotalNumberOfEventsSeen", "streaming")
                return samples if seen and seen >= at_least else None
            return check

        wait_until(streamed(5), timeout=120, interval=0.2, what="the 5 inserts made during the snapshot streamed")
        with db.transaction():
            db.execute(f"INSERT INTO {name}_small SELECT g, 'idle' FROM generate_series(16, 18) g")
        db.execute(f"UPDATE {name}_small SET note = 'updated' WHERE id = 1")
        samples = wait_until(streamed(9), timeout=120, interval=0.2, what="TotalNumberOfEventsSeen after the inserts")
        assert scrape.value(samples, "Connected", "streaming") == 1.0
        assert scrape.value(samples, "TotalNumberOfCreateEventsSeen", "streaming") == 8.0
        assert scrape.value(samples, "TotalNumberOfUpdateEventsSeen", "streaming") == 1.0
        assert scrape.value(samples, "NumberOfCommittedTransactions", "streaming") == 3.0
        behind = scrape.value(samples, "MilliSecondsBehindSource", "streaming")
        assert behind is not None and 0 <= behind < 5000, f"MilliSecondsBehindSource {behind} once idle"
        for attribute in MANUAL_STREAMING:
            if attribute not in NOT_NUMERIC:
                assert scrape.value(samples, attribute, "streaming") is not None, f"streaming {attribute} missing from /metrics"
        # sparkcdc's extras
        assert samples[("sparkcdc_slot_wal_status", (("name", "srv"), ("wal_status", "reserved")))] == 1.0
        assert samples[("sparkcdc_slot_retained_wal_bytes", (("name", "srv"),))] > 0
        assert wait_until(lambda: (s := scrape.samples()) and s.get(("sparkcdc_last_committed_batch_id", (("name", "srv"),))),
                          timeout=30, what="the last committed batch id") >= 1
        lag = wait_until(lambda: (s := scrape.samples()) and s.get(("sparkcdc_commit_lag_seconds", (("name", "srv"),))),
                         timeout=30, what="the commit lag")
        assert 0 < lag < 30
        # `sparkcdc status` tells the same story in time: the newest source commit in the committed output
        status = CliRunner().invoke(app, ["status", str(config), "--json", "--checkpoint", str(tmp_path / "ck")])
        assert status.exit_code == 0, status.output
        newest = json.loads(status.stdout)["checkpoint"]["newest_source_commit"]
        assert newest is not None and 0 <= newest["age_seconds"] < 300 and newest["committed_at"].startswith("20")
        # every attribute of both tables, the strings too, in /attributes
        attributes = scrape.attributes()
        assert set(MANUAL_SNAPSHOT) <= set(attributes["snapshot"]) and set(MANUAL_STREAMING) <= set(attributes["streaming"])
        assert attributes["streaming"]["CapturedTables"] == [f"public.{name}_big", f"public.{name}_small"]
        assert attributes["streaming"]["LastTransactionId"] and attributes["streaming"]["SourceEventPosition"]["lsn"]
    finally:
        if run.process.poll() is None:
            run.process.send_signal(signal.SIGTERM)  # the way an operator stops it: after the batch in flight
            try:
                run.wait(120)
            except subprocess.TimeoutExpired:
                run.kill()
        else:
            run.log.close()
    log = (tmp_path / "run.log").read_text(errors="replace")
    assert run.process.returncode == 0, log[-3000:]
