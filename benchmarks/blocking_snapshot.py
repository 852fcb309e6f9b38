"""Blocking snapshot while streaming, rows per second: ``sparkcdc run --once`` vs real Debezium 3.6.3,
same table, same run, beside sparkcdc's initial snapshot of the same table.

One table of ``--rows`` rows (the 6-column ``bench`` table of events.py, filled and vacuumed as
snapshot.py does). While a writer makes ``--writer-rate`` changes a second to it (updates, and
deletes each followed by the re-insert of the same id in one transaction, so the table always holds
exactly ids 1..rows and every snapshot of it has ``--rows`` rows), each side streams from its own slot
(``snapshot.mode=no_data``), an ``execute-snapshot`` signal ``{"data-collections": ["public.bench"],
"type": "blocking"}`` is inserted into its signal table (``signal.data.collection``; one table per
side, so that neither acts on the other's signal), and the blocking snapshot is timed:

* sparkcdc: a first ``run --once`` sets up the publication, slot and checkpoint; with the writer
  running, the signal goes in and a second ``run --once`` (availableNow) streams up to the signal,
  takes the blocking snapshot (a batch streaming up to its consistent point, then one batch reading
  the table in parallel chunks inside one exported snapshot) and streams on. The figure is the
  snapshot batch's processing time: Spark's ``triggerExecution`` of the batch holding the snapshot
  rows (its id and start from the query's progress, in ``--summary``); the whole command's wall time
  is shown too. With the writer stopped, a third ``run --once`` drains the changes made since, and
  the output is checked: the snapshot batch holds exactly one ``r`` line per id, all with one
  ``commit_lsn`` (the snapshot's LSN); every change streamed in a batch before it committed below
  that LSN and every one after it at or above (no overlap; both kinds must be there); and the
  output replayed in order (batch by batch, each sorted as tests/spark/support.output_lines sorts)
  onto an empty dict keyed by id equals the table at the end (no gap).
* Debezium: embedded (events.py's engine: JsonConverter with schemas for key, value and headers),
  from a slot created beforehand, streaming until the writer's first change reaches the consumer;
  then the signal. Debezium pauses streaming for the snapshot, so its rows reach the consumer in one
  run; the consumer counts whole batches and looks at a record's ``source.snapshot`` only where the
  run may begin or end (each record before the first snapshot row, then the last record of each
  batch), so the count needs no per-row Python call. The figure runs from the first snapshot record
  (``snapshot: "first"``) to the last, whose count must be ``--rows``.
* sparkcdc's initial snapshot: snapshot.py's ``snapshot.mode=initial_only`` run (its function and
  checks), writer stopped; the figure is its snapshot batch's ``triggerExecution`` too.

Besides rows per second, each figure is given per CPU-second of the whole machine: the busy time of
every core (``/proc/stat``: PostgreSQL, the JVMs, Python, the writer, anything else) over the same
window. Each kind runs ``--repeat`` times, the order rotating from run to run; the figures are medians.

    python benchmarks/blocking_snapshot.py [--rows 1000000] [--repeat 3] [--writer-rate 300] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    MachineCpu,
    SparkcdcRun,
    drop_slot_when_free,
    exit_after,
    load_average,
    machine_summary,
    median,
    record_result,
    run_sparkcdc,
    sparkcdc_properties,
    write_properties,
)
from events import TABLE_DDL, embedded_debezium  # noqa: E402
from events import properties as debezium_properties  # noqa: E402
from snapshot import fill, snapshot_sparkcdc  # noqa: E402

from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.postgres import create_logical_slot, get_slot  # noqa: E402
from tests.conformance.incremental_oracle import SIGNAL_TABLE, SIGNAL_TABLE_DDL, send_source_signal  # noqa: E402
from tests.conformance.oracle import SNAPSHOT_MARKERS  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

DEBEZIUM_PUBLICATION = "bench_debezium"
SPARKCDC_SIGNAL_TABLE = "public.sparkcdc_signal"
TOPIC = "bench.public.bench"  # sparkcdc_properties' topic.prefix and the table
BLOCKING = {"data-collections": ["public.bench"], "type": "blocking"}


# -- the concurrent writer ---------------------------------------------------------------------------

class Writer:
    """A few hundred changes a second to ``bench`` from its own connection while the block runs:
    updates, and deletes each followed by the re-insert of the same id in one transaction, so the
    table keeps exactly the ids 1..rows (every snapshot of it has ``rows`` rows) while each kind of
    change (c, u, d) keeps coming. Paced, not flat out: the snapshot is what is measured."""

    def __init__(self, cluster: ThrowawayCluster, rows: int, rate: float, seed: int) -> None:
        self.conninfo, self.rows, self.rate = cluster.conninfo(), rows, rate
        self.random = random.Random(seed)
        self.changes = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write, daemon=True, name="writer")

    def _write(self) -> None:
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                next_at = time.monotonic()
                while not self._stop.is_set():
                    row_id = self.random.randint(1, self.rows)
                    if self.random.random() < 0.5:
                        conn.execute("UPDATE bench SET qty = qty + 1, price = price + 0.5, active = NOT active WHERE id = %s",
                                     (row_id,))
                        done = 1
                    else:
                        with conn.transaction():
                            conn.execute("DELETE FROM bench WHERE id = %s", (row_id,))
                            conn.execute("INSERT INTO bench VALUES (%s, %s, %s, %s, now(), true)",
                                         (row_id, row_id % 1000, f"rewritten-{row_id}", row_id * 2.5))
                        done = 2
                    self.changes += done
                    next_at += done / self.rate
                    self._stop.wait(max(0.0, next_at - time.monotonic()))  # the pace, not a synchronisation
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.failure = exc

    def wait_for_changes(self, count: int) -> None:
        """Until at least ``count`` changes are committed (so some precede what comes next)."""
        wait_until(lambda: self.changes >= count or self.failure is not None, timeout=60, what=f"{count} changes by the writer")
        self._check()

    def _check(self) -> None:
        if self.failure is not None:
            raise SystemExit(f"the writer failed: {self.failure!r}")

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)
        self._check()


# -- sparkcdc: the blocking snapshot and the checks of its output ------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """One timed snapshot: its rows, the processing time of the batch (or records) holding them, the
    whole machine's busy CPU time meanwhile, and what else to say of it."""

    rows: int
    seconds: float
    cpu_seconds: float
    detail: str
    total_seconds: float  # sparkcdc: the whole command; Debezium: from the signal to the last record

    @property
    def rate(self) -> float:
        # A small table can reach the consumer in one batch: first and last record at the same instant.
        return self.rows / max(self.seconds, 1e-6)

    @property
    def per_cpu_second(self) -> float:
        return self.rows / max(self.cpu_seconds, 1e-6)


@dataclass
class BlockingOutput:
    """What the topic directory of ``bench`` says about a blocking snapshot (see :func:`read_output`)."""

    snapshot_batch: int | None = None
    snapshot_lsn: int | None = None
    snapshot_ids: bytearray = field(default_factory=bytearray)  # one byte per id: times read by the snapshot
    before: int = 0  # changes streamed in batches before the snapshot's
    after: int = 0
    replayed: dict[int, int] = field(default_factory=dict)  # id -> hash of the row (see row_digest)
    problems: list[str] = field(default_factory=list)


def row_digest(qty: int, label: str, price: float, created: dt.datetime, active: bool) -> int:
    """The columns of a row but its id, for comparing the replayed output with the table: Python's
    hash (one process: stable), so that a million rows cost a dict of ints, not of rows."""
    return hash((qty, label, price, created, active))


def _payload(text: str) -> Any:
    """The ``payload`` of a JsonConverter text ``{"schema":...,"payload":...}``: only it is parsed."""
    return json.loads(text[text.rindex('"payload":') + len('"payload":'):-1])


def _batches(topic_dir: Path) -> Iterator[tuple[int, list[Path]]]:
    """The part files of each batch, in batch order (``part-<batch>-<n>.jsonl``)."""
    files: dict[int, list[Path]] = {}
    for path in topic_dir.glob("part-*.jsonl"):
        files.setdefault(int(path.name.split("-")[1]), []).append(path)
    for batch in sorted(files):
        yield batch, sorted(files[batch])


def read_output(output: Path, rows: int) -> BlockingOutput:
    """Replay ``bench``'s lines batch by batch (each batch in (commit_lsn, lsn, ordinal) order, as
    tests/spark/support.output_lines sorts), and check where the snapshot rows sit against the stream."""
    found = BlockingOutput(snapshot_ids=bytearray(rows + 1))
    streamed: list[tuple[int, int]] = []  # (batch, commit_lsn) of each streamed change
    for batch, paths in _batches(output / TOPIC):
        lines = []  # (order, id, op, digest): a batch of a million rows is held this small
        for path in paths:
            with open(path, encoding="utf-8") as handle:
                for raw in handle:
                    line = json.loads(raw)
                    if line["value"] is None:
                        continue  # a tombstone: the delete before it did the work
                    value = _payload(line["value"])
                    after = value["after"]
                    digest = None if after is None else row_digest(
                        after["qty"], after["label"], after["price"],
                        dt.datetime.fromisoformat(after["created"].replace("Z", "+00:00")), after["active"])
                    lines.append(((line["commit_lsn"], line["lsn"], line["ordinal"]), _payload(line["key"])["id"],
                                  value["op"], digest))
        lines.sort(key=lambda entry: entry[0])
        for (commit_lsn, _, _), key, op, digest in lines:
            if op == "r":
                if found.snapshot_batch not in (None, batch) or found.snapshot_lsn not in (None, commit_lsn):
                    found.problems.append(f"snapshot rows in batches {found.snapshot_batch} and {batch}, or at LSNs "
                                          f"{found.snapshot_lsn} and {commit_lsn}: expected one batch, one LSN")
                    return found
                found.snapshot_batch, found.snapshot_lsn = batch, commit_lsn
                if 0 < key <= rows:
                    found.snapshot_ids[key] = min(found.snapshot_ids[key] + 1, 255)
                else:
                    found.snapshot_ids[0] = 1
            else:
                streamed.append((batch, commit_lsn))
            if digest is None:
                found.replayed.pop(key, None)  # op d
            else:
                found.replayed[key] = digest
    if found.snapshot_batch is None or found.snapshot_lsn is None:
        found.problems.append("no snapshot rows in the output")
        return found
    if found.snapshot_ids[0] or found.snapshot_ids[1:] != b"\x01" * rows:
        found.problems.append(f"the snapshot's ids are not exactly 1..{rows:,}, each once "
                              f"({sum(1 for n in found.snapshot_ids[1:] if n == 1):,} once)")
    point = found.snapshot_lsn
    early = [lsn for batch, lsn in streamed if batch < found.snapshot_batch]
    late = [lsn for batch, lsn in streamed if batch > found.snapshot_batch]
    found.before, found.after = len(early), len(late)
    if any(batch == found.snapshot_batch for batch, _ in streamed):
        found.problems.append(f"changes streamed in the snapshot's batch {found.snapshot_batch}")
    if not early or not late:
        found.problems.append(f"{len(early)} changes streamed before the snapshot and {len(late)} after: the writer "
                              "should have made some of each, or the check says nothing")
    if any(lsn >= point for lsn in early):
        found.problems.append(f"overlap: {sum(lsn >= point for lsn in early)} changes streamed before the snapshot "
                              f"committed at or after its LSN {point}")
    if any(lsn < point for lsn in late):
        found.problems.append(f"overlap: {sum(lsn < point for lsn in late)} changes streamed after the snapshot "
                              f"committed before its LSN {point}")
    return found


def table_digests(conn: psycopg.Connection) -> dict[int, int]:
    """The table as :func:`read_output` replays it: id -> :func:`row_digest`."""
    table: dict[int, int] = {}
    with conn.transaction(), conn.cursor(name="bench_rows") as cursor:
        cursor.itersize = 50_000
        cursor.execute("SELECT id, qty, label, price, created, active FROM bench")
        for row_id, *columns in cursor:
            table[row_id] = row_digest(*columns)
    return table


def compare(replayed: dict[int, int], table: dict[int, int]) -> list[str]:
    if replayed == table:
        return []
    missing = sorted(table.keys() - replayed.keys())
    extra = sorted(replayed.keys() - table.keys())
    differ = sorted(k for k in table.keys() & replayed.keys() if table[k] != replayed[k])
    return [f"the replayed output differs from the table: {len(missing):,} rows missing (e.g. {missing[:5]}), "
            f"{len(extra):,} extra (e.g. {extra[:5]}), {len(differ):,} with other values (e.g. {differ[:5]})"]


def blocking_sparkcdc(cluster: ThrowawayCluster, conn: psycopg.Connection, work: Path, run: int, rows: int,
                      rate: float) -> Snapshot:
    """Set up streaming, signal, time the ``run --once`` that takes the snapshot, drain, check."""
    name = f"sparkcdc_blocking_{run}"
    props = sparkcdc_properties(cluster, name, "no_data") | {"signal.data.collection": SPARKCDC_SIGNAL_TABLE}
    config = write_properties(work / f"{name}.properties", props)
    output, checkpoint = work / f"{name}-output", work / f"{name}-checkpoint"
    prepared = run_sparkcdc(config, output, checkpoint)
    if prepared.records != 0 or get_slot(conn, name) is None:
        raise SystemExit(f"the preparing run of {name} read {prepared.records} records and left "
                         f"{'a' if get_slot(conn, name) else 'no'} slot; expected none and one")
    with Writer(cluster, rows, rate, seed=run) as writer:
        writer.wait_for_changes(20)
        send_source_signal(conn, f"blocking-{run}", "execute-snapshot", BLOCKING, signal_table=SPARKCDC_SIGNAL_TABLE)
        with MachineCpu() as cpu:
            result = run_sparkcdc(config, output, checkpoint)
        writer.wait_for_changes(writer.changes + 20)  # some after the run too: the drain has them
    run_sparkcdc(config, output, checkpoint)  # the changes since, with the writer stopped
    drop_slot_when_free(conn, name)
    found = read_output(output, rows)
    problems = found.problems or compare(found.replayed, table_digests(conn))
    index = None
    if found.snapshot_batch is not None and found.snapshot_batch in result.batch_ids:
        index = result.batch(found.snapshot_batch)
        if result.batch_rows[index] != rows:
            problems.append(f"Spark's progress counts {result.batch_rows[index]:,} input rows in the snapshot batch "
                            f"{found.snapshot_batch}, expected {rows:,}")
    elif not problems:
        problems.append(f"the snapshot batch {found.snapshot_batch} is not one of the timed run's {list(result.batch_ids)}")
    if problems or index is None:
        raise SystemExit(f"sparkcdc's blocking snapshot output in {output} is wrong: " + "; ".join(problems))
    shutil.rmtree(output)
    shutil.rmtree(checkpoint)
    batches = ", ".join(f"{ms / 1000:.1f}" for ms in result.batch_ms)
    return Snapshot(rows, result.batch_ms[index] / 1000, cpu.busy_between(*result.batch_window(index)),
                    f"batch {found.snapshot_batch} of {len(result.batch_ms)} ({batches} s); {found.before:,} changes streamed "
                    f"before it, {found.after:,} after; {result.startup_seconds:.1f} s to the query's start",
                    result.wall_seconds)


def initial_sparkcdc(cluster: ThrowawayCluster, conn: psycopg.Connection, work: Path, run: int, rows: int) -> Snapshot:
    """snapshot.py's initial snapshot (``initial_only``; its checks), timed by the batch holding the rows."""
    with MachineCpu() as cpu:
        result: SparkcdcRun = snapshot_sparkcdc(cluster, conn, work, run, rows)
    if rows not in result.batch_rows:
        raise SystemExit(f"no batch of the initial snapshot holds all {rows:,} rows: {list(result.batch_rows)}")
    index = result.batch_rows.index(rows)
    return Snapshot(rows, result.batch_ms[index] / 1000, cpu.busy_between(*result.batch_window(index)),
                    f"batch {result.batch_ids[index]} of {len(result.batch_ms)}; {result.startup_seconds:.1f} s to the query's start",
                    result.wall_seconds)


# -- Debezium ----------------------------------------------------------------------------------------

def _marker(record: Any) -> str | None:
    """``source.snapshot`` of one record, found in its value's text (``None`` for a tombstone)."""
    value = record.value()
    if value is None:
        return None
    text = str(value)
    at = text.rfind('"snapshot":"')
    if at < 0:
        return None
    at += len('"snapshot":"')
    return text[at:text.index('"', at)]


class BlockingCounter:
    """Debezium's consumer: counts the records of the blocking snapshot, which arrive in one run
    because Debezium pauses streaming for it. A record's ``source.snapshot`` is looked at only where
    the run may begin (each record before it: the writer's few changes) or end (the last record of a
    batch; the batch where it ends is then scanned once), so the rows cost no Python call each."""

    def __init__(self) -> None:
        self.streamed = 0  # records before the snapshot
        self.counted = 0  # snapshot records
        self.first_at = self.last_at = 0.0  # perf_counter
        self.first_epoch = self.last_epoch = 0.0  # time.time, for the machine's CPU samples
        self.ended = False

    def __call__(self, records: Any) -> bool:
        size, start = records.size(), 0
        now, epoch = time.perf_counter(), time.time()
        if not self.counted:
            while start < size and _marker(records.get(start)) != "first":
                start += 1
            self.streamed += start
            if start == size:
                return False
            self.first_at, self.first_epoch = now, epoch
        if _marker(records.get(size - 1)) in SNAPSHOT_MARKERS - {"last"}:
            end = size  # the run goes on past this batch
        else:
            end = start
            while end < size and (marker := _marker(records.get(end))) in SNAPSHOT_MARKERS:
                end += 1
                if marker == "last":
                    break
            self.ended = True
        self.counted += end - start
        if end > start:
            self.last_at, self.last_epoch = now, epoch
        return self.ended

    def describe(self) -> str:
        return f"{self.streamed:,} records streamed before the snapshot, {self.counted:,} snapshot records"


def blocking_debezium(cluster: ThrowawayCluster, conn: psycopg.Connection, run: int, rows: int, rate: float) -> Snapshot:
    """Stream from a new slot with the writer running, signal, count the snapshot's records (see BlockingCounter)."""
    slot = f"debezium_blocking_{run}"
    create_logical_slot(conn, slot)
    props = debezium_properties(cluster, slot, DEBEZIUM_PUBLICATION) | {"signal.data.collection": SIGNAL_TABLE}
    counter = BlockingCounter()
    with Writer(cluster, rows, rate, seed=1000 + run), MachineCpu() as cpu, embedded_debezium(props, counter) as engine:
        wait_until(lambda: counter.streamed > 0 or engine.stopped is not None, timeout=120,
                   what="Debezium streaming the writer's changes")
        if engine.stopped is not None:
            raise SystemExit(f"the Debezium engine stopped: {engine.stopped}")
        signalled = time.perf_counter()
        send_source_signal(conn, f"blocking-{run}", "execute-snapshot", BLOCKING)
        engine.wait(counter.describe)
    drop_slot_when_free(conn, slot)
    if counter.counted != rows:
        raise SystemExit(f"Debezium's blocking snapshot: {counter.describe()}, expected {rows:,}")
    steady = counter.last_at - counter.first_at
    return Snapshot(rows, steady, cpu.busy_between(counter.first_epoch, counter.last_epoch),
                    f"{counter.first_at - signalled:.1f} s from the signal to the first record; {counter.streamed:,} records "
                    "streamed before", counter.last_at - signalled)


# -- the figures -------------------------------------------------------------------------------------

def report(rows: int, runs: dict[str, list[Snapshot]], *, rate: float, repeat: int, load_before: str, load_after: str,
           record: bool) -> None:
    dbz, ours, initial = (median(runs[side], key=lambda s: s.seconds) for side in ("debezium", "blocking", "initial"))
    vs_debezium, vs_initial = ours.rate / dbz.rate, ours.rate / initial.rate
    cpu_vs_debezium, cpu_vs_initial = ours.per_cpu_second / dbz.per_cpu_second, ours.per_cpu_second / initial.per_cpu_second
    faster = "faster" if vs_debezium > 1 else "NOT faster"
    lines = [
        ("Debezium 3.6.3 blocking snapshot (embedded, JsonConverter, counting consumer)", dbz,
         f"first to last snapshot record; {dbz.detail}; {dbz.total_seconds:.1f} s from the signal to the last"),
        ("sparkcdc blocking snapshot (`run --once`, local[2], JSON lines written)", ours,
         f"Spark's triggerExecution of the snapshot batch: {ours.detail}; whole command {ours.total_seconds:.1f} s"),
        ("sparkcdc initial snapshot (`snapshot.mode=initial_only`, as snapshot.py)", initial,
         f"Spark's triggerExecution of the snapshot batch: {initial.detail}; whole command {initial.total_seconds:.1f} s"),
    ]
    print(f"median of {repeat} runs each, {rows:,} rows, writer at {rate:g} changes/s:")
    for name, snap, notes in lines:
        print(f"{name}: {snap.rate:,.0f} rows/s ({snap.seconds:.1f} s), {snap.per_cpu_second:,.0f} rows per machine "
              f"CPU-second ({snap.cpu_seconds:.1f} CPU-s); {notes}")
    print(f"ratio blocking sparkcdc / Debezium blocking = {vs_debezium:.2f} rows/s ({faster}), {cpu_vs_debezium:.2f} per CPU-second")
    print(f"ratio blocking sparkcdc / initial sparkcdc = {vs_initial:.2f} rows/s, {cpu_vs_initial:.2f} per CPU-second")
    if not record:
        return
    per_run = "; ".join(f"{side} " + " / ".join(f"{s.rate:,.0f}" for s in runs[side]) for side in ("debezium", "blocking", "initial"))
    record_result(
        "blocking snapshot",
        (f"blocking snapshot (signal `execute-snapshot`, `type: blocking`, source channel) of one 6-column table of {rows:,} "
         f"rows while streaming it (snapshot.mode=no_data) and a writer makes {rate:g} changes/s to it, vs sparkcdc's initial "
         f"snapshot of the same table; Debezium JSON with schemas (key, value, headers); medians of {repeat} runs each, "
         f"rotating order (per run, rows/s: {per_run}); machine CPU-seconds are every core's busy time over the same "
         f"window; load average {load_before} before, {load_after} after"),
        [
            *[(name, f"{snap.rate:,.0f} rows/s", f"{snap.seconds:.1f} s; {snap.per_cpu_second:,.0f} rows per machine CPU-second "
               f"({snap.cpu_seconds:.1f} CPU-s); {notes}") for name, snap, notes in lines],
            ("ratio blocking sparkcdc / Debezium blocking", f"{vs_debezium:.2f}",
             f"{faster}; {cpu_vs_debezium:.2f} per machine CPU-second"),
            ("ratio blocking sparkcdc / initial sparkcdc", f"{vs_initial:.2f}", f"{cpu_vs_initial:.2f} per machine CPU-second"),
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", "--runs", type=int, default=3, help="snapshots of each kind, the order rotating")
    parser.add_argument("--writer-rate", type=float, default=300, help="the concurrent writer's changes per second")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    args = parser.parse_args()
    rows, rate = args.rows, args.writer_rate

    from tests.support.debezium_jvm import start_debezium_jvm

    load_before = load_average()
    print(f"load average before: {load_before}")
    start_debezium_jvm()
    runs: dict[str, list[Snapshot]] = {"debezium": [], "blocking": [], "initial": []}
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-blocking-") as tmp):
        conn.execute(TABLE_DDL)
        conn.execute(SIGNAL_TABLE_DDL)
        conn.execute(SIGNAL_TABLE_DDL.replace(SIGNAL_TABLE, SPARKCDC_SIGNAL_TABLE))
        began = time.perf_counter()
        fill(conn, rows)
        conn.execute(f"CREATE PUBLICATION {DEBEZIUM_PUBLICATION} FOR TABLE bench, {SIGNAL_TABLE}")
        print(f"table: {rows:,} rows in {time.perf_counter() - began:.1f} s")
        for run in range(args.repeat):
            # Rotate the order: busy processes on few cores do not always get them evenly.
            order = ("debezium", "blocking", "initial")
            for side in order[run % 3:] + order[:run % 3]:
                if side == "debezium":
                    snap = blocking_debezium(cluster, conn, run, rows, rate)
                    label = "Debezium blocking"
                elif side == "blocking":
                    snap = blocking_sparkcdc(cluster, conn, Path(tmp), run, rows, rate)
                    label = "sparkcdc blocking"
                else:
                    snap = initial_sparkcdc(cluster, conn, Path(tmp), run, rows)
                    label = "sparkcdc initial"
                runs[side].append(snap)
                print(f"  run {run}: {label:<17} {snap.rate:>9,.0f} rows/s ({snap.seconds:.1f} s, {snap.per_cpu_second:,.0f} "
                      f"rows per machine CPU-second); {snap.detail}; {snap.total_seconds:.1f} s in all", flush=True)
    load_after = load_average()
    print(f"load average after: {load_after}")
    report(rows, runs, rate=rate, repeat=args.repeat, load_before=load_before, load_after=load_after, record=args.record)
    print(machine_summary())


if __name__ == "__main__":
    exit_after(main)
